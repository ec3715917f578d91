#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Executor rolling on a real Spark standalone cluster (issue 14): sparkshim sees an executor
# write more than rolling.disk_write.bytes to local disk, sends its JVM SIGPWR, and Spark
# decommissions it mid-job: no new tasks, its shuffle files migrated to the other executor,
# exit 0; the job loses no task and returns what it returns without rolling.
#
# A real Spark distribution (scripts/spark-dist) runs a Master and two Workers on the
# loopback, 1 core each (one executor each). Worker A's local dirs (where its executors
# write their shuffle files) are on the disk, Worker B's on tmpfs (/dev/shm): tmpfs is no
# local disk, the kernel counts no write to it (docs/rolling.md), so only an executor of
# Worker A can cross the threshold, and the one rolled has a peer that takes its blocks.
# Every executor's JAVA_HOME is `sparkshim java-home` of the installed package
# (tests/cluster/lib.sh's install_package); the policy at /etc/sparkshim/policy.json is the
# test's while it runs. The job (tests/cluster/RollJob.java, spark-submit in client mode,
# spark.decommission.enabled, spark.storage.decommission.{,shuffleBlocks.,rddBlocks.}enabled,
# the event log on) writes a few hundred MiB of shuffle in its map stage and sorts and
# checksums it (order-sensitive) in a reduce stage:
#   1. the policy without `rolling`;
#   2. the policy with `"rolling": {"disk_write": {"bytes": T}}`, T = 1.2 x the shuffle
#      bytes run 1's executor of Worker A wrote (Spark's figure; rolling's, /proc/PID/io,
#      counts each map output about twice, see below): it crosses T a little after
#      half of the map stage, which runs on long enough for its decommission to end before the reduce
#      stage fetches the map outputs (a reduce that starts before the migration ends may
#      fetch from the executor that left, a FetchFailed: Spark's race, not the roll's).
#   3. the same policy, spark.decommission.enabled=false: the JVMs do not catch SIGPWR;
#      sparkshim sends nothing, says so in one warning in the executor's log, records
#      "unavailable" decisions (sigpwr_caught false); every executor ends with the Worker's
#      TERM (143), Spark never decommissions, the result is run 1's.
# Checks of run 2: sparkshim's final report of at least one executor (of Worker A; the
# replacement the Master starts there is not expected to be, and each at most once) has the
# decision
# (decommission, disk_write, value >= threshold), state decommissioning and exit 0, and
# its Prometheus file showed the decisions counter, sparkshim's warning "rolling: ... SIGPWR
# to pid N" is in the executor's log (the java personality logs warnings only); the rolled
# executor's own log has Spark's decommission (the signal, "Decommission executor",
# migrated shuffle files, "No running tasks, all blocks migrated, stopping."); the event
# log has its removal with the decommission reason, every task ended in Success and no
# stage ran twice; the result (rows, checksum, order) is run 1's. Run 1: no report has a
# rolling decision, no executor decommissioned. The figures (MiB migrated, tasks, the
# roll's time, run times) are printed for docs/rolling.md.
#
# Usage: rolling.sh LINE SOURCE_ROOT JDK_HOME
set -euo pipefail

LINE=${1:?usage: rolling.sh LINE SOURCE_ROOT JDK_HOME}
SRC=${2:?}
JDK=${3:-}
# the job: MAPS map tasks of RECORDS records of VALUE bytes, each held MAP_SLEEP_MS; REDUCES
# partitions, each held REDUCE_SLEEP_MS
MAPS=${SPARKSHIM_ROLLING_MAPS:-48}
RECORDS=${SPARKSHIM_ROLLING_RECORDS:-40000}
VALUE=${SPARKSHIM_ROLLING_VALUE:-256}
MAP_SLEEP_MS=${SPARKSHIM_ROLLING_MAP_SLEEP_MS:-800}
REDUCES=${SPARKSHIM_ROLLING_REDUCES:-16}
REDUCE_SLEEP_MS=${SPARKSHIM_ROLLING_REDUCE_SLEEP_MS:-500}
# shellcheck source=/dev/null
. "$SRC/tests/cluster/lib.sh"
suite_helpers "rolling-$LINE"

[ "$(id -u)" = 0 ] || skip "not root: the test installs its policy at /etc/sparkshim/policy.json"
need_jdk java javac jar
command -v python3 >/dev/null || skip "python3 is missing"
[ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] || skip "/dev/shm is not a tmpfs: Worker B's local dirs need one"
[ "$(stat -f -c %T /tmp)" != tmpfs ] || skip "/tmp is a tmpfs: Worker A's local dirs must be on a disk"

# --- the sparkshim under test: the installed package ----------------------------------------
use_package
progress "testing the installed package: $SPARKSHIM"

WORK=$(mktemp -d /tmp/sparkshim-rolling.XXXXXX)
SHM=$(mktemp -d /dev/shm/sparkshim-rolling.XXXXXX)
chmod 0755 "$WORK" "$SHM"
cd "$WORK" # every process of the test runs in $WORK: the cleanup finds any that is left
PIDS=()   # the Master and the Workers
SUBMIT=   # spark-submit while it runs
WATCH=    # the Prometheus watcher while it runs
CGROUP_PARENT=sparkshim-test-rolling

cleanup() {
  local rc=$? pid
  set +e
  cd /
  for pid in ${WATCH:-} ${SUBMIT:-} "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$pid" 2>/dev/null
  done
  cleanup_suite "$WORK" "$CGROUP_PARENT"
  rm -rf "$SHM"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

spark_dist "$LINE"
export JAVA_HOME=$JDK
mkdir -p "$SPARK_CONF_DIR" "$WORK/local-driver" "$WORK/local-a" "$SHM/local-b" "$WORK/reports" \
  "$WORK/prom" "$WORK/prom-seen" "$WORK/worker-a" "$WORK/worker-b" "$WORK/logs" "$WORK/events"
chmod 0755 "$WORK/reports" "$WORK/prom"

"$JDK/bin/javac" -d "$WORK/classes" -cp "$SPARK_HOME/jars/*" "$SRC/tests/cluster/RollJob.java"
"$JDK/bin/jar" cf "$WORK/rolljob.jar" -C "$WORK/classes" .

make_java_home || exit 1

# The test's policy (lib.sh), with a Prometheus file per executor; set_rolling JSON puts
# JSON (or nothing: "") as its `rolling` section.
install_test_policy "$CGROUP_PARENT" "$WORK/reports" '{"enabled": false}' "$WORK" || exit 1
set_rolling() {
  python3 - "$WORK/policy.new" "$WORK/policy.run" "$WORK/prom" "$1" <<'PY' || return 1
import json, sys
base, out, prom, rolling = sys.argv[1:5]
policy = json.load(open(base))
policy["report"]["prometheus_path"] = prom + "/sparkshim-{app_id}-{executor_id}.prom"
if rolling:
    policy["rolling"] = json.loads(rolling)
with open(out, "w") as f:
    json.dump(policy, f, indent=2)
    f.write("\n")
PY
  install -m 0644 -o root -g root "$WORK/policy.run" /etc/sparkshim/policy.json.tmp.$$ || return 1
  mv -f /etc/sparkshim/policy.json.tmp.$$ /etc/sparkshim/policy.json || return 1
  progress "policy: $(tr -d '\n ' </etc/sparkshim/policy.json)"
}

# --- the cluster ------------------------------------------------------------------------------

start_master || exit 1
progress "Master at $MASTER; starting Worker A (127.0.0.1, local dirs on disk) and Worker B (127.0.0.2, on tmpfs), 1 core each"
for w in a b; do
  if [ "$w" = a ]; then dirs=$WORK/local-a ip=127.0.0.1; else dirs=$SHM/local-b ip=127.0.0.2; fi
  SPARK_LOCAL_DIRS=$dirs SPARK_LOCAL_IP=$ip "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
    --host "$ip" --port 0 --webui-port 0 --cores 1 --memory 1g \
    --work-dir "$WORK/worker-$w" "$MASTER" >"$WORK/logs/worker-$w.log" 2>&1 &
  PIDS+=($!)
done
wait_log "$WORK/logs/worker-a.log" 'Successfully registered with master' 120 "${PIDS[1]}" >/dev/null || exit 1
wait_log "$WORK/logs/worker-b.log" 'Successfully registered with master' 120 "${PIDS[2]}" >/dev/null || exit 1
progress "Workers registered"

# watch_prom: copies every Prometheus file that shows a rolling decision into prom-seen/
# (sparkshim removes an executor's file when the executor ends).
watch_prom() {
  local f
  while :; do
    for f in "$WORK"/prom/*.prom; do
      if grep -q '^sparkshim_executor_rolling_decisions_total{' "$f" 2>/dev/null; then
        cp "$f" "$WORK/prom-seen/" 2>/dev/null || true
      fi
    done
    sleep 0.3
  done
}

# submit NAME: runs the job; sets APP (the application's id) and prints the job's line
submit() {
  local name=$1 rc=0 before
  before=$(ls "$WORK/events")
  progress "$name: submitting the job ($MAPS x $RECORDS records of $VALUE bytes, $REDUCES reduces)"
  JAVA_HOME=$JH timeout 300 "$SPARK_HOME/bin/spark-submit" \
    --master "$MASTER" --deploy-mode client --class RollJob \
    --conf spark.executorEnv.JAVA_HOME="$JH" \
    --conf spark.cores.max=2 --conf spark.executor.cores=1 --conf spark.executor.memory=640m \
    --conf spark.driver.memory=640m --conf spark.driver.host=127.0.0.1 \
    --conf spark.ui.enabled=false \
    --conf spark.scheduler.minRegisteredResourcesRatio=1.0 \
    --conf spark.scheduler.maxRegisteredResourcesWaitingTime=120s \
    --conf spark.local.dir="$WORK/local-driver" \
    --conf spark.serializer=org.apache.spark.serializer.KryoSerializer \
    --conf spark.eventLog.enabled=true --conf spark.eventLog.dir="file://$WORK/events" \
    --conf spark.eventLog.compress=false --conf spark.eventLog.rolling.enabled=false \
    --conf spark.decommission.enabled="$DECOMMISSION" \
    --conf spark.storage.decommission.enabled=true \
    --conf spark.storage.decommission.shuffleBlocks.enabled=true \
    --conf spark.storage.decommission.rddBlocks.enabled=true \
    --conf spark.storage.decommission.replicationReattemptInterval=2s \
    "$WORK/rolljob.jar" "$MAPS" "$RECORDS" "$VALUE" "$MAP_SLEEP_MS" "$REDUCES" "$REDUCE_SLEEP_MS" \
    spark.app.name="sparkshim-rolling-$name" \
    >"$WORK/$name.out" 2>"$WORK/$name.err" &
  # in the background: bash runs the TERM trap (the cleanup) only between commands
  SUBMIT=$!
  wait "$SUBMIT" || rc=$?
  SUBMIT=
  APP=$(comm -13 <(echo "$before") <(ls "$WORK/events") | head -n 1)
  if [ "$rc" != 0 ] || ! grep -q '^rolljob ' "$WORK/$name.out"; then
    echo "FAIL: $name: spark-submit exited $rc:" >&2
    grep -vE '^\s+at ' "$WORK/$name.err" | tail -n 25 >&2
    [ -n "$APP" ] && for d in "$WORK"/worker-?/"$APP"/*/; do
      echo "--- executor $d stderr:" >&2
      grep -vE '^\s+at ' "$d/stderr" | tail -n 15 >&2
    done
    return 1
  fi
  progress "$name: $APP done: $(grep '^rolljob ' "$WORK/$name.out")"
}

# wait_finals APP: until every executor of APP has its final report (the Worker TERMs them
# when the application ends; sparkshim writes the final report once the JVM is gone)
wait_finals() {
  local app=$1 nexec finals
  nexec=$(find "$WORK"/worker-?/"$app" -mindepth 1 -maxdepth 1 -type d | wc -l)
  for _ in $(seq 150); do
    finals=$(cat "$WORK/reports/$app".*.jsonl 2>/dev/null | grep -c '"kind": *"final"' || true)
    [ "$finals" -ge "$nexec" ] && break
    sleep 0.2
  done
  progress "$app: $nexec executor(s), $finals final report(s)"
}

DECOMMISSION=true
set_rolling "" || exit 1
submit plain || exit 1
PLAIN_APP=$APP
wait_finals "$PLAIN_APP"

# The threshold: 1.2 x the shuffle bytes run 1's executor of Worker A wrote (its tasks'
# "Shuffle Bytes Written" in run 1's event log, Spark's own figure: the report's disk figure
# prefers the block probe on this host, which misses the kernel's writeback). Rolling's
# figure here is /proc/PID/io (counted when pages are dirtied), about twice Spark's: each
# map task writes its 16 partitions to files of their own, then copies them into its data
# file (BypassMergeSortShuffleWriter). So the executor crosses T at about 60 % of its share
# of the map stage, and its replacement gets too few map tasks to cross it before the stage
# ends: a late roll would race the reduce stage's fetches (a FetchFailed, docs/rolling.md).
THRESHOLD=$(python3 - "$WORK" "$PLAIN_APP" <<'PY'
import glob, json, os, sys
work, app = sys.argv[1:3]
a = {os.path.basename(d.rstrip("/")) for d in glob.glob(f"{work}/worker-a/{app}/*/")}
logs = [p for p in glob.glob(f"{work}/events/{app}*") if os.path.isfile(p)]
if not a or len(logs) != 1:
    print(f"FAIL: run 1: Worker A's executors {sorted(a)}, event logs {logs}", file=sys.stderr)
    sys.exit(1)
written = total = 0
for line in open(logs[0]):
    e = json.loads(line)
    if e.get("Event") != "SparkListenerTaskEnd":
        continue
    w = ((e.get("Task Metrics") or {}).get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0)
    total += w
    if e["Task Info"]["Executor ID"] in a:
        written += w
print(f"run 1: Worker A's executor wrote {written} of the job's {total} bytes of shuffle",
      file=sys.stderr)
if written < total // 4:
    print("FAIL: run 1: Worker A's executor wrote less than a quarter of the shuffle", file=sys.stderr)
    sys.exit(1)
print(int(written * 1.2))
PY
) || exit 1
set_rolling "{\"grace_seconds\": 120, \"disk_write\": {\"bytes\": $THRESHOLD}}" || exit 1
watch_prom &
WATCH=$!
submit rolled || exit 1
ROLLED_APP=$APP
wait_finals "$ROLLED_APP"
kill "$WATCH" 2>/dev/null || true
wait "$WATCH" 2>/dev/null || true
WATCH=

# 3. the same policy, Spark's decommission off: its JVMs do not catch SIGPWR, and sparkshim
# sends nothing (SIGPWR would kill them), says so once in the executor's log and counts the
# firing in the report as unavailable; the job runs as in run 1.
# (SPARKSHIM_ROLLING_OFF_RUN=0 skips it: CI runs it on one line, the shim's side is the same)
if [ "${SPARKSHIM_ROLLING_OFF_RUN:-1}" != 0 ]; then
DECOMMISSION=false
submit off || exit 1
OFF_APP=$APP
wait_finals "$OFF_APP"
python3 - "$WORK" "$OFF_APP" "$THRESHOLD" <<'PY' || fail "decommission off: see above"
import glob, json, os, re, sys
work, app, threshold = sys.argv[1], sys.argv[2], int(sys.argv[3])
failures = 0
def fail(msg):
    global failures
    failures += 1
    print("FAIL: off: " + msg)
fired = 0
for d in sorted(glob.glob(f"{work}/worker-?/{app}/*/")):
    eid, worker = os.path.basename(d.rstrip("/")), d.split("/")[-4][-1]
    log = open(d + "stderr", errors="replace").read()
    finals = [json.loads(l) for p in glob.glob(f"{work}/reports/{app}.{eid}.jsonl") for l in open(p)]
    finals = [x for x in finals if x["kind"] == "final"]
    if len(finals) != 1:
        fail(f"executor {eid}: {len(finals)} final reports")
        continue
    r, st = finals[0]["rolling"], finals[0]["exit"]["status"]
    acts = [x["action"] for x in r["decisions"]] if r else None
    warnings = re.findall(r"sparkshim\[\d+\]: warning: rolling: .*", log)
    print(f"off: executor {eid} (worker {worker}): exit {st}, sigpwr_caught {r and r['sigpwr_caught']}, "
          f"decisions {acts}, {len(warnings)} rolling warning(s)" + (f": {warnings[0]}" if warnings else ""))
    if r is None or r["sigpwr_caught"] is not False or r["counts"]["decommission"] != 0 or \
            set(acts) - {"unavailable"} or r["state"] != "watching":
        fail(f"executor {eid}: rolling {r}: want sigpwr_caught false, only unavailable decisions")
    if st != 143:
        fail(f"executor {eid}: exit {st}, want 143 (the Worker's TERM at the application's end)")
    if re.search(r"Decommission executor|Registering SIGPWR handler", log):
        fail(f"executor {eid}: Spark decommissioned, or registered its handler, with decommission off")
    if acts:
        fired += 1
        if len(warnings) != 1 or "does not catch SIGPWR" not in warnings[0] or "SIGPWR to pid" in warnings[0]:
            fail(f"executor {eid}: rolling warnings {warnings}: want one, saying the JVM does not catch SIGPWR")
    elif warnings:
        fail(f"executor {eid}: rolling warnings {warnings} without a decision")
if not fired:
    fail("the disk_write trigger never fired")
sys.exit(1 if failures else 0)
PY
fi

# --- checks -----------------------------------------------------------------------------------
progress "checking"
python3 - "$WORK" "$PLAIN_APP" "$ROLLED_APP" "$THRESHOLD" <<'PY' || fail "see above"
import glob, json, os, re, sys

work, plain_app, app, threshold = sys.argv[1:5]
threshold = int(threshold)
failures = 0

def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)

def field(line, key):
    m = re.search(r"(?:^| )" + key + r"=(\S+)", line)
    return m.group(1) if m else None

def mib(s):
    """Utils.bytesToString: '12.3 MiB', '512.0 B', '1024.0 KiB' -> MiB"""
    n, unit = s.split()
    return float(n) * {"B": 1 / 2**20, "KiB": 1 / 2**10, "MiB": 1, "GiB": 2**10}[unit]

def executors(app_id):
    """executor id -> (worker, stderr text)"""
    out = {}
    for d in sorted(glob.glob(f"{work}/worker-?/{app_id}/*/")):
        worker = d.split("/")[-4][-1]
        out[os.path.basename(d.rstrip("/"))] = (worker, open(d + "stderr", errors="replace").read())
    return out

def finals(app_id):
    out = {}
    for path in glob.glob(f"{work}/reports/{app_id}.*.jsonl"):
        for line in open(path):
            d = json.loads(line)
            if d["kind"] == "final":
                eid = d["identity"]["executor_id"]
                if eid in out:
                    fail(f"{app_id}/{eid}: more than one final report")
                out[eid] = d
    return out

def events(app_id):
    path = f"{work}/events/{app_id}"
    if not os.path.exists(path):
        fail(f"no event log {path}")
        return []
    return [json.loads(line) for line in open(path)]

# 1. sparkshim's reports
for run, app_id in (("plain", plain_app), ("rolled", app)):
    ex, fin = executors(app_id), finals(app_id)
    if len(ex) < 2:
        fail(f"{run}: {app_id}: {len(ex)} executor(s), want at least 2")
    for eid in ex:
        if eid not in fin:
            fail(f"{run}: {app_id}/{eid}: no final report")
    for eid, d in sorted(fin.items()):
        r = d.get("rolling")
        st = d["exit"]["status"] if d.get("exit") else None
        print(f"{run}: executor {eid} (worker {ex.get(eid, ('?',))[0]}): exit {st}, disk written "
              f"{d['usage']['disk']['write_bytes']} bytes ({d['usage']['sources']['disk']}), rolling "
              + (json.dumps({k: r[k] for k in ('sigpwr_caught', 'state', 'counts')}) if r else "null"))

ex, fin = executors(app), finals(app)
rolled = {}
for eid, d in fin.items():
    r = d.get("rolling")
    if r is None:
        fail(f"rolled/{eid}: the report has no rolling object (the policy has rolling)")
        continue
    decisions = r.get("decisions") or []
    dec = [x for x in decisions if x["action"] == "decommission"]
    others = [x for x in decisions if x["action"] != "decommission"]
    if others:
        fail(f"rolled/{eid}: decisions other than decommission: {others}")
    if len(dec) > 1:
        fail(f"rolled/{eid}: {len(dec)} decommission decisions, want at most one")
    if dec:
        rolled[eid] = (d, dec[0])
for eid, d in finals(plain_app).items():
    if d.get("rolling") is not None:
        fail(f"plain/{eid}: rolling {d['rolling']}: want null without a rolling section")

if not rolled:
    fail("no executor was rolled")
first_roll = None
for eid, (d, x) in sorted(rolled.items()):
    r = d["rolling"]
    worker, log = ex.get(eid, ("?", ""))
    if x["trigger"] != "disk_write" or x["unit"] != "bytes" or x["threshold"] != threshold \
            or not x["value"] >= threshold:
        fail(f"rolled/{eid}: decision {x}: want disk_write, bytes, value >= threshold {threshold}")
    if r.get("sigpwr_caught") is not True or r.get("state") != "decommissioning":
        fail(f"rolled/{eid}: sigpwr_caught {r.get('sigpwr_caught')}, state {r.get('state')}")
    if (r.get("counts") or {}).get("decommission") != 1:
        fail(f"rolled/{eid}: counts {r.get('counts')}")
    status = d["exit"]["status"] if d.get("exit") else None
    if status != 0:
        fail(f"rolled/{eid}: exit {status}, want 0 (Spark's decommission ends with exitExecutor(0))")
    if worker != "a":
        fail(f"rolled/{eid}: on worker {worker}, whose local dirs are on tmpfs (no disk write)")
    # sparkshim's warning and Spark's decommission, in the executor's log
    wants = [r"sparkshim\[\d+\]: warning: rolling: disk_write: .*: SIGPWR to pid \d+",
             r"Registering SIGPWR handler to trigger decommissioning",
             r"Decommission executor",
             r"Will exit when finished decommissioning",
             r"Migrated \S+ \(size: ",
             r"No running tasks, all blocks migrated, stopping\."]
    for w in wants:
        if not re.search(w, log):
            fail(f"rolled/{eid}: no '{w}' in its log (worker-{worker}/{app}/{eid}/stderr)")
    migrated = [mib(m) for m in re.findall(r"Migrated \S+ \(size: ([\d.]+ \w+)\)", log)]
    print(f"rolled: executor {eid}: decision at age {x['age_seconds']} s: {x['reason']}")
    print(f"rolled: executor {eid}: {len(migrated)} shuffle files migrated, {sum(migrated):.1f} MiB")
    rolled[eid] = (d, x, migrated)

# the Prometheus counter, as the rolled executor's file showed it while it ran
seen = {}
for path in glob.glob(f"{work}/prom-seen/*.prom"):
    for line in open(path):
        m = re.match(r'sparkshim_executor_rolling_decisions_total\{(.*)\} (\S+)$', line.strip())
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(1)))
            seen[(labels.get("executor_id"), labels.get("trigger"), labels.get("action"))] = float(m.group(2))
for eid in rolled:
    v = seen.get((eid, "disk_write", "decommission"))
    if v != 1:
        fail(f"rolled/{eid}: the Prometheus file showed sparkshim_executor_rolling_decisions_total"
             f"{{trigger=\"disk_write\",action=\"decommission\"}} {v}, want 1 (seen: {seen})")
    else:
        print(f"rolled: executor {eid}: Prometheus sparkshim_executor_rolling_decisions_total"
              f"{{executor_id=\"{eid}\",trigger=\"disk_write\",action=\"decommission\"}} 1")

# 2. Spark's event log: the removal's reason, no failed task, no stage run twice
for run, app_id in (("plain", plain_app), ("rolled", app)):
    evs = events(app_id)
    ends = [e for e in evs if e["Event"] == "SparkListenerTaskEnd"]
    bad = [e for e in ends if e["Task End Reason"]["Reason"] != "Success"]
    for e in bad[:5]:
        fail(f"{run}: task {e['Task Info']['Task ID']} of stage {e['Stage ID']} on executor "
             f"{e['Task Info']['Executor ID']} ended {json.dumps(e['Task End Reason'])}")
    attempts = [(e["Stage Info"]["Stage ID"], e["Stage Info"]["Stage Attempt ID"])
                for e in evs if e["Event"] == "SparkListenerStageSubmitted"]
    if any(a != 0 for _, a in attempts):
        fail(f"{run}: a stage was resubmitted: {attempts}")
    # the driver posts one per path that removes it: its own (the decommission's reason)
    # and the Master's ("Command exited with code 0")
    removed = {}
    for e in evs:
        if e["Event"] == "SparkListenerExecutorRemoved":
            removed.setdefault(e["Executor ID"], []).append(e["Removed Reason"])
    added = [e["Executor ID"] for e in evs if e["Event"] == "SparkListenerExecutorAdded"]
    per_exec = {}
    for e in ends:
        per_exec[e["Task Info"]["Executor ID"]] = per_exec.get(e["Task Info"]["Executor ID"], 0) + 1
    print(f"{run}: event log: {len(ends)} tasks ended ({len(bad)} not Success), per executor {per_exec}; "
          f"stages {sorted(set(attempts))}; executors added {added}; removed {removed}")
    if run == "plain":
        for eid, whys in removed.items():
            if any("decommission" in why.lower() for why in whys):
                fail(f"plain: executor {eid} removed with '{why}' without rolling")
        continue
    for eid in rolled:
        whys = removed.get(eid, [])
        if not any(why.startswith("Executor decommission: ") for why in whys):
            fail(f"rolled/{eid}: SparkListenerExecutorRemoved reasons {whys}: want 'Executor decommission: ...'")
    stage_end = {e["Stage Info"]["Stage ID"]: e["Stage Info"].get("Completion Time")
                 for e in evs if e["Event"] == "SparkListenerStageCompleted"}
    start = next((e["Timestamp"] for e in evs if e["Event"] == "SparkListenerApplicationStart"), None)
    rm_time = {}
    for e in evs:
        if e["Event"] == "SparkListenerExecutorRemoved":
            rm_time.setdefault(e["Executor ID"], e["Timestamp"])
    for eid in rolled:
        if start and eid in rm_time:
            print(f"rolled: executor {eid} removed {(rm_time[eid] - start) / 1000:.1f} s after the "
                  f"application started; the stages ended at "
                  + ", ".join(f"{sid}: {(t - start) / 1000:.1f} s" for sid, t in sorted(stage_end.items()) if t))

# 3. the results
plain = open(f"{work}/plain.out").read().strip().splitlines()[-1]
roll = open(f"{work}/rolled.out").read().strip().splitlines()[-1]
if os.path.exists(f"{work}/off.out"):
    off = open(f"{work}/off.out").read().strip().splitlines()[-1]
    print(f"result with decommission off: {off}")
    for k in ("rows", "checksum", "partitions", "ordered", "failedTasks"):
        if field(plain, k) != field(off, k):
            fail(f"{k}: {field(off, k)} with decommission off, {field(plain, k)} without rolling")
print(f"result without rolling: {plain}")
print(f"result with rolling:    {roll}")
for k in ("rows", "checksum", "partitions"):
    if field(plain, k) != field(roll, k):
        fail(f"{k}: {field(roll, k)} with rolling, {field(plain, k)} without")
for name, line in (("plain", plain), ("rolled", roll)):
    if field(line, "ordered") != "true":
        fail(f"{name}: result not in order")
    if field(line, "failedTasks") != "0":
        fail(f"{name}: {field(line, 'failedTasks')} task(s) did not succeed")
print(f"figures: threshold {threshold / 2**20:.1f} MiB; shuffle write {int(field(roll, 'shuffleWrite')) / 2**20:.1f} MiB "
      f"(run 1: {int(field(plain, 'shuffleWrite')) / 2**20:.1f}); tasks {field(roll, 'tasks')} (run 1: {field(plain, 'tasks')}); "
      f"job {field(roll, 'seconds')} s (run 1: {field(plain, 'seconds')} s); "
      f"migrated {sum(sum(v[2]) for v in rolled.values()):.1f} MiB by {len(rolled)} rolled executor(s)")
sys.exit(1 if failures else 0)
PY

if [ "$FAILURES" -ne 0 ]; then
  echo "--- logs: $WORK (KEEP_WORK=1 keeps them)"
  exit 1
fi
progress "all checks passed"
