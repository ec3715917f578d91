#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent on real Spark, one job per kind of operator (OperatorJob.java: hash aggregation
# with whole-stage codegen on and off, object hash aggregation (collect_list), a repartition
# on the serialized shuffle path, RDD reduceByKey and groupByKey), on local[2]:
#   base      without the agent                     -> Spark spills nothing;
#   nomode    the agent loaded, no spill mode       -> nothing spills, and every hook is off
#                                                      (no class is edited);
#   forced    force-bytes=8m, in three JVMs         -> Spark's task metrics show spills and the
#             (FORCED_GROUPS: no two jobs of a JVM     agent's stats name that job's operator;
#             make the operator one of them is checked on: the stats are per JVM)
#   records   Spark's numElementsForceSpillThreshold (positive control, as the two below on
#             one line only: SPARKSHIM_OPERATOR_CONTROLS, default 4.0; it applies to the
#             sorters and Spillables, not to the hash aggregation map, nor to the object
#             aggregation's sorter, whose insertKVRecord does not check it: those jobs stay
#             at 0, which is asserted too);
#   fallback  Spark's spark.sql.TungstenAggregate.testFallbackStartsAt, the aggregation map's
#             own forced fallback (positive control for the aggregation jobs);
#   pool      spark.memory.fraction=0.02: Spark spills the object aggregation's sorter itself
#             when the pool runs short (positive control for agg-object);
#   fraction  allow-fraction=0.02 under pressure (threshold=1m: always crossed);
#   kv        allow-bytes=8m under pressure, the object aggregation alone: its sorter is made
#             to spill at a row it inserts (insertKVRecord), not only at its next page;
# and every run of a job returns the same rows (order-insensitive checksum, row count).
# Usage: spark-operators.sh AGENT JDK_HOME SOURCE_DIR SPARK_JARS_SCRIPT LINE
. "$(dirname "$0")/common.sh"
SRC=$3
SPARK_JARS=$4
LINE=$5
ROWS=${SPARKSHIM_OPERATOR_ROWS:-1500000}
JOBS=(agg-codegen agg-nocodegen agg-object repartition reduce-by-key group-by-key)
AGG_JOBS=(agg-codegen agg-nocodegen)
RECORD_JOBS=(repartition reduce-by-key group-by-key)
UNCOUNTED_JOBS=("${AGG_JOBS[@]}" agg-object) # numElementsForceSpillThreshold ignored
FRACTION_JOBS=(agg-nocodegen agg-object repartition group-by-key)
# the operator type the agent's stats must name for each job, and how it was made to spill
declare -A OPERATOR=(
  [agg-codegen]=UnsafeFixedWidthAggregationMap [agg-nocodegen]=UnsafeFixedWidthAggregationMap
  [agg-object]=UnsafeExternalSorter
  [repartition]=ShuffleExternalSorter [reduce-by-key]=ExternalSorter
  [group-by-key]=ExternalAppendOnlyMap)
# operators a job makes besides its own: the aggregation map keeps its rows in a
# BytesToBytesMap (with codegen, a FixedLengthRowBasedKeyValueBatch first) and its fallback
# sorts through an UnsafeExternalSorter; reduceByKey merges on the reduce side in an
# ExternalAppendOnlyMap. A forced run's stats name no other (checked below).
declare -A ALSO=(
  [agg-codegen]="UnsafeExternalSorter BytesToBytesMap FixedLengthRowBasedKeyValueBatch"
  [agg-nocodegen]="UnsafeExternalSorter BytesToBytesMap" [reduce-by-key]=ExternalAppendOnlyMap)
# the forced runs, one JVM per group (a JVM start is most of a run's time here)
FORCED_GROUPS=(agg-codegen,repartition,group-by-key agg-object,reduce-by-key agg-nocodegen)

spark_setup "$SPARK_JARS" "$LINE" "$SRC/OperatorJob.java"
echo "Spark $(basename "$JARS") from $JARS"

# run NAME JOBS [JVM options...] [-- Spark settings...]: the job's "opjob" lines in NAME.out
run() {
  local name=$1 jobs=$2 jvm=() conf=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do jvm+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  conf=("$@")
  if ! "$JAVA" -Xmx1g "${OPENS[@]}" "${jvm[@]}" -Djava.io.tmpdir="$WORK" \
    -cp "$WORK/classes:$JARS/*" OperatorJob "$ROWS" "$jobs" "${conf[@]}" \
    >"$WORK/$name.out" 2>"$WORK/$name.err"; then
    fail "$name: the job failed:"
    grep -v '^\s*at ' "$WORK/$name.err" | grep -v ' INFO ' | tail -n 20
    return 1
  fi
  sed "s/^opjob /$name: /" "$WORK/$name.out"
}

# the opjob line of JOB in run NAME
line_of() {
  grep "^opjob job=$2 " "$WORK/$1.out" || true
}

spilled() {
  local line=$1
  [ -n "$line" ] && [ "$(field "$line" memoryBytesSpilled)" -gt 0 ] &&
    [ "$(field "$line" diskBytesSpilled)" -gt 0 ]
}

not_spilled() {
  local line=$1
  [ -n "$line" ] && [ "$(field "$line" memoryBytesSpilled)" = 0 ] &&
    [ "$(field "$line" diskBytesSpilled)" = 0 ]
}

same_result() {
  local run=$1 job=$2 line base
  line=$(line_of "$run" "$job")
  base=$(line_of base "$job")
  if [ -z "$line" ] || [ "$(field "$line" rows)" != "$(field "$base" rows)" ] ||
    [ "$(field "$line" checksum)" != "$(field "$base" checksum)" ]; then
    fail "$run/$job: result differs from the run without the agent: '$line' vs '$base'"
  fi
}

all=$(IFS=,; echo "${JOBS[*]}")
run base "$all" || { finish; exit 1; }
for job in "${JOBS[@]}"; do
  line=$(line_of base "$job")
  [ "$(field "$line" rows)" -gt 0 ] 2>/dev/null || fail "base/$job: no result: '$line'"
  not_spilled "$line" && pass "base/$job: without the agent Spark spills nothing" ||
    fail "base/$job: without the agent Spark spilled: '$line'"
done

# the agent loaded without a spill mode changes nothing
if run nomode "$all" "-agentpath:$AGENT=stats=$WORK/nomode.jsonl,log=info"; then
  for job in "${JOBS[@]}"; do
    same_result nomode "$job"
    not_spilled "$(line_of nomode "$job")" ||
      fail "nomode/$job: the agent without a spill mode made Spark spill: $(line_of nomode "$job")"
  done
  if python3 - "$WORK/nomode.jsonl" <<'PY'; then
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
ops = {r["operator"]: r for r in records if r["record"] == "operator"}
hooks = {r["hook"]: r for r in records if r["record"] == "hook"}
for hook in ("TaskMemoryManager.acquireExecutionMemory", "Spillable.maybeSpill",
             "BytesToBytesMap.acquireNewPage",
             "UnsafeFixedWidthAggregationMap.getAggregationBufferFromUnsafeRow",
             "ShuffleExternalSorter.spill"):
    assert hooks[hook]["state"] == "off" and hooks[hook]["reason"] == "no spill mode in the options", hooks[hook]
assert not ops, ops
PY
    pass "nomode: agent loaded without a spill mode: same results, nothing spilled, no hook on"
  else
    fail "nomode: agent stats: $(cat "$WORK/nomode.jsonl")"
  fi
fi

# force-bytes=8m: each group's jobs in one JVM. The agent's stats are per operator and per
# JVM, so a group must not hold two jobs that make the operator one of them is checked on.
grouped=()
for group in "${FORCED_GROUPS[@]}"; do
  IFS=, read -r -a members <<<"$group"
  for job in "${members[@]}"; do
    grouped+=("$job")
    for other in "${members[@]}"; do
      [ "$other" = "$job" ] && continue
      case " ${OPERATOR[$other]} ${ALSO[$other]:-} " in
        *" ${OPERATOR[$job]} "*) fail "FORCED_GROUPS: $job and $other share ${OPERATOR[$job]} in one JVM" ;;
      esac
    done
  done
done
[ "$(printf '%s\n' "${grouped[@]}" | sort | tr '\n' ' ')" = "$(printf '%s\n' "${JOBS[@]}" | sort | tr '\n' ' ')" ] ||
  fail "FORCED_GROUPS (${FORCED_GROUPS[*]}) must hold every job once: ${JOBS[*]}"
for group in "${FORCED_GROUPS[@]}"; do
  name=forced-${group//,/-}
  run "$name" "$group" "-agentpath:$AGENT=force-bytes=8m,stats=$WORK/$name.jsonl,log=info" || continue
  IFS=, read -r -a members <<<"$group"
  known=""
  for job in "${members[@]}"; do known+=" ${OPERATOR[$job]} ${ALSO[$job]:-}"; done
  if out=$(python3 - "$WORK/$name.jsonl" $known <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
ops = {r["operator"] for r in records if r["record"] == "operator"}
unknown = ops - set(sys.argv[2:])
assert not unknown, f"operators no job of the group is known to make: {sorted(unknown)}"
print(" ".join(sorted(ops)))
PY
  ); then
    pass "forced/$group: the agent's stats name only the group's operators: $out"
  else
    fail "forced/$group: $out (OPERATOR and ALSO are what keep each checked operator one job's)"
  fi
  for job in "${members[@]}"; do
    line=$(line_of "$name" "$job")
    same_result "$name" "$job"
    spilled "$line" || fail "forced/$job: Spark's task metrics show no spill: '$line'"
    if out=$(python3 - "$WORK/$name.jsonl" "${OPERATOR[$job]}" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
ops = {r["operator"]: r for r in records if r["record"] == "operator"}
name = sys.argv[2]
op = ops.get(name)
assert op, f"no {name} in {sorted(ops)}"
assert op["forced_spills"] > 0 and op["forced_by"]["force-bytes"] == op["forced_spills"], op
assert op["released_bytes"] > 0 and op["failed_spills"] == 0, op
# the sorters spill themselves; the others are answered "0 bytes granted"
self_spill = name in ("UnsafeExternalSorter", "ShuffleExternalSorter")
assert (op["denials"] == 0) if self_spill else (op["denials"] == op["forced_spills"]), op
print(f"{name} forced_spills={op['forced_spills']} denials={op['denials']} "
      f"released_bytes={op['released_bytes']} calls={op['calls']}")
PY
    ); then
      pass "forced/$job: spilled (memory $(field "$line" memoryBytesSpilled), disk $(field "$line" diskBytesSpilled) bytes), same result; agent stats ($group in one JVM): $out"
    else
      fail "forced/$job: agent stats: $out"
    fi
  done
done

# Spark's own controls (records, fallback, pool) test Spark and this suite's reading of its
# spill metrics, not the agent: they run on one line, SPARKSHIM_OPERATOR_CONTROLS (default
# 4.0, the newest; "all" for every line), to keep the CI under its bound (docs/testing.md)
controls=${SPARKSHIM_OPERATOR_CONTROLS:-4.0}
case $controls in
  3.5 | 4.0 | all) ;;
  *) fail "SPARKSHIM_OPERATOR_CONTROLS='$controls' not allowed; allowed: 3.5, 4.0, all" ;;
esac
if [ "$controls" = all ] || [ "$controls" = "$LINE" ]; then
  # Spark's own count threshold: the sorters and Spillables spill; the aggregation map ignores it
  if run records "$all" -- spark.shuffle.spill.numElementsForceSpillThreshold=50000; then
    for job in "${JOBS[@]}"; do
      same_result records "$job"
    done
    for job in "${RECORD_JOBS[@]}"; do
      spilled "$(line_of records "$job")" &&
        pass "records/$job: Spark's numElementsForceSpillThreshold spills (positive control)" ||
        fail "records/$job: Spark's own threshold did not spill: $(line_of records "$job")"
    done
    for job in "${UNCOUNTED_JOBS[@]}"; do
      not_spilled "$(line_of records "$job")" &&
        pass "records/$job: numElementsForceSpillThreshold does not apply to ${OPERATOR[$job]} here (0 spilled)" ||
        fail "records/$job: expected no spill from the count threshold: $(line_of records "$job")"
    done
  fi

  # the aggregation map's own forced fallback, Spark's test setting
  aggs=$(IFS=,; echo "${AGG_JOBS[*]}")
  if run fallback "$aggs" -- spark.sql.TungstenAggregate.testFallbackStartsAt=100000,100000; then
    for job in "${AGG_JOBS[@]}"; do
      same_result fallback "$job"
      spilled "$(line_of fallback "$job")" &&
        pass "fallback/$job: Spark's testFallbackStartsAt spills (positive control)" ||
        fail "fallback/$job: Spark's own fallback did not spill: $(line_of fallback "$job")"
    done
  fi

  # the object aggregation spilled by Spark itself, with a pool too small for its sorter
  if run pool agg-object -- spark.memory.fraction=0.02; then
    same_result pool agg-object
    spilled "$(line_of pool agg-object)" &&
      pass "pool/agg-object: spark.memory.fraction=0.02 spills (positive control)" ||
      fail "pool/agg-object: Spark did not spill with a small pool: $(line_of pool agg-object)"
  fi
else
  echo "note: Spark's own controls (records, fallback, pool) run on Spark $controls, not $LINE (SPARKSHIM_OPERATOR_CONTROLS=all: every line)"
fi

# allow-fraction under pressure
fractions=$(IFS=,; echo "${FRACTION_JOBS[*]}")
if run fraction "$fractions" \
  "-agentpath:$AGENT=threshold=1m,allow-fraction=0.02,cooldown-ms=0,stats=$WORK/fraction.jsonl,log=info"; then
  for job in "${FRACTION_JOBS[@]}"; do
    same_result fraction "$job"
    spilled "$(line_of fraction "$job")" || fail "fraction/$job: no spill: $(line_of fraction "$job")"
  done
  if out=$(python3 - "$WORK/fraction.jsonl" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
ops = {r["operator"]: r for r in records if r["record"] == "operator"}
pressure = [r for r in records if r["record"] == "pressure"][0]
execution = pressure["execution_memory_bytes"]
assert execution > 0 and pressure["crossings"] >= 1, pressure
names = ("UnsafeFixedWidthAggregationMap", "UnsafeExternalSorter", "ShuffleExternalSorter",
         "ExternalAppendOnlyMap")
for name in names:
    op = ops.get(name)
    assert op and op["forced_by"]["pressure"] > 0 and op["forced_spills"] == op["forced_by"]["pressure"], (name, op)
# one pressure episode (the threshold stays crossed): its first spill has the reaction latency
assert sum(op["reactions"] for op in ops.values()) >= 1, ops
print(f"execution_memory_bytes={execution} floor={int(execution * 0.02)} " + " ".join(
    f"{n}={ops[n]['forced_by']['pressure']}" for n in names))
PY
  ) && grep -q '^sparkshim-agent: info: execution memory (on-heap): [0-9]* bytes; allow-fraction=0.02: operators holding >= [0-9]* bytes$' "$WORK/fraction.err"; then
    pass "fraction: allow-fraction=0.02 under pressure spills each job, same results; $out"
  else
    fail "fraction: $out $(grep sparkshim-agent "$WORK/fraction.err")"
  fi
fi

# allow-bytes under pressure: the object aggregation's sorter takes its rows through
# insertKVRecord, where the agent looks (the guard is set from the start: threshold=1m), so
# the episode's first spill is at a row, not at the sorter's next page request
if run kv agg-object \
  "-agentpath:$AGENT=threshold=1m,allow-bytes=8m,cooldown-ms=0,stats=$WORK/kv.jsonl,log=debug"; then
  same_result kv agg-object
  line=$(line_of kv agg-object)
  spilled "$line" || fail "kv/agg-object: no spill: '$line'"
  first=$(grep -m1 -E '^sparkshim-agent: debug: [A-Za-z]+ holding [0-9]+ bytes at [A-Za-z]+ under pressure$' "$WORK/kv.err" || true)
  if out=$(python3 - "$WORK/kv.jsonl" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
ops = {r["operator"]: r for r in records if r["record"] == "operator"}
hooks = {r["hook"]: r for r in records if r["record"] == "hook"}
assert hooks["UnsafeExternalSorter/ShuffleExternalSorter.insertRecord"]["state"] == "on", hooks
op = ops.get("UnsafeExternalSorter")
assert op and op["forced_by"]["pressure"] == op["forced_spills"] > 0 and op["reactions"] >= 1, op
print(f"UnsafeExternalSorter forced_spills={op['forced_spills']} released_bytes={op['released_bytes']}")
PY
  ) && [[ "$first" == *" UnsafeExternalSorter holding "*" at insertKVRecord under pressure" ]]; then
    pass "kv/agg-object: allow-bytes=8m under pressure: first spill at insertKVRecord ('${first#sparkshim-agent: debug: }'), same result; $out"
  else
    fail "kv/agg-object: first pressure spill '$first'; $out"
  fi
fi
finish
