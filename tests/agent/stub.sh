#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The hook's mechanics against stand-in Spark classes with the real signatures (fast, no
# Spark): spills happen in the asking thread under the manager's lock; a spill that throws
# fails the "task" with a RuntimeException and turns forced spills off; a Spark whose
# TaskMemoryManager, Spillable, BytesToBytesMap and aggregation map lack the hooked methods
# loads, says so hook by hook, and is left alone; without TaskMemoryManager.taskAttemptId the
# max-spills cap is off, with one line.
# Usage: stub.sh AGENT JDK_HOME SOURCE_DIR
. "$(dirname "$0")/common.sh"
SRC=$3

"$JAVAC" -d "$WORK/stub" $(find "$SRC/stub" -name '*.java')
"$JAVAC" -d "$WORK/unknown" $(find "$SRC/stub-unknown" -name '*.java')

out=$("$JAVA" "-agentpath:$AGENT=force-bytes=4k,stats=$WORK/ok.jsonl" -cp "$WORK/stub" StubJob ok 2>"$WORK/err")
echo "$out"
if [ "$(field "$out" spills)" -gt 0 ] && [ "$(field "$out" without_lock)" = 0 ] &&
  [ "$(field "$out" other_threads)" = 0 ] && [ "$(field "$out" thrown)" = none ]; then
  pass "forced spills in the asking thread under the manager's lock, re-entry passed through"
else
  fail "ok run: $out $(cat "$WORK/err")"
fi
if [ "$(grep -c 'max-spills' "$WORK/err")" = 1 ] &&
  grep -q '^sparkshim-agent: warn: max-spills: field not found (TaskMemoryManager.taskAttemptId): no cap$' "$WORK/err"; then
  pass "a TaskMemoryManager without taskAttemptId: max-spills off, said once"
else
  fail "max-spills without taskAttemptId: $(grep sparkshim-agent "$WORK/err")"
fi
if grep -q '"operator":"UnsafeExternalSorter".*"forced_spills":[1-9]' "$WORK/ok.jsonl"; then
  pass "stats name UnsafeExternalSorter with forced spills"
else
  fail "stats: $(cat "$WORK/ok.jsonl")"
fi

out=$("$JAVA" "-agentpath:$AGENT=force-bytes=4k,stats=$WORK/fail.jsonl" -cp "$WORK/stub" StubJob fail 2>"$WORK/err")
echo "$out"
if [ "$(field "$out" thrown)" = "java.lang.RuntimeException" ] &&
  [ "$(field "$out" cause)" = "java.io.IOException" ] && [ "$(field "$out" spills)" = 0 ] &&
  grep -q '^sparkshim-agent: error: forced spill of UnsafeExternalSorter failed: java.io.IOException: No space left on device (stub)$' "$WORK/err" &&
  grep -q '"failed_spills":1' "$WORK/fail.jsonl"; then
  pass "a throwing spill fails the task with RuntimeException(cause IOException), then spills stay off"
else
  fail "fail run: $out $(cat "$WORK/err") $(cat "$WORK/fail.jsonl")"
fi

out=$("$JAVA" "-agentpath:$AGENT=force-bytes=4k,log=info" -cp "$WORK/unknown" org.apache.spark.memory.TaskMemoryManager 2>"$WORK/err")
if [ "$out" = "unknown-spark granted=4096 spilled=false page=true buffer=k" ] &&
  grep -q '^sparkshim-agent: warn: hook TaskMemoryManager.acquireExecutionMemory: off: method not found' "$WORK/err" &&
  grep -qF 'sparkshim-agent: info: hook Spillable.maybeSpill: off: method not found (maybeSpill(Ljava/lang/Object;J)Z)' "$WORK/err" &&
  grep -qF 'sparkshim-agent: info: hook BytesToBytesMap.acquireNewPage: off: method not found (acquireNewPage(J)Z)' "$WORK/err" &&
  grep -qF 'sparkshim-agent: info: hook UnsafeFixedWidthAggregationMap.getAggregationBufferFromUnsafeRow: off: method not found (getAggregationBufferFromUnsafeRow(Lorg/apache/spark/sql/catalyst/expressions/UnsafeRow;I)Lorg/apache/spark/sql/catalyst/expressions/UnsafeRow;)' "$WORK/err" &&
  ! grep -q '^sparkshim-agent: error' "$WORK/err"; then
  pass "unknown Spark: loads, says each hook is off and why, changes nothing"
else
  fail "unknown run: $out $(cat "$WORK/err")"
fi
finish
