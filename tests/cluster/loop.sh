#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fleet loop closes by itself (issue 23, the CI instance): a real Spark standalone
# cluster (a Master and a Worker of scripts/spark-dist), the submitting side and the Worker
# both using `sparkshim java-home` of the installed package, a policy with tuner.apply
# "explore" and tuner.service naming the executors' report directory and the event log
# directory. The same real multi-join SQL job (tests/tuner/TpcdsJob.java: TPC-DS queries 17,
# 18 and 72, 8 to 11 tables each, on scripts/tpcds-data's data at scale factor 0.1) is
# submitted 3 times with a plain spark-submit and no sparkshim argument; between submissions
# the service's own command, as sparkshim-tune.service runs it (its ExecStart), does
# collection and publication.
# Checks:
#   - submission 1 adds nothing (nothing published yet); the pass after it publishes the
#     job for its user (root: the test submits as root), state explore;
#   - submissions 2 and 3 run with the published next configuration: their event logs hold
#     spark.sparkshim.config = the published next id, spark.sparkshim.job, and every
#     published setting; the user's own --conf spark.executor.cores stays; the executors'
#     reports show the published CPU request in sparkshim's plan;
#   - the result is the same every time (each query's rows and checksum), and each query
#     returns as many rows as DuckDB's answer to it on the same data;
#   - the agent measures the heap (agent.heap_threshold 0.99, no spill mode: it only
#     measures) and the history the service keeps has the executors' heap after GC, within
#     their heap, for submissions 1 and 2 (ingested by passes 1 and 2).
#
# Usage: loop.sh LINE SOURCE_ROOT JDK_HOME
set -euo pipefail

LINE=${1:?usage: loop.sh LINE SOURCE_ROOT JDK_HOME}
SRC=${2:?}
JDK=${3:-}
QUERIES=q17,q18,q72
# shellcheck source=/dev/null
. "$SRC/tests/cluster/lib.sh"
suite_helpers "loop-$LINE"

[ "$(id -u)" = 0 ] || skip "not root: the executors run the installed sparkshim as root (the Worker is root's)"
need_jdk java javac jar

use_package
UNIT=/lib/systemd/system/sparkshim-tune.service
[ -f "$UNIT" ] || { echo "FAIL: the package installed no $UNIT"; exit 1; }
PASS_CMD=$(sed -n 's/^ExecStart=//p' "$UNIT")
progress "testing the installed package: $SPARKSHIM; the service's command: $PASS_CMD"

WORK=$(mktemp -d /tmp/sparkshim-loop.XXXXXX)
chmod 0755 "$WORK"
cd "$WORK"
PIDS=()
SUBMIT=
CGROUP_PARENT=sparkshim-test-loop
SPARKSHIM_TEST_POLICY_STATE=untouched # cleanup_suite restores nothing: /etc is not touched
cleanup() {
  local rc=$? pid
  set +e
  cd /
  for pid in ${SUBMIT:-} "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null; done
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
mkdir -p "$SPARK_CONF_DIR" "$SPARK_LOCAL_DIRS" "$WORK/reports" "$WORK/events" "$WORK/worker" "$WORK/logs"
chmod 0755 "$WORK/reports" "$WORK/events"
"$JDK/bin/javac" -d "$WORK/classes" -cp "$SPARK_HOME/jars/*" "$SRC/tests/tuner/TpcdsJob.java"
"$JDK/bin/jar" cf "$WORK/tpcds.jar" -C "$WORK/classes" .
rc=0
TPCDS=$("$SRC/scripts/tpcds-data" 0.1 2>"$WORK/tpcds.err") || rc=$?
[ "$rc" = 77 ] && skip "no TPC-DS data: $(cat "$WORK/tpcds.err")"
[ "$rc" = 0 ] || { echo "FAIL: scripts/tpcds-data 0.1: $(cat "$WORK/tpcds.err")"; exit 1; }
progress "TPC-DS data (scale factor 0.1) in $TPCDS"

TUNER=$(python3 -c 'import json, sys; w = sys.argv[1]; print(json.dumps({"tuner": {
  "apply": "explore", "db": w + "/history.db", "runtime_target": 100, "runtime_allowance": 100,
  "heap": {"min": "512m", "max": "1g"}, "overhead_max": "1g",
  "service": {"reports": [w + "/reports"], "eventlogs": [w + "/events"],
              "publish_dir": w + "/published", "period_seconds": 10}}}))' "$WORK")
# the policy is the java home's (java-home --policy) and the service's (--policy): not
# /etc/sparkshim/policy.json, whose lock would keep the cluster suites waiting meanwhile
write_test_policy "$WORK/policy.json" "$CGROUP_PARENT" "$WORK/reports" '{"enabled": true, "heap_threshold": 0.99}' "$TUNER" || exit 1
progress "the test policy, $WORK/policy.json: $(tr -d '\n ' <"$WORK/policy.json")"
make_java_home "$WORK/policy.json" || exit 1
PASS_CMD+=" --policy $WORK/policy.json"

start_master || exit 1
"$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.worker.Worker \
  --host 127.0.0.1 --port 0 --webui-port 0 --cores 2 --memory 3g \
  --work-dir "$WORK/worker" "$MASTER" >"$WORK/logs/worker.log" 2>&1 &
PIDS+=($!)
wait_log "$WORK/logs/worker.log" 'Successfully registered with master' 120 "${PIDS[1]}" >/dev/null || exit 1
progress "Master $MASTER and a Worker (2 cores, 3g) up"

# the admin's lines: executors and the driver through the java home
mkdir -p "$WORK/conf"
printf 'spark.executorEnv.JAVA_HOME %s\n' "$JH" >"$WORK/conf/spark-defaults.conf"

# submit N: the sort, as a user types it; sets APP
submit() {
  local n=$1 before after rc=0
  before=$(ls "$WORK/worker")
  SPARK_CONF_DIR=$WORK/conf JAVA_HOME=$JH timeout 300 "$SPARK_HOME/bin/spark-submit" \
    --master "$MASTER" --deploy-mode client --name sparkshim-loop --class TpcdsJob \
    --conf spark.cores.max=2 --conf spark.executor.cores=1 --conf spark.driver.memory=512m \
    --conf spark.eventLog.enabled=true --conf spark.eventLog.dir="$WORK/events" \
    --conf spark.scheduler.minRegisteredResourcesRatio=1.0 \
    --conf spark.scheduler.maxRegisteredResourcesWaitingTime=120s \
    "$WORK/tpcds.jar" sparkshim-loop "$TPCDS" "$QUERIES" \
    >"$WORK/run$n.out" 2>"$WORK/run$n.err" &
  SUBMIT=$!
  wait "$SUBMIT" || rc=$?
  SUBMIT=
  after=$(ls "$WORK/worker")
  APP=$(comm -13 <(echo "$before") <(echo "$after") | head -n 1)
  if [ "$rc" != 0 ] || ! grep -q '^tpcds ok ' "$WORK/run$n.out"; then
    echo "FAIL: submission $n: spark-submit exited $rc:" >&2
    grep -vE '^\s+at ' "$WORK/run$n.err" | tail -n 25 >&2
    return 1
  fi
  # the executors end when the application does; their final reports follow
  local nexec finals
  nexec=$(find "$WORK/worker/$APP" -mindepth 1 -maxdepth 1 -type d | wc -l)
  for _ in $(seq 150); do
    finals=$(cat "$WORK/reports/$APP".*.jsonl 2>/dev/null | grep -c '"kind": *"final"' || true)
    [ "$finals" -ge "$nexec" ] && break
    sleep 0.2
  done
  progress "submission $n: $APP: $(grep '^tpcds ok ' "$WORK/run$n.out"); sparkshim said: $(grep '^sparkshim' "$WORK/run$n.err" | tr '\n' ' ')"
}

# pass N: the service's command; the period (10 s) has passed since the last pass
pass() {
  sleep 10
  $PASS_CMD >"$WORK/pass$1.out" 2>&1 || { echo "FAIL: pass $1: $(cat "$WORK/pass$1.out")"; return 1; }
  progress "pass $1: $(cat "$WORK/pass$1.out" | tr '\n' ' ')"
}

PUB=$WORK/published/0/sparkshim-loop.json
submit 1 || exit 1
APPS=("$APP")
[ ! -e "$PUB" ] || fail "published before any pass"
pass 1 || exit 1
cp "$PUB" "$WORK/published-1.json" 2>/dev/null || fail "pass 1 published no $PUB: $(cat "$WORK/pass1.out")"
submit 2 || exit 1
APPS+=("$APP")
pass 2 || exit 1
cp "$PUB" "$WORK/published-2.json"
submit 3 || exit 1
APPS+=("$APP")

progress "checking"
python3 - "$WORK" "$TPCDS" "${APPS[@]}" <<'PY' || fail "see above"
import glob, json, re, subprocess, sys
work, tpcds, apps = sys.argv[1], sys.argv[2], sys.argv[3:]
failures = 0
def fail(m):
    global failures
    failures += 1
    print("FAIL: " + m)
def log_lines(app):
    """the application's event log in whatever form Spark wrote it: 3.5's one plain file,
    4.0's rolling directory of zstd files (its default), or one compressed file"""
    ev = f"{work}/events"
    paths = sorted(glob.glob(f"{ev}/eventlog_v2_{app}/events_*"), key=lambda p: int(p.split("events_")[-1].split("_")[0]))
    paths = paths or glob.glob(f"{ev}/{app}") or glob.glob(f"{ev}/{app}.*")
    for p in paths:
        if p.endswith(".zstd"):
            text = subprocess.run(["zstd", "-dc", p], capture_output=True, check=True).stdout.decode()
        else:
            text = open(p).read()
        yield from text.splitlines()
def props(app):
    for line in log_lines(app):
        d = json.loads(line)
        if d.get("Event") == "SparkListenerEnvironmentUpdate":
            return d["Spark Properties"] if isinstance(d["Spark Properties"], dict) else dict(d["Spark Properties"])
    return {}
def field(line, key):
    m = re.search(r"(?:^| )" + key + r"=(\S+)", line)
    return m.group(1) if m else None
p1 = props(apps[0])
if not p1.get("spark.app.name"):
    fail(f"submission 1: no Spark properties in its event log ({apps[0]}): nothing could be checked")
if "spark.sparkshim.config" in p1:
    fail(f"submission 1 had a configuration applied before anything was published: {p1['spark.sparkshim.config']}")
for n, pub_file in ((2, "published-1.json"), (3, "published-2.json")):
    pub = json.load(open(f"{work}/{pub_file}"))
    p = props(apps[n - 1])
    if pub["state"] not in ("explore", "learning") or not pub["next"]:
        fail(f"{pub_file}: state {pub['state']} ({pub['reason']}), next {pub['next']}")
        continue
    want = pub["next"]
    if p.get("spark.sparkshim.config") != want["id"]:
        fail(f"submission {n}: spark.sparkshim.config {p.get('spark.sparkshim.config')}, published next {want['id']}")
    if p.get("spark.sparkshim.job") != "sparkshim-loop":
        fail(f"submission {n}: spark.sparkshim.job {p.get('spark.sparkshim.job')}")
    for k, v in want["conf"].items():
        if k == "spark.executor.cores":
            continue
        if p.get(k) != v:
            fail(f"submission {n}: {k}={p.get(k)}, published {v}")
    # the executors ran with them: sparkshim's plan took the request from their environment
    mc = want["conf"].get("spark.executorEnv.SPARKSHIM_MILLICORES")
    finals = [json.loads(l) for f in glob.glob(f"{work}/reports/{apps[n-1]}.*.jsonl")
              for l in open(f) if '"kind":"final"' in l.replace(" ", "")]
    if not finals:
        fail(f"submission {n}: no executor report")
    for d in finals:
        got = d["plan"]["cpu"]["request_millicores"]
        if mc is not None and got != int(mc):
            fail(f"submission {n}: executor {d['identity']['executor_id']} ran with a request of "
                 f"{got} millicores, published {mc}")
    if p.get("spark.executor.cores") != "1":
        fail(f"submission {n}: the user's spark.executor.cores=1 became {p.get('spark.executor.cores')}")
    print(f"submission {n}: {apps[n-1]} ran {want['id']}: " +
          ", ".join(f"{k}={p.get(k)}" for k in sorted(want["conf"])))
answers = dict(l.split("\t") for l in open(f"{tpcds}/rows.tsv").read().split("\n") if l)
results = [[l for l in open(f"{work}/run{n}.out").read().splitlines() if l.startswith("tpcds ")]
           for n in (1, 2, 3)]
if len({tuple(r) for r in results}) != 1:
    fail(f"the results differ between submissions: {results}")
for l in results[0]:
    q = field(l, "q")
    if q and field(l, "rows") != answers.get(q):
        fail(f"{q}: Spark returned {field(l, 'rows')} rows, DuckDB {answers.get(q)}")
# the heap after GC, from the agent through the executors' reports into the service's history
import sqlite3
db = sqlite3.connect(f"file:{work}/history.db?mode=ro", uri=True)
for n in (1, 2):
    rows = db.execute("SELECT executor_id, heap_after_gc_peak_bytes, heap_bytes FROM executors "
                      "WHERE app_id = ?", (apps[n - 1],)).fetchall()
    if not rows:
        fail(f"submission {n}: no executor of {apps[n-1]} in the service's history")
    # an executor that never collected has none (NULL); one of them at least did
    if not any(a for _, a, _ in rows):
        fail(f"submission {n}: no executor has a heap after GC: {rows}")
    for ex, after_gc, heap in rows:
        if after_gc is not None and (heap is None or not 0 < after_gc <= heap):
            fail(f"submission {n}: executor {ex}: heap after GC {after_gc} of a {heap} byte heap")
    print(f"submission {n}: heap after GC " + ", ".join(f"{r[1] >> 20 if r[1] else r[1]} MiB of {r[2] >> 20 if r[2] else r[2]}" for r in rows))
if not failures:
    print(f"3 submissions, the same result: {results[0][-1]}; every query as many rows as DuckDB's")
sys.exit(1 if failures else 0)
PY
[ "$FAILURES" -eq 0 ] || exit 1
progress "all checks passed"
