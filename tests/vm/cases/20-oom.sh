# SPDX-License-Identifier: Apache-2.0
# 20-oom: a memory hog past memory.max is OOM-killed; sparkshim exits 137, logs the
# memory.events counters, and removes the cgroup.
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

# limit = 64 MiB heap + 32 MiB overhead = 96 MiB
run_rc rc "$SPARKSHIM" run --memory 64m --memory-overhead 32m --name oom -- "$VMHELPERS/memhog" 400 2>err.txt
cat err.txt
[ "$rc" = 137 ] || fail "exit status $rc, expected 137"
grep -q "OOM-killed" err.txt || fail "no OOM line on stderr"
grep -Eq "oom_kill [1-9]" err.txt || fail "memory.events oom_kill not reported"
grep -q "memory.max 100663296" err.txt || fail "the limit is not named"
[ ! -e "$CG/sparkshim/oom" ] || fail "cgroup sparkshim/oom left behind"
pass "OOM-killed: exit 137, memory.events logged, cgroup removed"

# below the limit the same hog completes
expect_rc 0 "$SPARKSHIM" run --memory 64m --memory-overhead 32m --name fits -- "$VMHELPERS/memhog" 48
pass "48 MiB fits under 96 MiB"
