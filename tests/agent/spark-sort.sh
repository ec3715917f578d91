#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent on real Spark: a sort of a permuted range on local[2], run
#   1. without the agent                     -> Spark spills nothing;
#   2. with the agent, force-bytes=8m         -> Spark's task metrics show spills, the agent's
#                                                stats name UnsafeExternalSorter;
#   3. without the agent, Spark's own numElementsForceSpillThreshold (positive control);
#   4. with the agent's records= option       -> Spark's own threshold, set by the agent;
#   5. with the agent under pressure          -> threshold=1m (always crossed), allow-bytes=8m:
#                                                spills counted as pressure spills, with a
#                                                reaction latency;
#   6. with the agent and no pressure         -> threshold=64g (never reached), allow-bytes=8m:
#                                                nothing spilled, no pressure episode;
#   7. with the heap as the pressure source   -> a 600 MiB heap, heap-threshold=0.15: the heap
#                                                in use after a collection crosses 90 MiB
#                                                while the sorter fills its pages, which then
#                                                spill. The serial collector with fixed sizes
#                                                (-Xms = -Xmx, -Xmn32m) collects every 32 MiB
#                                                allocated, so readings fall within the sort
#                                                at any load; G1 sizes its heap and starts its
#                                                cycles from pause times, and on a loaded
#                                                machine made no collection there at all;
#   8. with force-bytes=8m,max-spills=2       -> each task is made to spill twice, and its
#                                                further spills are left to Spark (counted as
#                                                "capped");
# and every run returns the same rows in the same order (order-sensitive checksum).
# Usage: spark-sort.sh AGENT JDK_HOME SOURCE_DIR SPARK_JARS_SCRIPT LINE
. "$(dirname "$0")/common.sh"
SRC=$3
SPARK_JARS=$4
LINE=$5
ROWS=${SPARKSHIM_SORT_ROWS:-2000000}

spark_setup "$SPARK_JARS" "$LINE" "$SRC/SortJob.java"
echo "Spark $(basename "$JARS") from $JARS"

run() {
  local name=$1 jvm=() conf=() start end line
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do jvm+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  conf=("$@")
  start=$(date +%s.%N)
  if ! "$JAVA" -Xmx1g "${OPENS[@]}" "${jvm[@]}" -Djava.io.tmpdir="$WORK" \
    -cp "$WORK/classes:$JARS/*" SortJob "$ROWS" "${conf[@]}" >"$WORK/$name.out" 2>"$WORK/$name.err"; then
    echo "FAIL: $name: the job failed:" >&2
    grep -v '^\s*at ' "$WORK/$name.err" | tail -n 20 >&2
    return 1
  fi
  end=$(date +%s.%N)
  line=$(grep '^sortjob ' "$WORK/$name.out")
  awk -v line="$line" -v s="$start" -v e="$end" 'BEGIN { printf "%s wall=%.1f\n", line, e - s }'
}

base=$(run base) || exit 1
echo "without agent:   $base"
forced=$(run forced "-agentpath:$AGENT=force-bytes=8m,stats=$WORK/forced.jsonl,log=info") || exit 1
echo "force-bytes=8m:  $forced"
control=$(run control -- spark.shuffle.spill.numElementsForceSpillThreshold=200000) || exit 1
echo "Spark threshold: $control"
records=$(run records "-agentpath:$AGENT=records=200000") || exit 1
echo "records=200000:  $records"
pressure=$(run pressure "-agentpath:$AGENT=threshold=1m,allow-bytes=8m,cooldown-ms=0,stats=$WORK/pressure.jsonl") || exit 1
echo "pressure:        $pressure"
calm=$(run calm "-agentpath:$AGENT=threshold=64g,allow-bytes=8m,cooldown-ms=0,stats=$WORK/calm.jsonl") || exit 1
echo "no pressure:     $calm"
heap=$(run heap -XX:+UseSerialGC -Xms600m -Xmx600m -Xmn32m "-agentpath:$AGENT=heap-threshold=0.15,allow-bytes=8m,cooldown-ms=0,stats=$WORK/heap.jsonl") || exit 1
echo "heap pressure:   $heap"
capped=$(run capped "-agentpath:$AGENT=force-bytes=8m,max-spills=2,stats=$WORK/capped.jsonl") || exit 1
echo "max-spills=2:    $capped"

want_rows=$ROWS
for r in base forced control records pressure calm heap capped; do
  line=${!r}
  [ "$(field "$line" rows)" = "$want_rows" ] || fail "$r: rows $(field "$line" rows), want $want_rows"
  [ "$(field "$line" ordered)" = true ] || fail "$r: result not in order"
  [ "$(field "$line" checksum)" = "$(field "$base" checksum)" ] ||
    fail "$r: checksum $(field "$line" checksum) differs from the run without the agent ($(field "$base" checksum))"
done
[ "$(field "$base" memoryBytesSpilled)" = 0 ] && [ "$(field "$base" diskBytesSpilled)" = 0 ] ||
  fail "without the agent Spark spilled: $base"
[ "$(field "$calm" memoryBytesSpilled)" = 0 ] && [ "$(field "$calm" diskBytesSpilled)" = 0 ] ||
  fail "with the agent and no pressure Spark spilled: $calm"
python3 - "$WORK/calm.jsonl" <<'PY' || fail "no pressure: agent stats: $(cat "$WORK/calm.jsonl")"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
pressure = [r for r in records if r["record"] == "pressure"][0]
ops = [r for r in records if r["record"] == "operator"]
assert pressure["episodes"] == 0 and not pressure["under_pressure"], pressure
assert ops and all(op["forced_spills"] == 0 for op in ops), ops
print(f"no pressure: peak anon {pressure['peak_anon_bytes'] >> 20} MiB under a 64 GiB threshold, "
      f"{sum(op['calls'] for op in ops)} memory requests seen, 0 forced spills")
PY
for r in forced control records pressure heap capped; do
  line=${!r}
  [ "$(field "$line" memoryBytesSpilled)" -gt 0 ] && [ "$(field "$line" diskBytesSpilled)" -gt 0 ] ||
    fail "$r: Spark's task metrics show no spill: $line"
done
grep -q '^sparkshim-agent: info: hook TaskMemoryManager.acquireExecutionMemory: on$' "$WORK/forced.err" ||
  fail "forced: hook not on: $(grep sparkshim-agent "$WORK/forced.err")"
if ! python3 - "$WORK/forced.jsonl" <<'PY'; then
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
ops = {r["operator"]: r for r in records if r["record"] == "operator"}
hooks = {r["hook"]: r["state"] for r in records if r["record"] == "hook"}
sorter = ops.get("UnsafeExternalSorter")
assert sorter, f"no UnsafeExternalSorter in {ops}"
assert sorter["forced_spills"] > 0 and sorter["forced_by"]["force-bytes"] == sorter["forced_spills"], sorter
assert sorter["released_bytes"] > 0 and sorter["failed_spills"] == 0, sorter
assert hooks["TaskMemoryManager.acquireExecutionMemory"] == "on", hooks
assert hooks["UnsafeExternalSorter.spill"] == "on", hooks
print(f"agent stats: UnsafeExternalSorter forced_spills={sorter['forced_spills']} "
      f"released_bytes={sorter['released_bytes']} spill_ms_total={sorter['spill_ns_total'] / 1e6:.0f} "
      f"spill_ms_max={sorter['spill_ns_max'] / 1e6:.0f} calls={sorter['calls']}")
PY
  fail "forced: agent stats: $(cat "$WORK/forced.jsonl")"
fi
if ! python3 - "$WORK/pressure.jsonl" <<'PY'; then
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
sorter = {r["operator"]: r for r in records if r["record"] == "operator"}["UnsafeExternalSorter"]
pressure = [r for r in records if r["record"] == "pressure"][0]
assert pressure["crossings"] >= 1 and pressure["threshold_bytes"] == 1 << 20, pressure
assert sorter["forced_by"]["pressure"] > 0 and sorter["reactions"] >= 1, sorter
print(f"pressure stats: forced_spills={sorter['forced_by']['pressure']} "
      f"reaction_ms_max={sorter['reaction_ns_max'] / 1e6:.0f} "
      f"peak_anon_mb={pressure['peak_anon_bytes'] >> 20}")
PY
  fail "pressure: agent stats: $(cat "$WORK/pressure.jsonl")"
fi
if ! python3 - "$WORK/heap.jsonl" <<'PY'; then
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
sorter = {r["operator"]: r for r in records if r["record"] == "operator"}["UnsafeExternalSorter"]
pressure = [r for r in records if r["record"] == "pressure"][0]
heap = pressure["heap"]
assert heap and heap["crossings"] >= 1 and heap["peak_after_gc_bytes"] >= heap["threshold_bytes"], pressure
assert pressure["crossings"] == 0 and pressure["episodes"] >= 1, pressure
assert sorter["forced_by"]["pressure"] > 0 and sorter["reactions"] >= 1, sorter
print(f"heap stats: after-GC peak {heap['peak_after_gc_bytes'] >> 20} MiB of {heap['max_bytes'] >> 20} MiB "
      f"(threshold {heap['threshold_bytes'] >> 20} MiB), pressure spills {sorter['forced_by']['pressure']}, "
      f"reaction_ms_max={sorter['reaction_ns_max'] / 1e6:.0f}")
PY
  fail "heap: agent stats: $(cat "$WORK/heap.jsonl")"
fi
grep -q '^sparkshim-agent: warn: task [0-9]* has had max-spills=2 forced spills' "$WORK/capped.err" ||
  fail "max-spills=2: no warning: $(grep sparkshim-agent "$WORK/capped.err")"
if ! python3 - "$WORK/capped.jsonl" "$WORK/forced.jsonl" <<'PY'; then
import json, sys
def sorter(path):
    records = map(json.loads, open(path))
    return {r["operator"]: r for r in records if r["record"] == "operator"}["UnsafeExternalSorter"]
capped, forced = sorter(sys.argv[1]), sorter(sys.argv[2])
# the sort stage's two tasks (local[2], two shuffle partitions), two forced spills each
assert forced["forced_spills"] > 4, f"the uncapped run forced only {forced['forced_spills']}"
assert capped["forced_spills"] == 4 and capped["capped"] >= 1 and capped["failed_spills"] == 0, capped
print(f"max-spills=2: forced_spills={capped['forced_spills']} (uncapped {forced['forced_spills']}), "
      f"capped={capped['capped']}")
PY
  fail "max-spills=2: agent stats: $(cat "$WORK/capped.jsonl")"
fi
finish
