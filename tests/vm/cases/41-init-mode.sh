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

# A process below its namespace's root, where `kubectl exec` lands in a pod whose PID 1 is
# sparkshim (0::/init): `check --init` finds the container fit and says where this process
# is; `run --init` refuses before any mkdir or write (exit 123, one line), and nothing is
# made in the namespace.
mkdir "$CG/pod2"
cat >below.sh <<EOS
echo 0 >$CG/pod2/cgroup.procs
exec unshare --cgroup --mount sh -c 'umount -l /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup &&
	mkdir /sys/fs/cgroup/exec && echo 0 >/sys/fs/cgroup/exec/cgroup.procs && cat /proc/self/cgroup &&
	{ "$SPARKSHIM" check --init >check.txt; echo "check-rc=\$?"; } &&
	{ "$SPARKSHIM" run --init --policy $PWD/closed.json --memory 256m -- echo ran >run-out.txt 2>run-err.txt; echo "run-rc=\$?"; } &&
	find /sys/fs/cgroup -mindepth 1 -type d'
EOS
unshare --pid --fork --mount-proc sh below.sh >out.txt 2>err.txt || { cat err.txt out.txt; fail "below the root: the container failed"; }
cat out.txt err.txt check.txt run-err.txt
grep -qx '0::/exec' out.txt || fail "below the root: not at 0::/exec"
grep -qx 'check-rc=0' out.txt || fail "below the root: check --init did not pass"
grep -q '^init: cgroup namespace *ok .*this process is at 0::/exec, not at its root' check.txt ||
	fail "below the root: check --init's namespace row"
grep -qx 'run-rc=123' out.txt || fail "below the root: run --init did not exit 123"
[ "$(wc -l <run-err.txt)" = 1 ] && grep -q 'init mode: .*not at its root' run-err.txt ||
	fail "below the root: run --init's one line"
[ ! -s run-out.txt ] || fail "below the root: the executor ran"
[ "$(grep -c '^/sys/fs/cgroup/' out.txt)" = 1 ] || fail "below the root: cgroups made: $(grep '^/sys/fs/cgroup/' out.txt)"
rmdir "$CG/pod2/exec" "$CG/pod2"
pass "init mode below the namespace's root: check --init fit, run --init refused before any write"
