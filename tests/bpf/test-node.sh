#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bpf-node: the node's probe set (bpf/node.c, docs/probes.md "One set per node"). Ten shims
# (probe-dump --node, what `sparkshim run` does) start at once and race to load the set:
# eight with a CPU burner each (0.3 s of CPU, whatever the load; they burn once the killed
# one is gone, so that they all leave after it), one SIGKILLed mid-run, one
# that stays. One set is loaded (the same program ids for all); each of the eight's on-CPU
# time matches its leaf's cpu.stat within the bounds of bpf-cpu; the killed shim's entry is
# removed as the others leave, and a shim killed while nobody leaves has its entry removed
# by the next start; the last one out unpins the set. The pin root is the test's own, below
# the bpf filesystem (mounted on /sys/fs/bpf when it is not, as sparkshim does).
. "$(dirname "$0")/lib.sh"

ROOT=/sys/fs/bpf/sparkshim-test-$$
remove_root() {
	rm -rf "$ROOT" 2>/dev/null || true
	cleanup
}
trap remove_root EXIT

N=8
i=1
while [ "$i" -le "$N" ]; do
	make_leaf "L$i"
	i=$((i + 1))
done
make_leaf K    # a shim SIGKILLed mid-run, while the eight run
make_leaf K2   # another, SIGKILLed while nobody leaves
make_leaf KEEP # a shim that stays to the end
make_leaf NEXT

# wait_ready FILE WHAT
wait_ready() {
	for _ in $(seq 300); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	fail "$2 never attached"
}

# registered ROOT_LIST LEAF ALIVE(true|false): the list has LEAF's entry with that liveness
registered() {
	grep -q "\"cgroup_id\":$(stat -c %i "$2"),.*\"owner_alive\":$3" "$1"
}

# all at once: the eight, the one to be killed and the keeper race to load the set
"$PROBE_DUMP" --node "$ROOT" --ready "$WORK/ready-keep" "$KEEP" --seconds 120 >"$WORK/out-keep" 2>"$WORK/err-keep" &
keep_pid=$!
"$PROBE_DUMP" --node "$ROOT" --ready "$WORK/ready-k" "$K" -- "$BURN" 1 60 >"$WORK/out-k" 2>"$WORK/err-k" &
kpid=$!
i=1
while [ "$i" -le "$N" ]; do
	eval "leaf=\$L$i"
	# each burns once the one to be killed is gone, so that all of them leave after it
	"$PROBE_DUMP" --node "$ROOT" --ready "$WORK/ready-$i" "$leaf" -- \
		sh -c 'while [ ! -e "$1" ]; do sleep 0.05; done; exec "$2" 1 0.3c' sh "$WORK/go" "$BURN" \
		>"$WORK/out-$i" 2>"$WORK/err-$i" &
	eval "pid$i=\$!"
	i=$((i + 1))
done

wait_ready "$WORK/ready-k" "the shim to be killed"
wait_ready "$WORK/ready-keep" "the keeper"
i=1
while [ "$i" -le "$N" ]; do
	wait_ready "$WORK/ready-$i" "shim $i"
	i=$((i + 1))
done
"$PROBE_DUMP" --node-list "$ROOT" >"$WORK/list-before"
registered "$WORK/list-before" "$K" true || { cat "$WORK/list-before"; fail "K is not registered"; }
kill -9 "$kpid"
wait "$kpid" 2>/dev/null || true
echo 1 >"$K/cgroup.kill" # its burner, orphaned
: >"$WORK/go"

i=1
while [ "$i" -le "$N" ]; do
	eval "wait \$pid$i" || { cat "$WORK/err-$i"; fail "shim $i failed"; }
	i=$((i + 1))
done

ids=$(python3 - "$WORK" "$N" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
sets = set()
for name in [str(i) for i in range(1, n + 1)] + ["keep"]:
    o = json.load(open(f"{work}/ready-{name}"))
    if not o["programs"]:
        sys.exit(f"shim {name} attached no program")
    sets.add(tuple(sorted(p["id"] for p in o["programs"])))
print(len(sets))
PY
) || fail "cannot read the ready files"
[ "$ids" = 1 ] || fail "the shims started at once ran $ids different sets of programs, not one"
pass "$((N + 2)) shims started at once share one set of programs"

i=1
while [ "$i" -le "$N" ]; do
	eval "leaf=\$L$i"
	stat_ns=$(($(usage_usec "$leaf") * 1000))
	bpf_ns=$(field "$WORK/out-$i" "$leaf" oncpu_ns)
	node=$(field "$WORK/out-$i" "$leaf" node)
	[ "$node" = True ] || fail "shim $i did not use the node's set (node: $node)"
	echo "shim $i: cpu.stat $stat_ns ns, BPF $bpf_ns ns ($(pct "$bpf_ns" "$stat_ns"))"
	[ "$stat_ns" -gt 100000000 ] || fail "the burner of shim $i ran only $stat_ns ns"
	within "$bpf_ns" "$stat_ns" 3 || fail "shim $i: BPF on-CPU $bpf_ns ns is not within 3% of cpu.stat $stat_ns ns"
	i=$((i + 1))
done
pass "each shim's on-CPU time within 3% of its leaf's cpu.stat, one shim killed mid-run"

"$PROBE_DUMP" --node-list "$ROOT" >"$WORK/list-after"
registered "$WORK/list-after" "$K" true && fail "the killed shim's entry is still alive"
registered "$WORK/list-after" "$K" false && { cat "$WORK/list-after"; fail "the killed shim's entry outlived the eight leaving"; }
[ "$(wc -l <"$WORK/list-after")" = 1 ] && registered "$WORK/list-after" "$KEEP" true ||
	{ cat "$WORK/list-after"; fail "not the keeper's entry alone after the eight left"; }
pass "the killed shim's entry was removed as the others left"

# a shim killed while nobody leaves: its entry stays, dead, until the next start
"$PROBE_DUMP" --node "$ROOT" --ready "$WORK/ready-k2" "$K2" -- "$BURN" 1 60 >"$WORK/out-k2" 2>"$WORK/err-k2" &
k2pid=$!
wait_ready "$WORK/ready-k2" "the second shim to be killed"
kill -9 "$k2pid"
wait "$k2pid" 2>/dev/null || true
echo 1 >"$K2/cgroup.kill"
"$PROBE_DUMP" --node-list "$ROOT" >"$WORK/list-killed"
registered "$WORK/list-killed" "$K2" false || { cat "$WORK/list-killed"; fail "K2's entry is not there, dead"; }
"$PROBE_DUMP" --node "$ROOT" --ready "$WORK/ready-next" "$NEXT" --seconds 120 >"$WORK/out-next" 2>"$WORK/err-next" &
npid=$!
wait_ready "$WORK/ready-next" "the next shim"
"$PROBE_DUMP" --node-list "$ROOT" >"$WORK/list-next"
registered "$WORK/list-next" "$K2" false && { cat "$WORK/list-next"; fail "the killed shim's entry outlived the next start"; }
registered "$WORK/list-next" "$NEXT" true || { cat "$WORK/list-next"; fail "the next shim is not registered"; }
pass "the killed shim's entry is gone after the next start"

# a slot given again starts from zero: the same leaf twice (its cgroup id finds the same free
# slot), the second's figures against the growth of the leaf's cpu.stat alone
make_leaf AGAIN
"$PROBE_DUMP" --node "$ROOT" "$AGAIN" -- "$BURN" 1 0.2c >"$WORK/out-again-1" 2>"$WORK/err-again-1" ||
	{ cat "$WORK/err-again-1"; fail "the first run in AGAIN failed"; }
before=$(($(usage_usec "$AGAIN") * 1000))
"$PROBE_DUMP" --node "$ROOT" "$AGAIN" -- "$BURN" 1 0.2c >"$WORK/out-again-2" 2>"$WORK/err-again-2" ||
	{ cat "$WORK/err-again-2"; fail "the second run in AGAIN failed"; }
grown=$(($(usage_usec "$AGAIN") * 1000 - before))
bpf_ns=$(field "$WORK/out-again-2" "$AGAIN" oncpu_ns)
echo "AGAIN, second registration: cpu.stat grew $grown ns, BPF $bpf_ns ns ($(pct "$bpf_ns" "$grown"))"
within "$bpf_ns" "$grown" 3 || fail "a slot given again kept its former owner's counts"
pass "a slot given again counts from zero"

kill -TERM "$npid" "$keep_pid"
wait "$npid" || { cat "$WORK/err-next"; fail "the next shim failed"; }
wait "$keep_pid" || { cat "$WORK/err-keep"; fail "the keeper failed"; }
[ -z "$(ls -A "$ROOT")" ] || { ls -lR "$ROOT"; fail "the last one out left the set pinned"; }
pass "the last one out unpinned the set"
