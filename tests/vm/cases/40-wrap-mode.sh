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

# a leaf sparkshim did not make is never removed, empty or busy: only this start fails
# (issue 11, defect 8); a leaf marked by a sparkshim that is gone is replaced
mkdir -p "$CG/sparkshim/stale"
run_rc rc "$SPARKSHIM" run --name stale --memory 128m -- true 2>err.txt
cat err.txt
[ "$rc" = 123 ] || fail "a foreign empty leaf gave $rc, expected 123"
grep -q "already exists and was not created by sparkshim" err.txt || fail "no clear message for a foreign leaf"
[ -d "$CG/sparkshim/stale" ] || fail "the foreign leaf was removed"
python3 -c 'import os, sys; os.setxattr(sys.argv[1], "trusted.sparkshim.owner", b"4194304 1")' "$CG/sparkshim/stale"
expect_rc 0 "$SPARKSHIM" run --name stale --memory 128m -- true
[ ! -d "$CG/sparkshim/stale" ] || fail "a dead sparkshim's leaf was not replaced"
sleep 30 &
busy=$!
mkdir "$CG/sparkshim/busy"
echo "$busy" >"$CG/sparkshim/busy/cgroup.procs"
run_rc rc "$SPARKSHIM" run --name busy --memory 128m -- true 2>err.txt
kill -0 "$busy" || fail "the busy leaf's process was killed"
kill "$busy"
wait "$busy" 2>/dev/null || true
cat err.txt
[ "$rc" = 123 ] || fail "a busy leaf gave $rc, expected 123"
grep -q "already exists and was not created by sparkshim" err.txt || fail "no clear message for a busy leaf"
rmdir "$CG/sparkshim/busy"
pass "a foreign leaf (empty or busy) refused with 123 and kept; a dead sparkshim's leaf replaced"
