#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Spark standalone launches every executor through sparkshim (issue 12, section 2).
#
# A real Spark distribution (scripts/spark-dist: the pyspark package's bin/, jars/) runs a
# Master and a Worker on the loopback (`spark-class ...deploy.master.Master` and
# `...deploy.worker.Worker spark://...`, ephemeral ports, work dir and logs in the test's
# temporary directory). The same sort job (tests/agent/SortJob.java, 2 executors of 1 core
# and 512m) is submitted twice with spark-submit, in client mode, the executors' JAVA_HOME
# set by the admin's one line in spark-defaults.conf:
#   1. plain:    spark.executorEnv.JAVA_HOME=the JDK            -> no sparkshim anywhere;
#   2. wrapped:  spark.executorEnv.JAVA_HOME=`sparkshim java-home --jdk JDK DIR`, and the
#                driver started with JAVA_HOME=DIR too; the policy installed at
#                /etc/sparkshim/policy.json for the run (fail_mode open: this host's cgroup
#                v2 has no controllers, so measurement and the agent are real and
#                enforcement is reported as not possible) enables the agent with a low
#                force threshold.
# Checks: the Worker started every executor of run 2 with DIR/bin/java, and sparkshim
# reported each exactly once, named after its application and executor id, with the
# executor's own pid (the pid Spark's executor logs as its process name) and command line
# (the Worker's, with the real java and the agent's -agentpath: that sparkshim added); the
# driver, spark-submit's launcher and run 1 left no report; Spark's spill metrics are 0 in
# run 1 and > 0 in run 2, the agent's forced spills > 0, and both runs return the same rows
# in the same order (order-sensitive checksum).
#
# The sparkshim tested is the Debian package of this tree, installed by
# tests/cluster/lib.sh's install_package (/usr/bin/sparkshim, the agent it installs).
#
# Usage: standalone.sh LINE SOURCE_ROOT JDK_HOME
set -euo pipefail

LINE=${1:?usage: standalone.sh LINE SOURCE_ROOT JDK_HOME}
SRC=${2:?}
JDK=${3:-}
ROWS=${SPARKSHIM_STANDALONE_ROWS:-1000000}
# shellcheck source=/dev/null
. "$SRC/tests/cluster/lib.sh"
suite_helpers "standalone-$LINE"

[ "$(id -u)" = 0 ] || skip "not root: the test installs its policy at /etc/sparkshim/policy.json"
need_jdk java javac jar
command -v python3 >/dev/null || skip "python3 is missing"

# --- the sparkshim under test: the installed package ----------------------------------------
use_package
progress "testing the installed package: $SPARKSHIM, agent $AGENT_LIB"

# --- the distribution ---------------------------------------------------------------------
WORK=$(mktemp -d /tmp/sparkshim-standalone.XXXXXX)
chmod 0755 "$WORK"
cd "$WORK" # every process of the test runs in $WORK: the cleanup finds any that is left
PIDS=()   # the Master and the Worker
SUBMIT=   # spark-submit while it runs
CGROUP_PARENT=sparkshim-test-standalone

# Every process this test started, and any executor left behind (found by its working
# directory, which is in $WORK), is killed; the policy is restored; $WORK goes.
cleanup() {
  local rc=$? pid
  set +e
  cd /
  for pid in ${SUBMIT:-} "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null
  done
  cleanup_suite "$WORK" "$CGROUP_PARENT"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

spark_dist "$LINE"
export SPARK_LOCAL_DIRS=$WORK/local
export JAVA_HOME=$JDK
mkdir -p "$SPARK_CONF_DIR" "$SPARK_LOCAL_DIRS" "$WORK/reports" "$WORK/worker" "$WORK/logs"
chmod 0755 "$WORK/reports"

"$JDK/bin/javac" -d "$WORK/classes" -cp "$SPARK_HOME/jars/*" "$SRC/tests/agent/SortJob.java"
"$JDK/bin/jar" cf "$WORK/sortjob.jar" -C "$WORK/classes" .

# --- the wrapper and the policy -------------------------------------------------------------
make_java_home || exit 1

# The java personality reads /etc/sparkshim/policy.json only: the test's own for the run
# (lib.sh install_test_policy, after install_package), the previous one back at exit.
install_test_policy "$CGROUP_PARENT" "$WORK/reports" '{"enabled": true, "force_bytes": "4m", "log": "warn"}' "$WORK" || exit 1

# --- the cluster ------------------------------------------------------------------------------

start_master || exit 1
progress "Master at $MASTER (pid ${PIDS[0]}); starting a Worker with 2 cores, 2g"
"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
  --host 127.0.0.1 --port 0 --webui-port 0 --cores 2 --memory 2g \
  --work-dir "$WORK/worker" "$MASTER" >"$WORK/logs/worker.log" 2>&1 &
PIDS+=($!)
wait_log "$WORK/logs/worker.log" 'Successfully registered with master' 120 "${PIDS[1]}" >/dev/null || exit 1
progress "Worker registered (pid ${PIDS[1]})"

# submit NAME EXECUTOR_JAVA_HOME DRIVER_JAVA_HOME: run the sort on the cluster; sets APP (the
# application's id, from the Worker's work dir) and prints the job's line.
submit() {
  local name=$1 ejh=$2 djh=$3 before after rc=0
  before=$(ls "$WORK/worker")
  progress "$name: submitting the sort of $ROWS rows (spark-defaults.conf: spark.executorEnv.JAVA_HOME $ejh; the driver's JAVA_HOME $djh)"
  # the admin's one line, in the spark-defaults.conf of the submitting side
  mkdir -p "$WORK/conf-$name"
  printf 'spark.executorEnv.JAVA_HOME %s\n' "$ejh" >"$WORK/conf-$name/spark-defaults.conf"
  SPARK_CONF_DIR=$WORK/conf-$name JAVA_HOME=$djh timeout 300 "$SPARK_HOME/bin/spark-submit" \
    --master "$MASTER" --deploy-mode client --class SortJob \
    --conf spark.cores.max=2 --conf spark.executor.cores=1 --conf spark.executor.memory=512m \
    --conf spark.driver.memory=512m \
    --conf spark.scheduler.minRegisteredResourcesRatio=1.0 \
    --conf spark.scheduler.maxRegisteredResourcesWaitingTime=120s \
    --conf spark.local.dir="$SPARK_LOCAL_DIRS" \
    "$WORK/sortjob.jar" "$ROWS" spark.master="$MASTER" spark.app.name="sparkshim-standalone-$name" \
    >"$WORK/$name.out" 2>"$WORK/$name.err" &
  # in the background: bash runs the TERM trap (the cleanup) only between commands
  SUBMIT=$!
  wait "$SUBMIT" || rc=$?
  SUBMIT=
  after=$(ls "$WORK/worker")
  APP=$(comm -13 <(echo "$before") <(echo "$after") | head -n 1)
  if [ "$rc" != 0 ] || ! grep -q '^sortjob ' "$WORK/$name.out"; then
    echo "FAIL: $name: spark-submit exited $rc:" >&2
    grep -vE '^\s+at ' "$WORK/$name.err" | tail -n 25 >&2
    [ -n "$APP" ] && for d in "$WORK/worker/$APP"/*/; do
      echo "--- executor $d stderr:" >&2
      grep -vE '^\s+at ' "$d/stderr" | tail -n 15 >&2
    done
    return 1
  fi
  progress "$name: $APP done: $(grep '^sortjob ' "$WORK/$name.out")"
}

submit plain "$JDK" "$JDK" || exit 1
PLAIN_APP=$APP
submit wrapped "$JH" "$JH" || exit 1
WRAPPED_APP=$APP

# The Worker kills an application's executors when it ends (TERM, exit 143); their
# sparkshim writes its final report once the JVM is gone. Wait for one per executor.
progress "waiting for the executors of $WRAPPED_APP to end and their final reports"
nexec=$(find "$WORK/worker/$WRAPPED_APP" -mindepth 1 -maxdepth 1 -type d | wc -l)
for _ in $(seq 150); do
  finals=$(cat "$WORK/reports"/*.jsonl 2>/dev/null | grep -c '"kind": *"final"' || true)
  [ "$finals" -ge "$nexec" ] && break
  sleep 0.2
done
sleep 1 # a report that should not be there (a second one, the driver's) gets its chance

# --- checks -----------------------------------------------------------------------------------
progress "checking"
python3 - "$WORK" "$JDK" "$JH" "$PLAIN_APP" "$WRAPPED_APP" <<'PY' || fail "see above"
import glob, json, os, re, sys

work, jdk, jh, plain_app, app = sys.argv[1:6]
failures = 0

def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)

def field(line, key):
    m = re.search(r"(?:^| )" + key + r"=(\S+)", line)
    return m.group(1) if m else None

def executors(app_id):
    """executor id -> (the Worker's launch command, the pid the executor logged)"""
    out = {}
    for d in sorted(glob.glob(f"{work}/worker/{app_id}/*/")):
        eid = os.path.basename(d.rstrip("/"))
        text = open(d + "stderr", errors="replace").read()
        m = re.search(r'^Spark Executor Command: "(.*)"$', text, re.M)
        p = re.search(r"Started daemon with process name: (\d+)@", text)
        # ExecutorRunner writes the command as "arg" "arg" ..., unescaped
        argv = m.group(1).split('" "') if m else [None]
        out[eid] = (argv[0], int(p.group(1)) if p else None)
        commands[(app_id, eid)] = argv
    return out
commands = {}

# 1. the Worker started run 1's executors with the JDK, run 2's with the wrapper
plain_ex, ex = executors(plain_app), executors(app)
if len(ex) < 2:
    fail(f"{app}: {len(ex)} executor(s), want at least 2")
for eid, (java, pid) in plain_ex.items():
    if java != jdk + "/bin/java":
        fail(f"{plain_app}/{eid}: the Worker ran {java}, want {jdk}/bin/java")
for eid, (java, pid) in ex.items():
    if java != jh + "/bin/java":
        fail(f"{app}/{eid}: the Worker ran {java}, want the wrapper {jh}/bin/java")
    if pid is None:
        fail(f"{app}/{eid}: the executor's stderr has no 'Started daemon with process name'")

# 2. the reports: one per executor of run 2, nothing else
docs = {}
for path in sorted(glob.glob(f"{work}/reports/*")):
    for n, line in enumerate(open(path), 1):
        try:
            d = json.loads(line)
        except ValueError as e:
            fail(f"{path}:{n}: not JSON: {e}")
            continue
        docs.setdefault(path, []).append(d)
templated = not any("{app_id}" in os.path.basename(p) for p in docs)
finals, foreign = {}, {}
for path, ds in docs.items():
    for d in ds:
        ident = d["identity"]
        key = (ident["app_id"], ident["executor_id"])
        if key[0] != app or key[1] not in ex:
            foreign.setdefault((path, key[0], key[1], ident["command"], ident["pid"]), []).append(d["kind"])
            continue
        if templated and os.path.basename(path) != f"{key[0]}.{key[1]}.jsonl":
            fail(f"{path}: holds the report of {key[0]}/{key[1]}")
        if d["kind"] == "final":
            if key in finals:
                fail(f"{app}/{key[1]}: more than one final report ({finals[key][0]}, {path})")
            finals[key] = (path, d)
for (path, aid, eid, command, pid), kinds in sorted(foreign.items()):
    fail(f"{path}: {len(kinds)} report(s) ({kinds.count('final')} final) for app {aid!r} executor {eid!r} "
         f"({command}, pid {pid}): only the executors of {app} ({', '.join(sorted(ex))}) were wrapped")
if not templated:
    fail("report.path's {app_id}/{executor_id} were not expanded: the executors share one file")
spilled = 0
print(f"executors launched through sparkshim ({app}):")
for eid, (java, pid) in sorted(ex.items()):
    key = (app, eid)
    if key not in finals:
        fail(f"{app}/{eid}: no final report (executor pid {pid})")
        continue
    path, d = finals[key]
    ident, agent = d["identity"], d["agent"] or {}
    totals = agent.get("totals") or {}
    forced = totals.get("forced_spills") or 0
    spilled += forced
    print(f"  app {app} executor {eid}: pid {ident['pid']} (Spark's executor log: {pid}) command {ident['command']} mode {ident['mode']} "
          f"exit {d['exit']['status'] if d.get('exit') else None} enforced {d['enforcement']['enforced']} "
          f"({d['enforcement']['reason']}) agent injected {agent.get('injected')} forced spills {forced} "
          f"-> {os.path.basename(path)}")
    if ident["pid"] != pid:
        fail(f"{app}/{eid}: report pid {ident['pid']}, the executor logged pid {pid}")
    if ident["command"] != jdk + "/bin/java":
        fail(f"{app}/{eid}: report command {ident['command']}, want the real {jdk}/bin/java")
    # the command line as started: the Worker's, but the real java for the wrapper's, and
    # the agent's -agentpath: that sparkshim added
    want = [jdk + "/bin/java"] + commands[key][1:]
    argv = ident.get("argv")
    got = [a for a in argv if not a.startswith("-agentpath:")] if argv is not None else None
    if got != want or ident.get("argv_truncated"):
        fail(f"{app}/{eid}: report argv {argv} (truncated: {ident.get('argv_truncated')}), "
             f"the Worker started {commands[key]}")
    else:
        print(f"  app {app} executor {eid}: report argv = the Worker's command ({len(argv)} arguments, "
              f"{sum(a.startswith('-agentpath:') for a in argv)} -agentpath: added)")
    if ident["mode"] != "wrap":
        fail(f"{app}/{eid}: mode {ident['mode']}, want wrap")
    if d["enforcement"]["enforced"]:
        fail(f"{app}/{eid}: enforced on a host whose cgroup v2 has no controllers?")
    if not agent.get("injected"):
        fail(f"{app}/{eid}: the policy's agent was not injected: {agent.get('reason')}")
if spilled <= 0:
    fail(f"{app}: the agent forced no spill (policy agent.force_bytes 4m)")

# 3. the results
plain = open(f"{work}/plain.out").read().strip().splitlines()[-1]
wrapped = open(f"{work}/wrapped.out").read().strip().splitlines()[-1]
print(f"result without sparkshim: {plain}")
print(f"result with sparkshim:    {wrapped}")
for k in ("rows", "checksum", "partitions"):
    if field(plain, k) != field(wrapped, k):
        fail(f"{k}: {field(wrapped, k)} with sparkshim, {field(plain, k)} without")
for name, line in (("plain", plain), ("wrapped", wrapped)):
    if field(line, "ordered") != "true":
        fail(f"{name}: result not in order")
if field(plain, "memoryBytesSpilled") != "0" or field(plain, "diskBytesSpilled") != "0":
    fail(f"without sparkshim Spark spilled already: {plain}")
if int(field(wrapped, "memoryBytesSpilled")) <= 0 or int(field(wrapped, "diskBytesSpilled")) <= 0:
    fail(f"with the agent Spark's own spill metrics show no spill: {wrapped}")
if failures == 0:
    print(f"same rows ({field(plain, 'rows')}) and checksum ({field(plain, 'checksum')}) with and without "
          f"sparkshim; Spark spilled {field(wrapped, 'diskBytesSpilled')} bytes to disk with the agent "
          f"({spilled} forced spills), 0 without")
sys.exit(1 if failures else 0)
PY

if [ "$FAILURES" -ne 0 ]; then
  echo "--- master/worker logs: $WORK/logs (KEEP_WORK=1 keeps them)"
  grep -E 'ERROR|Executor .* finished' "$WORK/logs/worker.log" | tail -n 10
  exit 1
fi
progress "all checks passed"
