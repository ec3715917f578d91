#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent in a real JVM without Spark: bad options stop the JVM with exactly one line from
# the agent; good options start it; only the Agent_* entry points are exported.
# Usage: jvm-options.sh AGENT JDK_HOME
. "$(dirname "$0")/common.sh"

# options | the one line the agent must print
bad_cases=(
  'force-bytes=12x|sparkshim-agent: error: force-bytes=12x: not a size; allowed: a byte size such as 512, 64k, 8m, 1g (suffixes k, m, g, t, p)'
  'bogus=1|sparkshim-agent: error: bogus=1: unknown option; allowed: force-bytes, allow-bytes, allow-fraction, periodic, records, cgroup, threshold, limit, request, stats, stats-interval, cooldown-ms, min-spill, max-spills, psi-stall-ms, psi-window-ms, heap-threshold, log'
  'records=0|sparkshim-agent: error: records=0: out of range; allowed: an integer from 1 to 2147483647'
  'log=info,allow-bytes=1g|sparkshim-agent: error: allow-bytes=1g: applies under pressure only and no pressure source is given; allowed: allow-bytes together with threshold=, psi-stall-ms= or heap-threshold='
  'cgroup=/nonexistent/sparkshim|sparkshim-agent: error: cgroup=/nonexistent/sparkshim: No such file or directory; allowed: the absolute path of an existing cgroup v2 directory'
)
for c in "${bad_cases[@]}"; do
  opts=${c%%|*}
  want=${c#*|}
  rc=0
  "$JAVA" "-agentpath:$AGENT=$opts" -version >"$WORK/out" 2>"$WORK/err" || rc=$?
  lines=$(grep -c '^sparkshim-agent:' "$WORK/err" || true)
  got=$(grep '^sparkshim-agent:' "$WORK/err" || true)
  if [ "$rc" -eq 0 ]; then
    fail "$opts: the JVM started (exit 0)"
  elif [ "$lines" -ne 1 ] || [ "$got" != "$want" ]; then
    fail "$opts: want exactly one line: $want; got $lines: $got"
  else
    pass "$opts: JVM refused to start (exit $rc) with: $got"
  fi
done

# good options: the JVM runs; the agent says which hooks stayed off (no Spark here)
rc=0
"$JAVA" "-agentpath:$AGENT=log=info,force-bytes=64m,stats=$WORK/stats.jsonl" -version \
  >"$WORK/out" 2>"$WORK/err" || rc=$?
if [ "$rc" -ne 0 ]; then
  fail "log=info: exit $rc: $(cat "$WORK/err")"
elif ! grep -q '^sparkshim-agent: info: hook TaskMemoryManager.acquireExecutionMemory: off: class never loaded$' "$WORK/err"; then
  fail "log=info: no hook line: $(cat "$WORK/err")"
elif grep -q '^sparkshim-agent: \(error\|warn\)' "$WORK/err"; then
  fail "log=info: unexpected errors: $(cat "$WORK/err")"
else
  pass "log=info,force-bytes=64m: JVM ran (exit 0) and logged its hooks"
fi
if python3 - "$WORK/stats.jsonl" <<'PY'; then
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
agent = [r for r in records if r["record"] == "agent"]
hooks = {r["hook"]: r for r in records if r["record"] == "hook"}
pressure = [r for r in records if r["record"] == "pressure"]
assert agent and agent[0]["final"] is True, agent
assert hooks["TaskMemoryManager.acquireExecutionMemory"]["state"] == "off", hooks
assert pressure and pressure[0]["peak_anon_bytes"] > 0, pressure
PY
  pass "stats file: final snapshot with hooks and pressure"
else
  fail "stats file: $(cat "$WORK/stats.jsonl")"
fi

# no options at all: silent
rc=0
"$JAVA" "-agentpath:$AGENT" -version >"$WORK/out" 2>"$WORK/err" || rc=$?
if [ "$rc" -ne 0 ] || grep -q sparkshim-agent "$WORK/err"; then
  fail "no options: exit $rc, stderr: $(cat "$WORK/err")"
else
  pass "no options: JVM ran, agent silent"
fi

# the module exports the JVMTI entry points and nothing else
exports=$(nm -D --defined-only "$AGENT" | awk '{print $3}' | sort | tr '\n' ' ')
if [ "$exports" = "Agent_OnAttach Agent_OnLoad Agent_OnUnload " ]; then
  pass "exports: $exports"
else
  fail "exports: $exports"
fi
finish
