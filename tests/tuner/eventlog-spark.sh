#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The event-log reader (tuner/eventlog.h) on event logs that a real Spark wrote, one small
# application per form: Spark's default for the line (3.5: one plain file; 4.0: a rolling
# directory of zstd files), zstd, lz4, snappy, lzf, and rolling (plain files in 4.0, zstd in
# 3.5). The job (tests/tuner/EventLogJob.java, on local[2,2]) has a known shape: 2 jobs,
# 3 stages of 4, 3 and 2 tasks, 10 task attempts of which 1 failed (the first attempt of one
# map task throws; its retry succeeds), a shuffle, and sorters forced to spill
# (spark.shuffle.spill.numElementsForceSpillThreshold). The lzf one runs on local-cluster
# (executors in JVMs of their own) where one executor halts in job 1: an ExecutorLostFailure,
# a lost executor, the task retried elsewhere (11 attempts, 2 failed). eventlog-dump prints what the reader
# made of each log; it must match that shape, the application's name and id, a property the
# test set, and, for the logs that are plain text, every per-stage sum that python computes
# from the same JSON lines. Then copies of the logs cut mid-line (plain) and mid-block
# (compressed) and named .inprogress read as far as they go, and a rolling directory cut
# into 3 files reads as the whole. Real multi-join SQL: a query of six tables joined
# (tests/tuner/SqlJoinJob.java) and TPC-DS queries 72 and 64 (tests/tuner/TpcdsJob.java on
# scripts/tpcds-data's scale factor 0.1, sort-merge joins), whose plans nest deeper than 64
# levels: each log reads as one application that ended, and each query returns as many rows
# as DuckDB's answer on the same data.
#
# Usage: eventlog-spark.sh LINE SOURCE_ROOT EVENTLOG_DUMP JDK_HOME
set -euo pipefail

LINE=${1:?usage: eventlog-spark.sh LINE SOURCE_ROOT EVENTLOG_DUMP JDK_HOME}
SRC=${2:?}
DUMP=$(realpath "${3:?}")
JDK=${4:-}
T0=$(date +%s)
progress() { echo "[eventlog-$LINE +$(($(date +%s) - T0))s] $*"; }
skip() {
  echo "SKIP: $*"
  exit 77
}

[ -n "$JDK" ] || skip "no JDK was found when configuring"
for tool in java javac; do
  [ -x "$JDK/bin/$tool" ] || skip "$JDK/bin/$tool is missing (scripts/deps installs openjdk-17-jdk-headless)"
done
command -v python3 >/dev/null || skip "python3 is missing"

WORK=$(mktemp -d /tmp/sparkshim-eventlog.XXXXXX)
SUBMIT=
cleanup() {
  local rc=$?
  set +e
  [ -n "$SUBMIT" ] && kill -TERM "$SUBMIT" 2>/dev/null
  cd /
  if [ -n "${SPARKSHIM_EVENTLOG_KEEP:-}" ]; then
    rm -rf "$SPARKSHIM_EVENTLOG_KEEP"
    mkdir -p "$SPARKSHIM_EVENTLOG_KEEP"
    cp -r "$WORK"/logs-* "$SPARKSHIM_EVENTLOG_KEEP/"
  fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$WORK"

rc=0
SPARK_HOME=$("$SRC/scripts/spark-dist" "$LINE" 2>"$WORK/dist.err") || rc=$?
if [ "$rc" = 77 ]; then
  skip "cannot fetch Spark $LINE: $(cat "$WORK/dist.err")"
elif [ "$rc" != 0 ]; then
  echo "FAIL: scripts/spark-dist $LINE: $(cat "$WORK/dist.err")"
  exit 1
fi
progress "Spark $(basename "$SPARK_HOME") from $SPARK_HOME"
export SPARK_HOME JAVA_HOME=$JDK
SPARK_SCALA_VERSION=$(cat "$SPARK_HOME/.scala")
export SPARK_SCALA_VERSION
export SPARK_CONF_DIR=$WORK/conf # empty: nothing from the machine's Spark configuration
export SPARK_LOCAL_IP=127.0.0.1
export SPARK_LOCAL_DIRS=$WORK/local
mkdir -p "$SPARK_CONF_DIR" "$SPARK_LOCAL_DIRS" "$WORK/classes"
"$JDK/bin/javac" -d "$WORK/classes" -cp "$SPARK_HOME/jars/*" "$SRC/tests/tuner/EventLogJob.java" \
  "$SRC/tests/tuner/SqlJoinJob.java" "$SRC/tests/tuner/TpcdsJob.java"
rc=0
TPCDS=$("$SRC/scripts/tpcds-data" 0.1 2>"$WORK/tpcds.err") || rc=$?
[ "$rc" = 77 ] && skip "no TPC-DS data: $(cat "$WORK/tpcds.err")"
[ "$rc" = 0 ] || { echo "FAIL: scripts/tpcds-data 0.1: $(cat "$WORK/tpcds.err")"; exit 1; }
(cd "$WORK/classes" && "$JDK/bin/jar" cf "$WORK/job.jar" ./*.class 2>/dev/null) ||
  python3 -c 'import sys, zipfile, os
z = zipfile.ZipFile(sys.argv[1], "w")
for n in os.listdir(sys.argv[2]):
    z.write(os.path.join(sys.argv[2], n), n)' "$WORK/job.jar" "$WORK/classes"

# submit FORM [--conf k=v ...]: run the job with its event log in $WORK/logs-FORM, on
# $MASTER (default local[2,2]) with $JOB_ARGS after the application's name
# (SPARKSHIM_EVENTLOG_REUSE=DIR: take DIR/logs-FORM from an earlier run, kept by
# SPARKSHIM_EVENTLOG_KEEP=DIR; for working on the checks)
submit() {
  local form=$1 start
  shift
  if [ -n "${SPARKSHIM_EVENTLOG_REUSE:-}" ]; then
    cp -r "$SPARKSHIM_EVENTLOG_REUSE/logs-$form" "$WORK/"
    return
  fi
  mkdir -p "$WORK/logs-$form"
  start=$(date +%s)
  "$SPARK_HOME/bin/spark-submit" --master "${MASTER:-local[2,2]}" --class EventLogJob \
    --driver-memory 512m \
    --conf spark.ui.enabled=false \
    --conf spark.eventLog.enabled=true \
    --conf "spark.eventLog.dir=file://$WORK/logs-$form" \
    --conf spark.shuffle.spill.numElementsForceSpillThreshold=500 \
    --conf "spark.sparkshim.test=$form" \
    "$@" "$WORK/job.jar" "el-$form" ${JOB_ARGS:-} >"$WORK/$form.out" 2>"$WORK/$form.err" &
  SUBMIT=$!
  rc=0
  wait "$SUBMIT" || rc=$?
  SUBMIT=
  if [ "$rc" != 0 ] || ! grep -q '^ok 5000 20000$' "$WORK/$form.out"; then
    echo "FAIL: $form: spark-submit exited $rc, printed '$(tail -n 1 "$WORK/$form.out")':"
    tail -n 30 "$WORK/$form.err"
    exit 1
  fi
  progress "$form: the job ran in $(($(date +%s) - start)) s: $(cd "$WORK/logs-$form" && find . -mindepth 1 | sort | tr '\n' ' ')"
}

submit default
submit zstd --conf spark.eventLog.compress=true --conf spark.eventLog.compression.codec=zstd \
  --conf spark.eventLog.rolling.enabled=false
submit lz4 --conf spark.eventLog.compress=true --conf spark.eventLog.compression.codec=lz4 \
  --conf spark.eventLog.rolling.enabled=false
submit snappy --conf spark.eventLog.compress=true --conf spark.eventLog.compression.codec=snappy \
  --conf spark.eventLog.rolling.enabled=false
# lzf, on a local cluster (a Master, a Worker, 2 executor JVMs of 1 core): job 1 loses one;
# the executors' memory is polled often enough for every task to see it
MASTER='local-cluster[2,1,1024]' JOB_ARGS=lose-executor \
  submit lzf --conf spark.eventLog.compress=true --conf spark.eventLog.compression.codec=lzf \
  --conf spark.eventLog.rolling.enabled=false --conf spark.executor.memory=512m \
  --conf spark.executor.metrics.pollingInterval=50ms \
  --conf spark.executor.processTreeMetrics.enabled=true
if [ "$LINE" = 3.5 ]; then
  submit rolling --conf spark.eventLog.rolling.enabled=true \
    --conf spark.eventLog.compress=true --conf spark.eventLog.compression.codec=zstd
else
  submit rolling --conf spark.eventLog.rolling.enabled=true --conf spark.eventLog.compress=false
fi

# a multi-join SQL query (tests/tuner/SqlJoinJob.java: 5 sort-merge joins), its log in
# Spark's default form for the line: its plan nests deeper than 64 levels
start=$(date +%s)
mkdir -p "$WORK/logs-sql"
if [ -n "${SPARKSHIM_EVENTLOG_REUSE:-}" ]; then
  cp -r "$SPARKSHIM_EVENTLOG_REUSE/logs-sql" "$WORK/"
else
  rc=0
  "$SPARK_HOME/bin/spark-submit" --master 'local[2]' --class SqlJoinJob --driver-memory 512m \
    --conf spark.ui.enabled=false --conf spark.eventLog.enabled=true \
    --conf "spark.eventLog.dir=file://$WORK/logs-sql" \
    "$WORK/job.jar" el-sql 20000 >"$WORK/sql.out" 2>"$WORK/sql.err" || rc=$?
  if [ "$rc" != 0 ] || ! grep -qx 'ok 20000 4199790000' "$WORK/sql.out"; then
    echo "FAIL: sql: spark-submit exited $rc, printed '$(tail -n 1 "$WORK/sql.out")':"
    tail -n 30 "$WORK/sql.err"
    exit 1
  fi
fi
progress "sql: the job ran in $(($(date +%s) - start)) s: $(cd "$WORK/logs-sql" && find . -mindepth 1 | sort | tr '\n' ' ')"

# real decision-support SQL: TPC-DS queries 72 (11 tables) and 64 (18 tables, 2 subqueries)
# on scripts/tpcds-data's data, sort-merge joins (no broadcast), Spark's default log form
start=$(date +%s)
mkdir -p "$WORK/logs-tpcds"
if [ -n "${SPARKSHIM_EVENTLOG_REUSE:-}" ]; then
  cp -r "$SPARKSHIM_EVENTLOG_REUSE/logs-tpcds" "$WORK/"
  cp "$SPARKSHIM_EVENTLOG_REUSE/tpcds.out" "$WORK/"
else
  rc=0
  "$SPARK_HOME/bin/spark-submit" --master 'local[2]' --class TpcdsJob --driver-memory 1g \
    --conf spark.ui.enabled=false --conf spark.eventLog.enabled=true \
    --conf "spark.eventLog.dir=file://$WORK/logs-tpcds" --conf spark.sql.autoBroadcastJoinThreshold=-1 \
    --conf spark.sql.shuffle.partitions=4 \
    "$WORK/job.jar" el-tpcds "$TPCDS" q72,q64 >"$WORK/tpcds.out" 2>"$WORK/tpcds.err" || rc=$?
  if [ "$rc" != 0 ] || ! grep -q '^tpcds ok queries=2 ' "$WORK/tpcds.out"; then
    echo "FAIL: tpcds: spark-submit exited $rc, printed '$(tail -n 1 "$WORK/tpcds.out")':"
    grep -vE '^\s+at ' "$WORK/tpcds.err" | tail -n 30
    exit 1
  fi
fi
progress "tpcds: the queries ran in $(($(date +%s) - start)) s: $(grep '^tpcds' "$WORK/tpcds.out" | tr '\n' ' ')"

progress "reading the logs with $DUMP"
python3 - "$LINE" "$WORK" "$DUMP" "$TPCDS" <<'EOF'
import json, os, shutil, subprocess, sys

line, work, dump, tpcds = sys.argv[1:5]
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL: " + msg)


def read(path):
    p = subprocess.run([dump, path], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"eventlog-dump {path} exited {p.returncode}: {p.stderr.strip()}")
        return None
    return json.loads(p.stdout)


def detect(path):
    p = subprocess.run([dump, "--detect", path], capture_output=True, text=True)
    return p.stdout.strip() == "true"


def the_log(form):
    entries = os.listdir(f"{work}/logs-{form}")
    if len(entries) != 1:
        fail(f"{form}: {len(entries)} entries in logs-{form}, want 1: {entries}")
        return None
    return f"{work}/logs-{form}/{entries[0]}"


def plain_lines(path):
    """the JSON events of a plain log (file or rolling directory of plain files)"""
    if os.path.isdir(path):
        files = sorted((f for f in os.listdir(path) if f.startswith("events_")),
                       key=lambda f: int(f.split("_")[1]))
        paths = [os.path.join(path, f) for f in files]
    else:
        paths = [path]
    for p in paths:
        with open(p) as f:
            for l in f:
                yield json.loads(l)


def oracle(path):
    """per-stage sums computed here from the same JSON, independently of the reader"""
    stages = {}
    for e in plain_lines(path):
        if e["Event"] != "SparkListenerTaskEnd":
            continue
        s = stages.setdefault((e["Stage ID"], e["Stage Attempt ID"]),
                              dict(mem=0, disk=0, sw=0, sr=0, run=0, gc=0, failed=0, durations=[]))
        m = e.get("Task Metrics") or {}
        s["mem"] += m.get("Memory Bytes Spilled", 0)
        s["disk"] += m.get("Disk Bytes Spilled", 0)
        s["sw"] += m.get("Shuffle Write Metrics", {}).get("Shuffle Bytes Written", 0)
        r = m.get("Shuffle Read Metrics", {})
        s["sr"] += r.get("Remote Bytes Read", 0) + r.get("Local Bytes Read", 0)
        s["run"] += m.get("Executor Run Time", 0)
        s["gc"] += m.get("JVM GC Time", 0)
        if e["Task End Reason"]["Reason"] == "Success":
            i = e["Task Info"]
            s["durations"].append(i["Finish Time"] - i["Launch Time"])
        else:
            s["failed"] += 1
    return stages


def check_shape(form, path, d):
    where = f"{form} ({os.path.basename(path)})"
    app_id = os.path.basename(path).split(".")[0].removeprefix("eventlog_v2_")
    lost = form == "lzf"  # local-cluster, one executor halted in job 1
    want = dict(app_name=f"el-{form}", app_id=app_id, jobs=2, failed_jobs=0,
                tasks=11 if lost else 10, failed_tasks=2 if lost else 1, killed_tasks=0,
                oom_task_failures=0, lost_task_failures=1 if lost else 0, ended=True)
    for k, v in want.items():
        if d[k] != v:
            fail(f"{where}: {k} {d[k]!r}, want {v!r}")
    if not d["spark_version"].startswith(line + "."):
        fail(f"{where}: spark_version {d['spark_version']!r}, want {line}.x")
    if not (d["start_ms"] > 0 and d["end_ms"] >= d["start_ms"]):
        fail(f"{where}: start_ms {d['start_ms']}, end_ms {d['end_ms']}")
    conf = d["conf"] or {}
    if conf.get("spark.sparkshim.test") != form or conf.get("spark.app.name") != f"el-{form}":
        fail(f"{where}: conf spark.sparkshim.test {conf.get('spark.sparkshim.test')!r}, "
             f"spark.app.name {conf.get('spark.app.name')!r}")
    st = d["stages"]
    got = [(s["stage_id"], s["attempt"], s["tasks"], s["failed_tasks"], s["failed"]) for s in st]
    if got != [(0, 0, 4, 1, False), (1, 0, 3, 0, False), (2, 0, 2, 1 if lost else 0, False)]:
        fail(f"{where}: stages (id, attempt, tasks, failed tasks, failed) {got}")
        return
    if not (st[0]["shuffle_write_bytes"] > 0 and
            st[0]["shuffle_write_bytes"] == st[1]["shuffle_read_bytes"]):
        fail(f"{where}: shuffle write {st[0]['shuffle_write_bytes']} of stage 0, read "
             f"{st[1]['shuffle_read_bytes']} of stage 1: want equal and > 0")
    for i in (0, 1):  # both sides of the shuffle sort with a forced spill
        if not (st[i]["memory_spill_bytes"] > 0 and st[i]["disk_spill_bytes"] > 0):
            fail(f"{where}: stage {i} spilled {st[i]['memory_spill_bytes']} B from memory, "
                 f"{st[i]['disk_spill_bytes']} B to disk: want > 0 (forced spill)")
    for s in st:
        if not (s["run_seconds"] > 0 and s["task_median_seconds"] is not None and
                s["task_max_seconds"] >= s["task_median_seconds"] and
                s["complete_ms"] >= s["submit_ms"] > 0):
            fail(f"{where}: stage {s['stage_id']}: run {s['run_seconds']} s, median "
                 f"{s['task_median_seconds']}, max {s['task_max_seconds']}, submit "
                 f"{s['submit_ms']}, complete {s['complete_ms']}")
    ex = {e["executor_id"]: e for e in d["executors"]}
    if lost:
        gone = [e for e in d["executors"] if e["lost"]]
        if (len(gone) != 1 or "exited with code 1" not in gone[0]["removed_reason"] or
                not gone[0]["removed_ms"] >= gone[0]["added_ms"] > 0 or
                len(d["executors"]) < 2 or any(e["cores"] != 1 for e in d["executors"])):
            fail(f"{where}: executors {d['executors']}: want 2 or more of 1 core, exactly one "
                 f"lost ('Command exited with code 1')")
        # polled every 50 ms (spark.executor.metrics.pollingInterval), with the process tree
        if not any(e["jvm_heap_peak"] and e["rss_peak"] and e["rss_peak"] > e["jvm_heap_peak"]
                   for e in d["executors"]):
            fail(f"{where}: no executor has a JVM heap peak and a larger RSS peak (Task "
                 f"Executor Metrics): {d['executors']}")
    elif "driver" not in ex or ex["driver"]["lost"] or ex["driver"]["cores"] != 2:
        fail(f"{where}: executors {d['executors']}: want the local driver, 2 cores, not lost")
    if not detect(path):
        fail(f"{where}: eventlog-dump --detect says false")


def check_oracle(form, path, d):
    o = oracle(path)
    for s in d["stages"]:
        w = o.get((s["stage_id"], s["attempt"]))
        if w is None:
            fail(f"{form}: stage {s['stage_id']} has no task in the JSON")
            continue
        durations = sorted(w["durations"])
        n = len(durations)
        median = (durations[n // 2] if n % 2 else (durations[n // 2 - 1] + durations[n // 2]) / 2) / 1e3
        got = (s["memory_spill_bytes"], s["disk_spill_bytes"], s["shuffle_write_bytes"],
               s["shuffle_read_bytes"], round(s["run_seconds"] * 1e3), round(s["gc_seconds"] * 1e3),
               s["failed_tasks"], round(s["task_median_seconds"] * 1e3),
               round(s["task_max_seconds"] * 1e3))
        want = (w["mem"], w["disk"], w["sw"], w["sr"], w["run"], w["gc"], w["failed"],
                round(median * 1e3), max(durations))
        if got != want:
            fail(f"{form}: stage {s['stage_id']}: (memory spill, disk spill, shuffle write, "
                 f"shuffle read, run ms, gc ms, failed, median ms, max ms) {got}, python {want}")


forms = ["default", "zstd", "lz4", "snappy", "lzf", "rolling"]
logs, dumps = {}, {}
for form in forms:
    path = the_log(form)
    if path is None:
        continue
    d = read(path)
    if d is None:
        continue
    logs[form], dumps[form] = path, d
    check_shape(form, path, d)
    print(f"{form}: {os.path.relpath(path, work)}: {d['tasks']} tasks ({d['failed_tasks']} failed) "
          f"in {len(d['stages'])} stages, spill "
          f"{sum(s['memory_spill_bytes'] for s in d['stages'])} B, shuffle "
          f"{d['stages'][0]['shuffle_write_bytes'] if d['stages'] else 0} B")

# the forms are what Spark documents: codec suffixes, and the line's defaults
suffix = dict(zstd=".zstd", lz4=".lz4", snappy=".snappy", lzf=".lzf")
for form, sfx in suffix.items():
    if form in logs and not logs[form].endswith(sfx):
        fail(f"{form}: {logs[form]}: want a single file ending in {sfx}")
if "rolling" in logs:
    if not os.path.basename(logs["rolling"]).startswith("eventlog_v2_"):
        fail(f"rolling: {logs['rolling']}: want an eventlog_v2_ directory")
if "default" in logs:
    p = logs["default"]
    if line == "3.5" and not (os.path.isfile(p) and "." not in os.path.basename(p)):
        fail(f"default: {p}: Spark 3.5 writes one plain file by default")
    if line == "4.0":
        files = os.listdir(p) if os.path.isdir(p) else []
        if not any(f.startswith("events_") and f.endswith(".zstd") for f in files):
            fail(f"default: {p}: Spark 4.0 writes a rolling directory of zstd files by default "
                 f"(spark.eventLog.rolling.enabled, spark.eventLog.compress: true), found {files}")

# every decoder gives the same events: compare with the plain log's figures
plain = "default" if line == "3.5" else "rolling"
if plain in logs:
    check_oracle(plain, logs[plain], dumps[plain])

# in progress: a plain log cut mid-line, compressed logs cut mid-block, named .inprogress,
# read as far as they go; the same cut without .inprogress is an error naming the file
cut = f"{work}/cut"
os.makedirs(cut)
src = logs.get(plain)
if src and os.path.isdir(src):
    src = os.path.join(src, sorted(f for f in os.listdir(src) if f.startswith("events_"))[0])
for form in [plain, "zstd", "lz4", "snappy", "lzf"]:
    path = src if form == plain else logs.get(form)
    if not path:
        continue
    data = open(path, "rb").read()
    base = os.path.basename(path).replace("events_1_", "")
    sfx = suffix.get(form, "")
    # plain: 60 % of the way, inside a line; compressed: inside the last block (Spark flushes
    # a compressed log only when a block is full and at its end, so that a few blocks of
    # 32 KiB hold all of this small application)
    at = len(data) * 6 // 10 if form == plain else len(data) - 30
    name = f"{cut}/{base.removesuffix(sfx)}-cut{sfx}"
    with open(name + ".inprogress", "wb") as f:
        f.write(data[:at])
    shutil.copy(name + ".inprogress", name)
    d = read(name + ".inprogress")
    if d is not None:
        if d["ended"] or d["app_name"] != dumps[form]["app_name"] or d["tasks"] > 11:
            fail(f"{form} cut .inprogress: ended {d['ended']}, app_name {d['app_name']!r}, "
                 f"tasks {d['tasks']}: want not ended, the same name, at most 11 tasks")
        print(f"{form} cut at {at} of {len(data)} B, .inprogress: "
              f"{d['tasks']} tasks, {len(d['stages'])} stages")
    p = subprocess.run([dump, name], capture_output=True, text=True)
    if p.returncode == 0 or name not in p.stderr:
        fail(f"{form} cut, not in progress: eventlog-dump exited {p.returncode} ({p.stderr.strip()}): "
             f"want an error naming {name}")
    else:
        print(f"{form} cut, not in progress: {p.stderr.strip()}")

# a rolling directory of 3 files, cut from the plain log at event boundaries
events = list(open(src).read().splitlines(keepends=True)) if src else []
if events:
    app_id = dumps[plain]["app_id"]
    roll = f"{work}/roll/eventlog_v2_{app_id}"
    os.makedirs(roll)
    third = len(events) // 3
    for i, part in enumerate([events[:third], events[third:2 * third], events[2 * third:]]):
        with open(f"{roll}/events_{i + 1}_{app_id}", "w") as f:
            f.writelines(part)
    open(f"{roll}/appstatus_{app_id}", "w").close()
    d = read(roll)
    if d is not None:
        for k in ("tasks", "failed_tasks", "jobs", "stages", "conf", "app_id", "ended"):
            if d[k] != dumps[plain][k]:
                fail(f"3-file rolling copy: {k} {d[k]!r}, the single file {dumps[plain][k]!r}")
        print(f"3-file rolling copy ({len(events)} events): the same as the single file")

# the SQL queries' logs: their plans nest deeper than the scanner's old limit of 64, and each
# reads as one application of jobs and tasks that ended
def nesting(sql_dir):
    found = []
    for root, _, files in os.walk(sql_dir):
        found += [os.path.join(root, f) for f in files if not f.startswith("appstatus")]
    deepest = 0
    for path in found:
        raw = open(path, "rb").read()
        if raw[:4] == b"\x28\xb5\x2f\xfd":
            raw = subprocess.run(["zstd", "-dc", path], capture_output=True, check=True).stdout
        depth = 0
        in_string = escaped = False
        for c in raw.decode():
            if in_string:
                if escaped:
                    escaped = False
                elif c == "\\":
                    escaped = True
                elif c == '"':
                    in_string = False
            elif c == '"':
                in_string = True
            elif c in "[{":
                depth += 1
                deepest = max(deepest, depth)
            elif c in "]}":
                depth -= 1
    return deepest


for form, name in (("sql", "el-sql"), ("tpcds", "el-tpcds")):
    sql_dir = f"{work}/logs-{form}"
    deepest = nesting(sql_dir)
    if deepest <= 64:
        fail(f"{form}: the log nests {deepest} levels, not deeper than 64: the case tests nothing")
    entries = os.listdir(sql_dir)
    d = read(f"{sql_dir}/{entries[0]}") if len(entries) == 1 else fail(f"{form}: {entries}")
    if d is not None:
        if not (d["ended"] and d["jobs"] >= 1 and d["tasks"] >= 1 and d["app_name"] == name):
            fail(f"{form}: read as {d}")
        else:
            print(f"{form}: a plan {deepest} levels deep, read: {d['jobs']} jobs, {d['tasks']} tasks")

# Spark answered the TPC-DS queries as DuckDB did on the same data (as many rows)
# (q72: 50 rows at this scale, under its LIMIT of 100; q64: none, it is there for its plan)
answers = dict(l.split("\t") for l in open(f"{tpcds}/rows.tsv").read().split("\n") if l)
seen = []
for l in open(f"{work}/tpcds.out"):
    f = dict(kv.split("=", 1) for kv in l.split()[1:] if "=" in kv)
    if l.startswith("tpcds q="):
        seen.append(f["q"])
        if f["rows"] != answers.get(f["q"]):
            fail(f"tpcds {f['q']}: Spark returned {f['rows']} rows, DuckDB {answers.get(f['q'])}")
if seen != ["q72", "q64"]:
    fail(f"tpcds: answers to {seen}, not to q72 and q64")

sys.exit(1 if failures else 0)
EOF
progress "done"
