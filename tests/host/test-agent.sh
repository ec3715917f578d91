#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-agent.sh SPARKSHIM AGENT JDK_HOME SRC_DIR: `sparkshim run` injects the JVMTI agent the
# policy enables into real JVMs on this host (fail_mode open, so the runs happen whether or
# not this host can enforce), and the reports' "agent" object comes from the agent's own
# statistics file: a Java program without Spark classes loads the agent, its hooks are
# pending (samples) and off (final) and nothing spills; stand-in Spark classes
# (tests/agent/stub) spill as many times as the report says. -agentpath: and
# JAVA_TOOL_OPTIONS (appended to), no second injection, the failure modes and the flags.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
agent=${2:-}
jdk=${3:-}
src=${4:?usage: test-agent.sh SPARKSHIM AGENT JDK_HOME SRC_DIR}
if [ -z "$agent" ] || [ -z "$jdk" ]; then
	echo "SKIP: no JDK headers (jvmti.h) were found when configuring: the agent was not built"
	exit 77
fi
for tool in "$jdk/bin/java" "$jdk/bin/javac"; do
	[ -x "$tool" ] || { echo "SKIP: $tool is missing"; exit 77; }
done
[ -f "$agent" ] || { echo "FAIL: $agent was not built"; exit 1; }
java=$jdk/bin/java
. "$src/tests/host/lib.sh"
tmp=$(mktemp -d /tmp/sparkshim-host-agent.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# the private directories the shim makes for the agent's statistics go here
TMPDIR=$tmp/run
export TMPDIR
mkdir "$TMPDIR"

"$jdk/bin/javac" -d classes "$src/tests/host/AgentProbe.java"
"$jdk/bin/javac" -d stub $(find "$src/tests/agent/stub" -name '*.java')

policy() { # FILE JSON
	printf '%s\n' "$2" >"$1"
	chmod 0644 "$1"
}
policy on.json '{ "version": 1, "fail_mode": "open", "agent": { "enabled": true, "force_bytes": "8m", "log": "warn" } }'
policy jto.json '{ "version": 1, "fail_mode": "open", "agent": { "enabled": true, "injection": "java_tool_options", "force_bytes": 4096 } }'
policy closed.json '{ "version": 1, "fail_mode": "closed", "agent": { "enabled": true } }'
policy closed-agentpath.json '{ "version": 1, "fail_mode": "closed", "agent": { "enabled": true, "injection": "agentpath" } }'
policy strict.json '{ "version": 1, "fail_mode": "open", "overrides": [], "agent": { "enabled": false } }'

# --- 1. a plain Java program: the agent loads, its hooks wait for Spark classes, no spills.
# It runs until a sample line has shown the agent's periodic statistics (a gate file), so
# that one does whatever the load; later samples may hold its exit snapshot.
"$shim" run -v --policy on.json --agent-path "$agent" --memory 256m --report plain.jsonl \
	--report-interval 1 -- "$java" -Xmx256m -cp classes AgentProbe 1000 "$tmp/plain.gate" >out.txt 2>err.txt &
plain=$!
python3 - plain.jsonl <<'PY' || true
import json, sys, time
for _ in range(1200):
    try:
        for line in open(sys.argv[1]):
            d = json.loads(line)
            st = (d.get("agent") or {}).get("stats") or {}
            if d["kind"] == "sample" and st.get("status") == "ok" and st.get("final") is False:
                sys.exit(0)
    except (OSError, ValueError):
        pass
    time.sleep(0.1)
sys.exit(1)
PY
touch "$tmp/plain.gate"
wait $plain || { cat err.txt; fail "plain run failed"; }
grep -q '^agentprobe agents=1 prop=null held=32$' out.txt || { cat out.txt err.txt; fail "the JVM did not get exactly one agent"; }
grep -q 'info: JVM agent: command line -agentpath:' err.txt || { cat err.txt; fail "no log line for the injection"; }
# issue 11, defect 9: root's private directory is in its run directory, never in $TMPDIR;
# a killed shim's directory (its pid gone: 4194304 is above any pid_max) goes at the next start
if [ "$(id -u)" = 0 ]; then
	mkdir -p /run/sparkshim/agent.4194304.Leftov
	echo '{}' >/run/sparkshim/agent.4194304.Leftov/stats.jsonl
	"$shim" run --policy on.json --agent-path "$agent" --memory 256m --report sweep.jsonl -- true 2>/dev/null
	[ ! -e /run/sparkshim/agent.4194304.Leftov ] || fail "a dead shim's private directory was not swept"
	echo "ok: a dead shim's private directory is removed at the next start"
fi
# root's private directory is in its run directory, never in $TMPDIR
[ -z "$(ls -A "$TMPDIR")" ] || fail "root made something in the user's TMPDIR: $(ls -A "$TMPDIR")"
if [ "$(id -u)" = 0 ]; then rundir=/run/sparkshim; else rundir=$TMPDIR; fi
python3 - plain.jsonl "$agent" "$("$shim" --version | cut -d' ' -f2)" "$rundir" <<'PY'
import json, os, sys
path, agent, version, rundir = sys.argv[1:5]
docs = [json.loads(l) for l in open(path)]
final = [d for d in docs if d["kind"] == "final"][0]
samples = [d for d in docs if d["kind"] == "sample"]
a = final["agent"]
assert a["enabled"] and a["injected"] and a["reason"] is None, a
assert a["method"] == "agentpath" and a["path"] == agent, (a["method"], a["path"])
plan = final["plan"]["memory"]
assert a["threshold_of"] == "request" and a["threshold_bytes"] == plan["request_bytes"], \
    (a["threshold_bytes"], plan["request_bytes"])
opts = dict(kv.split("=", 1) for kv in a["options"].split(","))
assert opts["force-bytes"] == str(8 << 20), opts
assert opts["threshold"] == str(plan["request_bytes"]) and opts["limit"] == str(plan["limit_bytes"]), opts
assert opts["stats-interval"] == "1" and opts["log"] == "warn", opts
assert opts["stats"] == a["stats"]["file"] and opts["stats"].startswith(rundir + "/agent."), opts
assert not os.path.exists(os.path.dirname(opts["stats"])), "the statistics directory was left behind"
# cgroup= only where the executor's cgroup has memory.stat: never on an unenforced run here
if not final["enforcement"]["enforced"]:
    assert "cgroup" not in opts, opts
st = a["stats"]
assert st["status"] == "ok" and st["error"] is None, st
assert st["final"] is True, "the final report has the agent's exit snapshot"
# the statistics are this JVM's: the agent wrote its pid, and the executor is that JVM
assert st["pid"] == final["identity"]["pid"], (st["pid"], final["identity"]["pid"])
assert st["version"] == version, (st["version"], version)
hooks = {h["hook"]: h for h in a["hooks"]}
assert "TaskMemoryManager.acquireExecutionMemory" in hooks, hooks
# without Spark classes no hook is on: they never resolved ("class never loaded" at exit)
assert all(h["state"] in ("off", "pending") for h in hooks.values()), hooks
assert hooks["TaskMemoryManager.acquireExecutionMemory"]["state"] == "off", hooks
assert hooks["TaskMemoryManager.acquireExecutionMemory"]["reason"] == "class never loaded", hooks
assert a["pressure"]["source"] in ("proc", "cgroup") and a["pressure"]["peak_anon_bytes"] > 32 << 20, a["pressure"]
assert a["pressure"]["threshold_bytes"] == a["threshold_bytes"], a["pressure"]
assert a["operators"] == [], a["operators"]
t = a["totals"]
assert t["forced_spills"] == 0 and t["released_bytes"] == 0 and t["operators"] == 0, t
assert final["spills"] == t, (final["spills"], t)
seen = [s["agent"] for s in samples if s["agent"]["stats"]["status"] == "ok"]
assert seen, "no sample line had the agent's statistics: " + str([s["agent"]["stats"] for s in samples])
# the periodic statistics, then (on a busy machine a sample may read it before the JVM is
# gone) the exit snapshot, never the other way round
finals = [s["stats"]["final"] for s in seen]
assert finals == sorted(finals) and not finals[0], finals
for s in seen:
    if s["stats"]["final"]:
        continue
    assert all(h["state"] in ("pending", "off") for h in s["hooks"]), s["hooks"]
    assert any(h["state"] == "pending" for h in s["hooks"]), s["hooks"]
print(f"ok: plain JVM: agent injected with {a['options']}; {len(hooks)} hooks off at exit, "
      f"pending in {len(seen)} samples; no spills; stats from pid {st['pid']}")
PY

# --- 2. stand-in Spark classes: the report counts the spills the JVM saw, via JAVA_TOOL_OPTIONS
JAVA_TOOL_OPTIONS="-Dsparkshim.test=kept" "$shim" run --policy jto.json --agent-path "$agent" \
	--memory 256m --report stub.jsonl --prometheus "$tmp/metrics.prom" --report-interval 1 \
	-- "$java" -cp stub StubJob ok 3 >out.txt 2>err.txt &
runner=$!
# the Prometheus file lives as long as the executor: keep the versions that count spills
while kill -0 $runner 2>/dev/null; do
	# the shim removes the file when the executor ends, maybe between the grep and the cp
	if grep -q '^sparkshim_agent_forced_spills_total{' metrics.prom 2>/dev/null; then
		cp metrics.prom seen.prom.new 2>/dev/null && mv seen.prom.new seen.prom || true
	fi
	sleep 0.1
done
wait $runner || { cat err.txt; fail "stub run failed"; }
spills=$(sed -n 's/^stubjob spills=\([0-9]*\) .*/\1/p' out.txt)
[ -n "$spills" ] && [ "$spills" -gt 0 ] || { cat out.txt err.txt; fail "the stub did not spill"; }
grep -q '^Picked up JAVA_TOOL_OPTIONS: -Dsparkshim.test=kept -agentpath:' err.txt ||
	{ cat err.txt; fail "JAVA_TOOL_OPTIONS was not appended to"; }
python3 - stub.jsonl "$spills" <<'PY'
import json, sys
path, spills = sys.argv[1], int(sys.argv[2])
final = [d for d in map(json.loads, open(path)) if d["kind"] == "final"][0]
a = final["agent"]
assert a["injected"] and a["method"] == "java_tool_options", (a["injected"], a["method"])
assert a["stats"]["status"] == "ok", a["stats"]
ops = {o["operator"]: o for o in a["operators"]}
s = ops["UnsafeExternalSorter"]
assert s["forced_spills"] == spills and s["forced_by"]["force_bytes"] == spills, (s, spills)
assert s["released_bytes"] > 0 and s["failed_spills"] == 0 and s["spill_seconds"] > 0, s
assert a["totals"]["forced_spills"] == spills and final["spills"]["forced_spills"] == spills, a["totals"]
hooks = {h["hook"]: h["state"] for h in a["hooks"]}
assert hooks["TaskMemoryManager.acquireExecutionMemory"] == "on", hooks
print(f"ok: stub: report has {spills} forced spills of UnsafeExternalSorter, as the JVM saw")
PY
# sampled while the job ran: some of the spills, never more than the JVM saw
seen=$(sed -n 's/^sparkshim_agent_forced_spills_total{.*,operator="UnsafeExternalSorter"} \([0-9]*\)$/\1/p' seen.prom 2>/dev/null || true)
[ -n "$seen" ] && [ "$seen" -ge 1 ] && [ "$seen" -le "$spills" ] ||
	{ cat seen.prom; fail "prometheus lacks the forced-spills counter (saw '$seen', the JVM $spills)"; }
[ ! -e metrics.prom ] || fail "metrics.prom was not removed at the end of the run"
"$shim" report stub.jsonl >table.txt
cat table.txt
head -1 table.txt | grep -q ' SPILLS$' || fail "no SPILLS column"
sed -n 2p table.txt | grep -q " $spills\$" || fail "the row does not show $spills spills"
grep -q "^  spills UnsafeExternalSorter: $spills forced (force_bytes $spills), 0 failed" table.txt ||
	fail "no per-operator spill line"
grep -q "^TOTAL (1 executors) .* $spills\$" table.txt || fail "the total does not show $spills spills"
echo "ok: prometheus counter and sparkshim report table"

# --- 3. the command loads the agent itself: allowed by the policy, not a second time (and
# its statistics, at a path the user chose, are not read by root); not allowed: refused
"$shim" run --policy on.json --agent-path "$agent" --memory 256m --report own.jsonl \
	-- "$java" "-agentpath:$agent=force-bytes=4k,stats=$tmp/own-stats.jsonl" -cp classes AgentProbe \
	>out.txt 2>err.txt || { cat err.txt; fail "own-agent run failed"; }
grep -q '^agentprobe agents=1 ' out.txt || { cat out.txt; fail "the agent was injected a second time"; }
JAVA_TOOL_OPTIONS="-agentpath:$agent=stats=$tmp/env-stats.jsonl" "$shim" run --policy jto.json \
	--agent-path "$agent" --memory 256m --report env.jsonl -- "$java" -cp classes AgentProbe \
	>out.txt 2>err.txt || { cat err.txt; fail "JAVA_TOOL_OPTIONS-agent run failed"; }
grep -q '^agentprobe agents=1 ' out.txt || { cat out.txt; fail "JAVA_TOOL_OPTIONS: injected a second time"; }
python3 - own.jsonl argv[1] env.jsonl JAVA_TOOL_OPTIONS <<'PY'
import json, sys
for path, where in (sys.argv[1:3], sys.argv[3:5]):
    final = [d for d in map(json.loads, open(path)) if d["kind"] == "final"][0]
    a = final["agent"]
    assert a["enabled"] and not a["injected"] and a["options"] is None, a
    assert a["reason"] == f"the command loads the agent already ({where}); not injected a second time, its statistics not read", a["reason"]
    assert a["stats"] is None or a["stats"].get("file") is None, a["stats"]
print("ok: an agent in the command (argv, JAVA_TOOL_OPTIONS) is not injected twice; root reads no statistics file the user named")
PY
# issue 11, defect 9: a policy that does not let users choose the agent refuses the command's own
policy agent-fixed.json "{ \"version\": 1, \"fail_mode\": \"open\", \"overrides\": [\"memory\"], \"agent\": { \"enabled\": true, \"path\": \"$agent\" } }"
expect 122 "argv\[1\]: set by the user, but the policy does not allow overriding agent (the command loads the JVM agent itself)" \
	"$shim" run --policy agent-fixed.json --memory 256m \
	-- "$java" "-agentpath:$agent=log=off" -cp classes AgentProbe
# ... and a look-alike of the agent's name does not switch the policy's agent off
mkdir -p "$tmp/fake"
cp "$agent" "$tmp/fake/$(basename "$agent")"
"$shim" run --policy on.json --agent-path "$agent" --memory 256m --report fake.jsonl \
	-- "$java" "-agentpath:$tmp/fake/$(basename "$agent")=log=off" -cp classes AgentProbe >out.txt 2>err.txt || true
python3 - fake.jsonl <<'PY'
import json, sys
final = [d for d in map(json.loads, open(sys.argv[1])) if d["kind"] == "final"][0]
assert final["agent"]["injected"], final["agent"]
print("ok: a look-alike of the agent in the command does not keep the policy's agent out")
PY

# --- 4. failures, flags and their exit codes
expect 123 "cannot inject the JVM agent: agent library $tmp/none.so: No such file or directory; allowed: a regular file owned by root.* (fail_mode closed)" \
	"$shim" run --policy closed.json --agent-path "$tmp/none.so" --memory 256m -- sh -c 'echo ran'
[ ! -s out.txt ] || fail "closed mode ran the command without its agent"
expect 123 "cannot inject the JVM agent: agent.injection is agentpath, but sh is not a java launcher" \
	"$shim" run --policy closed-agentpath.json --agent-path "$agent" --memory 256m -- sh -c 'echo ran'
expect 120 "\-\-agent-path: 'lib/agent.so' is not a usable agent path" \
	"$shim" run --policy on.json --agent-path lib/agent.so --memory 256m -- true
SPARKSHIM_AGENT=yes expect 120 "SPARKSHIM_AGENT: 'yes' is not a switch; allowed: on, off" \
	"$shim" run --policy on.json --memory 256m -- true
expect 122 "\-\-agent: set by the user, but the policy does not allow overriding agent" \
	"$shim" run --policy strict.json --agent --memory 256m -- true
expect 122 "SPARKSHIM_AGENT_PATH: set by the user, but the policy does not allow overriding agent" \
	env SPARKSHIM_AGENT_PATH="$agent" "$shim" run --policy strict.json --memory 256m -- true

# issue 11, defect 7: root checks the library it injects without opening it: a FIFO (a
# device would do the same) is refused before it is opened, and so is a library others can
# change or that sits in a directory others can write
mkfifo "$tmp/fifo.so"
( exec 3>"$tmp/fifo.so"; echo opened >"$tmp/fifo-opened" ) &
writer=$!
expect 123 "agent library $tmp/fifo.so: a FIFO; allowed: a regular file owned by root" \
	"$shim" run --policy closed.json --agent-path "$tmp/fifo.so" --memory 256m -- true
kill $writer 2>/dev/null || true
wait $writer 2>/dev/null || true
[ ! -e "$tmp/fifo-opened" ] || fail "the shim opened the FIFO given as the agent library"
expect 123 "agent library /dev/null: a character device" \
	"$shim" run --policy closed.json --agent-path /dev/null --memory 256m -- true
cp "$agent" "$tmp/writable.so"
chmod 0666 "$tmp/writable.so"
expect 123 "agent library $tmp/writable.so: writable by group or others (mode 0666)" \
	"$shim" run --policy closed.json --agent-path "$tmp/writable.so" --memory 256m -- true
mkdir -m 0777 "$tmp/open-dir"
cp "$agent" "$tmp/open-dir/agent.so"
expect 123 "agent library $tmp/open-dir/agent.so: directory $tmp/open-dir is writable by group or others (mode 0777)" \
	"$shim" run --policy closed.json --agent-path "$tmp/open-dir/agent.so" --memory 256m -- true
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	cp "$agent" "$tmp/nobody.so"
	chown nobody "$tmp/nobody.so"
	expect 123 "agent library $tmp/nobody.so: $tmp/nobody.so is owned by uid $(id -u nobody), not root" \
		"$shim" run --policy closed.json --agent-path "$tmp/nobody.so" --memory 256m -- true
fi
echo "ok: the agent library is checked without opening it: FIFO, device, writable file or directory, other owner"

# sparkshim check names the library the policy enables, and fails a missing one (closed)
policy with-path.json "{ \"version\": 1, \"agent\": { \"enabled\": true, \"path\": \"$agent\" } }"
"$shim" check --policy with-path.json >out.txt || true
grep -q "^JVM agent  *ok  *$agent is injected into executors\$" out.txt || { cat out.txt; fail "check: agent row"; }
policy missing-path.json "{ \"version\": 1, \"agent\": { \"enabled\": true, \"path\": \"$tmp/none.so\" } }"
set +e
"$shim" check --policy missing-path.json >out.txt
rc=$?
set -e
[ $rc = 1 ] || fail "check passed with a missing agent"
grep -q "^JVM agent  *FAIL  *$tmp/none.so: No such file or directory; run refuses to start (fail_mode closed)\$" out.txt ||
	{ cat out.txt; fail "check: missing agent row"; }
echo "ok: sparkshim check: the agent library"

# open: a missing agent warns, the executor runs without it and the report says why
"$shim" run --policy on.json --agent-path "$tmp/none.so" --memory 256m --report missing.jsonl \
	-- sh -c 'echo "ran JAVA_TOOL_OPTIONS=${JAVA_TOOL_OPTIONS:-}"' >out.txt 2>err.txt
grep -qx 'ran JAVA_TOOL_OPTIONS=' out.txt || { cat out.txt; fail "open mode: not run, or the agent added"; }
grep -q "warning: not injecting the JVM agent: agent library $tmp/none.so: No such file or directory; allowed: .*; running without it (fail_mode open)" err.txt ||
	{ cat err.txt; fail "open mode: no warning"; }
# --no-agent, and a non-java command gets the agent through JAVA_TOOL_OPTIONS and no fd of ours
"$shim" run --policy on.json --no-agent --memory 256m --report off.jsonl -- true
# (ls without a pipe: a shell holds a pipeline's pipe while it starts the commands in it)
"$shim" run --policy on.json --agent-path "$agent" --memory 256m --report sh.jsonl \
	-- sh -c 'echo "$JAVA_TOOL_OPTIONS"; ls /proc/$$/fd' >out.txt
grep -q "^-agentpath:$agent=force-bytes=8388608,.*,stats=$rundir/agent\.[0-9]*\.[A-Za-z0-9]*/stats.jsonl,stats-interval=10,log=warn\$" out.txt ||
	{ cat out.txt; fail "a script did not get the agent in JAVA_TOOL_OPTIONS"; }
# what the executor may hold: what this script passes down (the test runner's own inherited
# fds among them), none of sparkshim's
sh -c 'ls /proc/$$/fd' >inherited.txt
[ "$(sed 1d out.txt | sort -n | tr '\n' ' ')" = "$(sort -n inherited.txt | tr '\n' ' ')" ] ||
	{ cat out.txt; fail "file descriptors leaked into the executor (inherited: $(tr '\n' ' ' <inherited.txt))"; }
python3 - missing.jsonl off.jsonl sh.jsonl "$tmp/none.so" <<'PY'
import json, sys
def final(p):
    return [d for d in map(json.loads, open(p)) if d["kind"] == "final"][0]["agent"]
a = final(sys.argv[1])
assert a["enabled"] and not a["injected"], a
assert a["reason"].startswith(f"agent library {sys.argv[4]}: No such file or directory; allowed: "), a["reason"]
assert a["stats"]["status"] == "none" and a["totals"] is None, a["stats"]
a = final(sys.argv[2])
assert not a["enabled"] and not a["injected"] and a["reason"] == "disabled by --no-agent", a
a = final(sys.argv[3])
# a script is not a JVM: injected, and the report says the agent never wrote statistics
assert a["injected"] and a["method"] == "java_tool_options", a
assert a["stats"]["status"] == "missing" and "No such file or directory" in a["stats"]["error"], a["stats"]
print("ok: reports say why the agent is not there, or that it never wrote statistics")
PY
echo "ok: all"
