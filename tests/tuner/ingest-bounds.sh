#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ingest-bounds.sh TUNER FIXTURES: `sparkshim-tuner ingest` on event logs a job's user forged,
# each run under an address-space limit (prlimit --as) so that memory is asserted, not timed:
#   - a zstd bomb (1 GiB of blank lines in ~40 KB) with a 1 GiB sparse tail (truncate -s) is
#     refused by the expansion bound, one line naming the file, the ratio and the limit, after
#     a few MB (the tail's size allows nothing);
#   - a legitimate log that compresses ~120 x and holds 80 MB is stored;
#   - a rolling directory of four zstd files of 60 MB of blank lines (~1.9 KB each) is one
#     input with one slack: refused in one line naming the directory after ~64 MiB; the same
#     80 MB log cut into a rolling directory of four zstd files is stored;
#   - one line of ~8 MiB (just under the 8 MiB of an event the reader builds a tree of) is
#     read in memory proportional to it: a Task End whose "Accumulables" are 8 MiB of {} (a
#     whole jansson tree of it took 650 MB), a Stage Completed whose "RDD Info" is 8 MiB of
#     [], an SQL execution start with an 8 MiB plan; peak RSS at most 8 x the line + 64 MiB
#     (getrusage), and stored under a 256 MiB address-space limit.
# Skips (77) only when the zstd command (Debian: zstd) is missing.
set -eu
tuner=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fixtures=${2:?usage: ingest-bounds.sh TUNER FIXTURES}
fail() { echo "FAIL: $*"; exit 1; }

if ! command -v zstd >/dev/null; then
	echo "SKIP: the zstd command is missing (Debian: zstd)"
	exit 77
fi

tmp=$(mktemp -d /tmp/sparkshim-ingest-bounds.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# sparkshim-tuner maps ~85 MB before it reads anything (libraries, OpenBLAS); OpenBLAS's own
# thread spins at exit when an allocation of its fails, so it gets none
export OPENBLAS_NUM_THREADS=1
limited() { # MIB COMMAND...: COMMAND with at most MIB MiB of address space
	mib=$1
	shift
	prlimit --as=$((mib << 20)) "$@"
}

# ---------------------------------------------------------------- a zstd bomb, sparse tail
{
	printf '{"Event":"SparkListenerLogStart","Spark Version":"3.5.9"}\n'
	yes '' | head -c 1073741824
} | zstd -q -1 >bomb.zstd
truncate -s +1G bomb.zstd
on_disk=$(($(stat -c %b bomb.zstd) * $(stat -c %B bomb.zstd)))
status=0
limited 256 "$tuner" ingest --db h.db --job x bomb.zstd >out.txt 2>err.txt || status=$?
[ "$status" = 1 ] || fail "the bomb: exit $status, not 1: $(cat err.txt)"
[ "$(wc -l <err.txt)" = 1 ] || fail "the bomb: not one line: $(cat err.txt)"
grep -q 'bomb.zstd: [0-9]* bytes decompressed from [0-9]* compressed bytes ([0-9]* x); allowed: up to 1000 x the compressed bytes + 64 MiB' err.txt ||
	fail "the bomb: $(cat err.txt)"
out=$(sed 's/.*bomb.zstd: \([0-9]*\) bytes decompressed.*/\1/' err.txt)
[ "$out" -le $((1000 * on_disk + (65 << 20))) ] ||
	fail "the bomb: $out bytes decompressed, more than 1000 x its $on_disk bytes on disk + 64 MiB"
echo "bomb: $(cat err.txt)"

# ---------------------------------------------------------------- a legitimate log, 120 x
python3 - "$fixtures/eventlog/spark-3.5.9-plain" big.log <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
plan = ("== Physical Plan ==\\n*(1) Project [id#0L, (id#0L * 2) AS x#2L]\\n"
        "+- *(1) Range (0, 1000, step=1, splits=2)\\n") * 4
with open(sys.argv[2], "w") as out:
    for l in lines[:-1]:
        out.write(l + "\n")
    for i in range(100000):
        out.write('{"Event":"org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",'
                  '"executionId":%d,"description":"count at job.py:%d","details":"",'
                  '"physicalPlanDescription":"%s","sparkPlanInfo":{"nodeName":"WholeStageCodegen'
                  ' (1)","simpleString":"WholeStageCodegen (1)","children":[],"metadata":{},'
                  '"metrics":[{"name":"duration","accumulatorId":%d,"metricType":"timing"}]},'
                  '"time":%d,"modifiedConfigs":{}}\n' % (i, i % 97, plan, 1000 + i, 1796317883102 + 7 * i))
    out.write(lines[-1] + "\n")
PY
zstd -q -3 big.log -o big.zstd
mkdir eventlog_v2_local-1796317883102
split -n l/4 -d -a 1 big.log part.
for i in 0 1 2 3; do
	zstd -q -3 --rm part.$i -o eventlog_v2_local-1796317883102/events_$((i + 1))_local-1796317883102.zstd
done
rm big.log
limited 256 "$tuner" ingest --db h.db --job x big.zstd >out.txt 2>err.txt ||
	fail "a legitimate log of $(stat -c %s big.zstd) bytes of zstd: exit $?: $(cat err.txt)"
grep -q 'big.zstd: run local-1796317883102: event log, 3 stage attempts' out.txt ||
	fail "the legitimate log: $(cat out.txt)"

# ---------------------------------------------------------------- a rolling directory of bombs
mkdir eventlog_v2_app-1
for i in 1 2 3 4; do
	{
		[ "$i" = 1 ] && printf '{"Event":"SparkListenerLogStart","Spark Version":"3.5.9"}\n'
		yes '' | head -c 60000000
	} | zstd -q -19 >eventlog_v2_app-1/events_${i}_app-1.zstd
done
status=0
limited 256 "$tuner" ingest --db h.db --job x eventlog_v2_app-1 big.zstd >out.txt 2>err.txt || status=$?
[ "$status" = 1 ] || fail "the rolling bombs: exit $status, not 1: $(cat err.txt)"
[ "$(wc -l <err.txt)" = 1 ] || fail "the rolling bombs: not one line: $(cat err.txt)"
grep -q '^.*eventlog_v2_app-1: [0-9]* bytes decompressed from [0-9]* compressed bytes of its files, up to eventlog_v2_app-1/events_2_app-1.zstd ([0-9]* x); allowed: up to 1000 x the compressed bytes + 64 MiB' err.txt ||
	fail "the rolling bombs: $(cat err.txt)"
out=$(sed 's/.*eventlog_v2_app-1: \([0-9]*\) bytes decompressed.*/\1/' err.txt)
[ "$out" -le $((80 << 20)) ] || fail "the rolling bombs: $out bytes decompressed of 240 MB"
grep -q 'big.zstd: run local-1796317883102' out.txt || fail "big.zstd after the bombs: $(cat out.txt)"
echo "rolling bombs: $(cat err.txt)"
limited 256 "$tuner" ingest --db h.db --job x eventlog_v2_local-1796317883102 >out.txt 2>err.txt ||
	fail "a legitimate rolling directory: exit $?: $(cat err.txt)"
grep -q 'eventlog_v2_local-1796317883102: run local-1796317883102: event log, 3 stage attempts' out.txt ||
	fail "the legitimate rolling directory: $(cat out.txt)"

# ---------------------------------------------------------------- one line of 8 MiB
python3 - "$fixtures/eventlog/spark-3.5.9-plain" <<'PY'
import json, sys
src = [json.loads(l) for l in open(sys.argv[1])]
size = 8 * 1024 * 1024 - 4096
def write(name, event, path, fill, elem):
    # event with the list at path (keys) filled with elem to about size bytes
    ev = json.loads(json.dumps(event))
    obj = ev
    for k in path[:-1]:
        obj = obj[k]
    obj[path[-1]] = [fill]
    text = json.dumps(ev, separators=(",", ":"))
    n = (size - len(text)) // (len(elem) + 1)
    big = text.replace('"%s":[%s]' % (path[-1], json.dumps(fill, separators=(",", ":"))),
                       '"%s":[%s]' % (path[-1], ",".join([elem] * n)), 1)
    assert len(big) <= 8 * 1024 * 1024, len(big)
    lines = [json.dumps(e, separators=(",", ":")) for e in src]
    lines.insert(5, big)
    open(name, "w").write("\n".join(lines) + "\n")
task_end = next(e for e in src if e["Event"] == "SparkListenerTaskEnd")
stage = next(e for e in src if e["Event"] == "SparkListenerStageCompleted")
write("task-end.log", task_end, ["Task Info", "Accumulables"], {}, "{}")
write("stage.log", stage, ["Stage Info", "RDD Info"], [], "[]")
sql = {"Event": "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart",
       "executionId": 0, "description": "count", "details": "", "physicalPlanDescription": "",
       "sparkPlanInfo": {"nodeName": "x", "simpleString": "x", "children": [], "metadata": {},
                         "metrics": []}, "time": 1796317883200, "modifiedConfigs": {}}
sql["physicalPlanDescription"] = "*(1) Range (0, 1000, step=1, splits=2)\n" * (size // 42)
lines = [json.dumps(e, separators=(",", ":")) for e in src]
lines.insert(5, json.dumps(sql, separators=(",", ":")))
open("sql.log", "w").write("\n".join(lines) + "\n")
PY
for log in task-end.log stage.log sql.log; do
	line=$(awk '{ if (length($0) > n) n = length($0) } END { print n }' "$log")
	python3 - "$tuner" "$log" "$line" <<'PY' || fail "$log: see above"
import resource, subprocess, sys
tuner, log, line = sys.argv[1], sys.argv[2], int(sys.argv[3])
r = subprocess.run([tuner, "ingest", "--db", "rss.db", "--job", "x", log], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
bound = 8 * line + (64 << 20)
print("%s: a line of %d bytes, peak RSS %.1f MB (bound %.1f MB)" % (log, line, peak / 1e6, bound / 1e6))
assert r.returncode == 0, "exit %d: %s" % (r.returncode, r.stderr)
assert "%s: run local-1796317883102" % log in r.stdout, r.stdout
assert peak <= bound, "peak RSS %d bytes, more than 8 x the line + 64 MiB (%d)" % (peak, bound)
PY
	limited 256 "$tuner" ingest --db h.db --job x "$log" >out.txt 2>err.txt ||
		fail "$log under 256 MiB of address space: exit $?: $(cat err.txt)"
done
echo "ingest-bounds: ok"
