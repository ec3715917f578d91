#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bpf-cpu: on-CPU time per watched leaf matches the leaf's own cpu.stat usage within 3%,
# for two watched leaves at once, while a burner in an unwatched leaf competes for the CPUs.
. "$(dirname "$0")/lib.sh"

make_leaf A
make_leaf B # not watched
make_leaf C

# probe-dump moves the sh into A; it starts one burner that moves itself into C and one into B
"$PROBE_DUMP" "$A" "$C" -- sh -c "
	sh -c 'echo 0 >$C/cgroup.procs && exec $BURN 1 2' &
	sh -c 'echo 0 >$B/cgroup.procs && exec $BURN 1 3' &
	$BURN 1 3
	wait" >"$WORK/out" 2>"$WORK/err" || { cat "$WORK/err"; fail "probe-dump failed"; }
cat "$WORK/err"

a_stat=$(($(usage_usec "$A") * 1000))
b_stat=$(($(usage_usec "$B") * 1000))
c_stat=$(($(usage_usec "$C") * 1000))
a_bpf=$(field "$WORK/out" "$A" oncpu_ns)
c_bpf=$(field "$WORK/out" "$C" oncpu_ns)
echo "A (watched):   cpu.stat $a_stat ns, BPF $a_bpf ns ($(pct "$a_bpf" "$a_stat"))"
echo "C (watched):   cpu.stat $c_stat ns, BPF $c_bpf ns ($(pct "$c_bpf" "$c_stat"))"
echo "B (unwatched): cpu.stat $b_stat ns"

# the machines are shared: only require enough run time for many scheduler slices
[ "$a_stat" -gt 100000000 ] || fail "the burner in A ran only $a_stat ns"
[ "$b_stat" -gt 100000000 ] || fail "the burner in B ran only $b_stat ns"
[ "$c_stat" -gt 100000000 ] || fail "the burner in C ran only $c_stat ns"
within "$a_bpf" "$a_stat" 3 || fail "A: BPF on-CPU $a_bpf ns is not within 3% of cpu.stat $a_stat ns"
within "$c_bpf" "$c_stat" 3 || fail "C: BPF on-CPU $c_bpf ns is not within 3% of cpu.stat $c_stat ns"
pass "on-CPU time within 3% of cpu.stat in both watched leaves; B's $b_stat ns counted in neither"
