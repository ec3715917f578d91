# SPDX-License-Identifier: Apache-2.0
# 41-init-mode: sparkshim as PID 1 of a container with its own pid, mount and cgroup
# namespaces: it moves itself to /init, enables the controllers in the namespace root and
# starts the executor in /executor with the plan's values.
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

command -v unshare >/dev/null || { echo "unshare (util-linux) is missing"; exit 77; }
echo "+cpu +memory +pids" >"$CG/cgroup.subtree_control"
mkdir "$CG/pod"
# The container: a new pid namespace whose PID 1 moves itself (only) into the pod cgroup,
# then enters new cgroup and mount namespaces rooted there, mounts its own cgroup2 and
# execs sparkshim, which stays PID 1 -- as a runtime sets up a container.
cat >container.sh <<EOS
echo 0 >$CG/pod/cgroup.procs
exec unshare --cgroup --mount sh -c 'umount -l /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup &&
	exec "$SPARKSHIM" run -v --memory 256m --millicores 500 -- sh -c "cat /proc/self/cgroup /proc/1/cgroup /sys/fs/cgroup/executor/memory.max /sys/fs/cgroup/executor/cpu.max"'
EOS
unshare --pid --fork --mount-proc sh container.sh >out.txt 2>err.txt ||
	{ cat err.txt out.txt; fail "init mode run failed"; }
cat out.txt err.txt
grep -qx '0::/executor' out.txt || fail "executor not in /executor of the namespace"
grep -qx '0::/init' out.txt || fail "PID 1 not moved to /init"
grep -qx "$(((256 + 384) * 1048576))" out.txt || fail "memory.max not written"
grep -qx '100000 100000' out.txt || fail "cpu.max not written"
grep -q 'cpu memory' "$CG/pod/cgroup.subtree_control" || fail "controllers not enabled in the namespace root"
[ ! -e "$CG/pod/executor" ] || fail "executor cgroup left behind"
pass "init mode: /init, /executor with the plan, cleaned up"

# No cgroup namespace of its own (a privileged pod on containerd or CRI-O, with and without
# hostPID): refused before any mkdir or write, exit 123 naming the cgroup namespace, the
# node's hierarchy unchanged (issue 22, defect 2). The case runs at 0::/vm-case of the
# guest's initial cgroup namespace, as a privileged pod's process is at 0::/kubepods/...
snapshot() { # the hierarchy's directories, the root's controllers and its processes
	find "$CG" -type d | sort
	cat "$CG/cgroup.subtree_control"
	sort -n "$CG/cgroup.procs"
}
write_policy closed.json '{ "version": 1, "fail_mode": "closed" }'
write_policy open.json '{ "version": 1, "fail_mode": "open" }'
for how in plain pid1; do
	for policy in closed.json open.json; do
		snapshot >before.txt
		if [ $how = pid1 ]; then
			run_rc rc unshare --pid --fork --mount-proc "$SPARKSHIM" run --policy $policy --memory 256m -- echo ran >out.txt 2>err.txt
		else
			run_rc rc "$SPARKSHIM" run --init --policy $policy --memory 256m -- echo ran >out.txt 2>err.txt
		fi
		snapshot >after.txt
		cat err.txt
		diff before.txt after.txt || fail "$how, $policy: the node's hierarchy changed"
		grep -q "init mode: this is the host's cgroup namespace" err.txt || fail "$how, $policy: no word on the cgroup namespace"
		if [ $policy = closed.json ]; then
			[ "$rc" = 123 ] || fail "$how, $policy: exit $rc, expected 123"
			[ "$(wc -l <err.txt)" = 1 ] || fail "$how, $policy: expected one line on stderr"
			[ ! -s out.txt ] || fail "$how, $policy: the executor ran"
		else
			[ "$rc" = 0 ] || fail "$how, $policy: exit $rc, expected 0 (run unconstrained)"
			grep -qx ran out.txt || fail "$how, $policy: the executor did not run"
		fi
	done
done
pass "init mode without a cgroup namespace of its own: refused before any write, the hierarchy unchanged"
