#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bpf-runq: twice as many CPU burners as CPUs (four on the 2-CPU machines) queue for them.
#  - run-queue wait > 0, and the histogram holds exactly the measured waits:
#      sum(runq_hist) == runq_count
#  - every queue start recorded (wakeups + preemptions) ended exactly once:
#      wakeups + runq_preemptions == runq_count + runq_discarded + runq_pending
#  - burners never sleep, so their lifetime is on-CPU time + run-queue wait: the measured
#    wait is within 10% of THREADS x SECONDS - on-CPU time (minus the launcher's share).
. "$(dirname "$0")/lib.sh"

seconds=3
ncpu=$(nproc)
threads=$((2 * ncpu)) # four on the 2-CPU CI machines
[ "$threads" -le 64 ] || threads=64

make_leaf A
"$PROBE_DUMP" "$A" -- "$BURN" "$threads" "$seconds" >"$WORK/out" 2>"$WORK/err" ||
	{ cat "$WORK/err"; fail "probe-dump failed"; }
cat "$WORK/err"

get() { field "$WORK/out" "$A" "$1"; }
wait_ns=$(get runq_wait_ns)
count=$(get runq_count)
hist=$(get runq_hist)
wakeups=$(get wakeups)
preempt=$(get runq_preemptions)
discarded=$(get runq_discarded)
pending=$(get runq_pending)
oncpu=$(get oncpu_ns)
p50=$(get runq_p50_us)
p99=$(get runq_p99_us)
echo "runq: wait $wait_ns ns over $count waits (p50 <= $p50 us, p99 <= $p99 us); histogram total $hist"
echo "queue starts: $wakeups wakeups + $preempt preemptions = $((wakeups + preempt));" \
	"ended: $count waits + $discarded discarded + $pending pending = $((count + discarded + pending))"

[ "$wait_ns" -gt 0 ] || fail "no run-queue wait measured"
[ "$count" -gt 0 ] || fail "no run-queue waits counted"
[ "$hist" = "$count" ] || fail "histogram total $hist != runq_count $count"
[ "$preempt" -gt 0 ] || fail "no preemption of the burners recorded"
[ $((wakeups + preempt)) = $((count + discarded + pending)) ] ||
	fail "queue starts $((wakeups + preempt)) != waits + discarded + pending $((count + discarded + pending))"

expected=$((threads * seconds * 1000000000 - oncpu))
echo "lifetime - on-CPU: $expected ns; measured wait $(pct "$wait_ns" "$expected")"
within "$wait_ns" "$expected" 10 || fail "wait $wait_ns ns is not within 10% of $expected ns"
pass "run-queue wait > 0, histogram total == waits == starts - discarded - pending"
