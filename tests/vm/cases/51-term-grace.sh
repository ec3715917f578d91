# SPDX-License-Identifier: Apache-2.0
# 51-term-grace: after TERM sparkshim waits for every process of the executor's cgroup up
# to the grace period, then kills the cgroup: a child ignoring TERM is killed (137) after
# --grace; a background process that finishes inside the grace is waited for.
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

wait_ready() {
	for _ in $(seq 100); do
		grep -qx ready "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "the executor never got ready"
}

# an executor ignoring TERM
rm -f sig.txt
"$SPARKSHIM" run --name ignore --grace 2 --memory 128m -- "$VMHELPERS/sigrecord" "$PWD/sig.txt" ignore-term &
shim=$!
wait_ready sig.txt
t0=$(uptime_us)
kill -s TERM "$shim"
run_rc rc wait "$shim"
t1=$(uptime_us)
echo "exit $rc after $(((t1 - t0) / 1000)) ms"
[ "$rc" = 137 ] || fail "an executor ignoring TERM gave $rc, expected 137"
[ $((t1 - t0)) -ge 1900000 ] || fail "killed before the 2 s grace period"
[ ! -e "$CG/sparkshim/ignore" ] || fail "cgroup left behind"
pass "TERM ignored: killed after the grace period, exit 137"

# the executor exits on TERM but leaves a process that needs 1.5 s more: 1.5 s from the TERM
# (it starts its sleep once sigrecord has written TERM), not from its start, which a loaded
# machine may put most of the way to the TERM already (a run took 720 ms from the TERM)
rm -f sig.txt
"$SPARKSHIM" run --name linger --grace 10 --memory 128m -- sh -c \
	"(trap '' TERM; until grep -qx TERM \"$PWD/sig.txt\" 2>/dev/null; do sleep 0.05; done; sleep 1.5) &
	exec \"$VMHELPERS/sigrecord\" \"$PWD/sig.txt\"" &
shim=$!
wait_ready sig.txt
t0=$(uptime_us)
kill -s TERM "$shim"
run_rc rc wait "$shim"
t1=$(uptime_us)
echo "exit $rc after $(((t1 - t0) / 1000)) ms"
[ "$rc" = 0 ] || fail "gave $rc, expected the executor's 0"
[ $((t1 - t0)) -ge 1000000 ] || fail "did not wait for the lingering process"
[ $((t1 - t0)) -lt 9000000 ] || fail "waited for the whole grace period"
pass "waited for the executor's other process within the grace period"

# ... and one that would need longer than the grace is killed at its end
rm -f sig.txt
"$SPARKSHIM" run --name linger2 --grace 2 --memory 128m -- sh -c \
	"sleep 60 & exec \"$VMHELPERS/sigrecord\" \"$PWD/sig.txt\"" &
shim=$!
wait_ready sig.txt
kill -s TERM "$shim"
run_rc rc wait "$shim"
[ "$rc" = 0 ] || fail "gave $rc, expected the executor's 0"
# its own sleep, by its whole command line: the harness's watchdog sleeps too (guest-main.sh)
pgrep -fx 'sleep 60' >/dev/null && fail "the lingering sleep survived"
[ ! -e "$CG/sparkshim/linger2" ] || fail "cgroup left behind"
pass "a process outliving the grace period was killed with the cgroup"
