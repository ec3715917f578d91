#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent's pressure path on real Spark: SortJob (../SortJob.java, a global sort on local[2] whose two
# sorters hold a few hundred MB) with the executor's memory on the heap or off it
# (spark.memory.offHeap.enabled), run
#   1. without the agent: Spark spills nothing; the job reports its anonymous memory
#      (RssAnon) before the sort stage ("preSort") and at its peak;
#   2. with the agent, threshold = preSort + 32 MiB, a value the sort stage takes the
#      process past early (the plain run's peak must be 128 MiB or more above preSort),
#      allow-bytes=16m: the source is /proc/self/status (the host has no cgroup v2 memory
#      controller); the agent sees the threshold crossed and makes the sorters spill
#      (Spark's task metrics show it), counts the spills as pressure spills and reports the
#      reaction latency (crossing -> end of the first spill). The threshold sits low in the
#      sort's growth because the agent decides when a sorter asks for a page (32 MiB here),
#      and on the heap RssAnon follows the collector's heap growth, which can come late:
#      crossed late, there may be no page request left to spill at;
# and both runs return the same rows in the same order (order-sensitive checksum).
# Nothing here asserts a time: the latencies are printed for people.
# Usage: spark-pressure.sh AGENT JDK_HOME SOURCE_DIR SPARK_JARS_SCRIPT LINE heap|offheap
. "$(dirname "$0")/../common.sh"
SRC=$3
SPARK_JARS=$4
LINE=$5
MODE=$6
ROWS=${SPARKSHIM_PRESSURE_ROWS:-3000000}
ALLOW=16m

conf=()
case "$MODE" in
  heap) ;;
  offheap) conf=(spark.memory.offHeap.enabled=true spark.memory.offHeap.size=1g) ;;
  *)
    echo "FAIL: mode '$MODE'; allowed: heap, offheap"
    exit 1
    ;;
esac

spark_setup "$SPARK_JARS" "$LINE" "$SRC/../SortJob.java"
echo "Spark $(basename "$JARS") from $JARS, memory $MODE, $ROWS rows"

# run NAME [JVM options...]: prints the job's line
run() {
  local name=$1
  shift
  if ! "$JAVA" -Xmx2g "${OPENS[@]}" "$@" -Djava.io.tmpdir="$WORK" \
    -cp "$WORK/classes:$JARS/*" SortJob "$ROWS" "${conf[@]}" >"$WORK/$name.out" 2>"$WORK/$name.err"; then
    echo "FAIL: $name: the job failed:" >&2
    grep -v '^\s*at ' "$WORK/$name.err" | tail -n 20 >&2
    return 1
  fi
  grep '^sortjob ' "$WORK/$name.out"
}

mb() { echo $(($1 >> 20)); }

base=$(run base) || exit 1
echo "without agent: $base"
pre=$(field "$base" preSortAnon)
peak=$(field "$base" peakAnon)
if [ "$((peak - pre))" -lt $((128 << 20)) ]; then
  fail "without the agent the sort stage grew the anon memory by $(mb $((peak - pre))) MiB only ($(mb "$pre") -> $(mb "$peak") MiB); the threshold needs room"
  finish
fi
threshold=$((pre + (32 << 20)))
echo "anon without agent: $(mb "$(field "$base" baseAnon)") MiB at start, $(mb "$pre") MiB before the sort, peak $(mb "$peak") MiB -> threshold $(mb "$threshold") MiB"

pressure=$(run pressure "-agentpath:$AGENT=threshold=$threshold,allow-bytes=$ALLOW,cooldown-ms=100,stats=$WORK/pressure.jsonl,log=info") || exit 1
echo "with agent:    $pressure"

for r in base pressure; do
  line=${!r}
  [ "$(field "$line" rows)" = "$ROWS" ] || fail "$r: rows $(field "$line" rows), want $ROWS"
  [ "$(field "$line" ordered)" = true ] || fail "$r: result not in order"
done
[ "$(field "$pressure" checksum)" = "$(field "$base" checksum)" ] ||
  fail "checksum $(field "$pressure" checksum) with the agent differs from $(field "$base" checksum) without"
[ "$(field "$base" memoryBytesSpilled)" = 0 ] && [ "$(field "$base" diskBytesSpilled)" = 0 ] ||
  fail "without the agent Spark spilled: $base"
[ "$(field "$pressure" memoryBytesSpilled)" -gt 0 ] && [ "$(field "$pressure" diskBytesSpilled)" -gt 0 ] ||
  fail "with the agent under pressure Spark's task metrics show no spill: $pressure"
grep -q '^sparkshim-agent: info: hook TaskMemoryManager.acquireExecutionMemory: on$' "$WORK/pressure.err" ||
  fail "hook not on: $(grep sparkshim-agent "$WORK/pressure.err")"
if ! python3 - "$WORK/pressure.jsonl" "$threshold" <<'PY'; then
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
threshold = int(sys.argv[2])
final = [r for r in records if r["record"] == "agent"][0]["final"]
pressure = [r for r in records if r["record"] == "pressure"][0]
ops = {r["operator"]: r for r in records if r["record"] == "operator"}
sorter = ops.get("UnsafeExternalSorter")
assert final, "the stats are not the final snapshot"
assert pressure["source"] == "proc" and pressure["path"] == "/proc/self/status", pressure
assert pressure["threshold_bytes"] == threshold, pressure
assert pressure["crossings"] >= 1 and pressure["peak_anon_bytes"] >= threshold, pressure
assert pressure["read_errors"] == 0, pressure
assert sorter, f"no UnsafeExternalSorter in {ops}"
pressure_spills = sum(op["forced_by"]["pressure"] for op in ops.values())
assert pressure_spills > 0 and pressure_spills == sum(op["forced_spills"] for op in ops.values()), ops
assert all(op["failed_spills"] == 0 for op in ops.values()), ops
assert sorter["released_bytes"] > 0, sorter
reactions = sum(op["reactions"] for op in ops.values())
assert reactions >= 1 and all(op["reaction_ns_max"] > 0 for op in ops.values() if op["reactions"]), ops
total = sum(op["reaction_ns_total"] for op in ops.values())
worst = max(op["reaction_ns_max"] for op in ops.values())
decision = sum(op["decision_ns_total"] for op in ops.values())
assert 0 < decision <= total, ops
hooks = {r["hook"]: r["state"] for r in records if r["record"] == "hook"}
assert hooks["UnsafeExternalSorter/ShuffleExternalSorter.insertRecord"] == "on", hooks
print(f"agent stats: source {pressure['source']}, {pressure['crossings']} crossing(s) of "
      f"{threshold >> 20} MiB, peak anon {pressure['peak_anon_bytes'] >> 20} MiB; "
      f"{pressure_spills} pressure spill(s), released {sum(op['released_bytes'] for op in ops.values()) >> 20} MiB; "
      f"{reactions} reaction(s): mean {total / reactions / 1e6:.0f} ms, max {worst / 1e6:.0f} ms "
      f"(threshold crossing -> end of the first spill), of which {decision / reactions / 1e6:.0f} ms "
      f"to its start")
PY
  fail "agent stats: $(cat "$WORK/pressure.jsonl")"
fi
echo "spilled with the agent: memoryBytesSpilled=$(field "$pressure" memoryBytesSpilled) diskBytesSpilled=$(field "$pressure" diskBytesSpilled); peak anon $(mb "$peak") MiB without, $(mb "$(field "$pressure" peakAnon)") MiB with"
finish
