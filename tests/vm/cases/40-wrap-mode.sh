# SPDX-License-Identifier: Apache-2.0
# 40-wrap-mode: the executor starts directly in <parent>/<name> (named from --app-id and
# --executor-id of a real executor command line), the leaf is removed on exit, the parent
# stays; a nested --cgroup-parent is created with controllers enabled on the way.
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

# A YARN-style launch; the "java" is sh reading its own cgroup.
"$SPARKSHIM" run -- sh -c 'cat /proc/self/cgroup; cat "/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)/memory.max"' \
	sh -server -Xmx512m -Dspark.executor.millicores=750 \
	org.apache.spark.executor.YarnCoarseGrainedExecutorBackend \
	--driver-url spark://CoarseGrainedScheduler@driver:35231 --executor-id 7 \
	--hostname worker-1 --cores 2 --app-id application_1700000000000_0042 >out.txt
cat out.txt
grep -qx '0::/sparkshim/application_1700000000000_0042-7' out.txt || fail "not started in sparkshim/<app>-<executor>"
# 512 MiB heap + 384 MiB minimum overhead
grep -qx "$((896 * 1048576))" out.txt || fail "memory.max is not 896 MiB"
[ -d "$CG/sparkshim" ] || fail "parent removed"
[ -z "$(children_of "$CG/sparkshim")" ] || fail "leaf left behind: $(children_of "$CG/sparkshim")"
pass "started in sparkshim/application_1700000000000_0042-7, cleaned up"

"$SPARKSHIM" run --cgroup-parent yarn/nm-1 --name exec-1 --memory 128m -- cat /proc/self/cgroup >out.txt
grep -qx '0::/yarn/nm-1/exec-1' out.txt || fail "nested parent not used: $(cat out.txt)"
grep -qw memory "$CG/yarn/nm-1/cgroup.subtree_control" || fail "memory not enabled in yarn/nm-1"
[ -z "$(children_of "$CG/yarn/nm-1")" ] || fail "nested leaf left behind"
pass "nested parent yarn/nm-1 created with controllers enabled"

# a leaf sparkshim did not make is never removed, empty or busy; a leaf a live sparkshim
# uses is never shared: the newcomer runs, enforced, in a fresh leaf of its own, whatever
# the fail mode (issue 22, defect 1: a taken name neither refuses an executor nor runs it
# unconstrained); a leaf marked by a sparkshim that is gone is replaced
write_policy open.json '{ "version": 1, "fail_mode": "open" }'
write_policy closed.json '{ "version": 1, "fail_mode": "closed" }'
fresh_run() { # WHAT POLICY NAME: the newcomer runs in NAME-xxxxxxxx with the plan's memory.max
	run_rc rc "$SPARKSHIM" run --policy "$2" --name "$3" --memory 128m -- \
		sh -c 'cat /proc/self/cgroup; cat "/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)/memory.max"' \
		>out.txt 2>err.txt
	cat err.txt out.txt
	[ "$rc" = 0 ] || fail "$1 ($2): exit $rc, expected 0"
	grep -q "^0::/sparkshim/$3-[0-9a-f]\{8\}\$" out.txt || fail "$1 ($2): not run in a fresh leaf"
	grep -qx "$(((128 + 384) * 1048576))" out.txt || fail "$1 ($2): memory.max not enforced"
	! grep -q 'not enforcing' err.txt || fail "$1 ($2): run unconstrained"
	grep -q "this executor's cgroup is .*/$3-[0-9a-f]\{8\} instead" err.txt || fail "$1 ($2): no word on the fresh leaf"
}
mkdir -p "$CG/sparkshim/stale"
fresh_run "a foreign empty leaf" closed.json stale
grep -q "already exists and was not created by sparkshim" err.txt || fail "no clear message for a foreign leaf"
[ -d "$CG/sparkshim/stale" ] || fail "the foreign leaf was removed"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.sparkshim.owner", b"4194304 1")' "$CG/sparkshim/stale"
expect_rc 0 "$SPARKSHIM" run --name stale --memory 128m -- true
[ ! -d "$CG/sparkshim/stale" ] || fail "a dead sparkshim's leaf was not replaced"
sleep 30 &
busy=$!
mkdir "$CG/sparkshim/busy"
echo "$busy" >"$CG/sparkshim/busy/cgroup.procs"
fresh_run "a foreign busy leaf" open.json busy
kill -0 "$busy" || fail "the busy leaf's process was killed"
kill "$busy"
wait "$busy" 2>/dev/null || true
grep -q "already exists and was not created by sparkshim" err.txt || fail "no clear message for a busy leaf"
rmdir "$CG/sparkshim/busy"
# another executor's default name (<app id>-<executor id>), taken by a second shim
"$SPARKSHIM" run --memory 256m -- sh -c "sleep 20" sh org.apache.spark.executor.YarnCoarseGrainedExecutorBackend \
	--executor-id 3 --app-id application_1700000000000_0043 >/dev/null 2>&1 &
first=$!
i=0
until [ -n "$(cat "$CG/sparkshim/application_1700000000000_0043-3/cgroup.procs" 2>/dev/null)" ]; do
	i=$((i + 1))
	[ $i -lt 200 ] || fail "the first executor's leaf never filled"
	sleep 0.1
done
for policy in closed.json open.json; do
	fresh_run "a live shim's leaf" $policy application_1700000000000_0043-3
	grep -q "is in use by sparkshim pid $first" err.txt || fail "no word on the live leaf"
done
[ "$(cat "$CG/sparkshim/application_1700000000000_0043-3/memory.max")" = "$(((256 + 384) * 1048576))" ] ||
	fail "the first executor's limits were changed"
kill -TERM $first
wait $first 2>/dev/null || true
pass "foreign (empty, busy) and live leaves kept; the newcomer enforced in a fresh leaf; a dead sparkshim's leaf replaced"
