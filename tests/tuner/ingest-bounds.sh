#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ingest-bounds.sh TUNER FIXTURES: `sparkshim-tuner ingest` on event logs a job's user forged,
# each run under an address-space limit (prlimit --as) so that memory is asserted, not timed:
#   - a zstd bomb (1 GiB of blank lines in ~40 KB) with a 1 GiB sparse tail (truncate -s) is
#     refused by the expansion bound, one line naming the file, the ratio and the limit, after
#     a few MB (the tail's size allows nothing);
#   - a legitimate log that compresses ~120 x and holds 80 MB is stored.
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
zstd -q -3 --rm big.log -o big.zstd
limited 256 "$tuner" ingest --db h.db --job x big.zstd >out.txt 2>err.txt ||
	fail "a legitimate log of $(stat -c %s big.zstd) bytes of zstd: exit $?: $(cat err.txt)"
grep -q 'big.zstd: run local-1796317883102: event log, 3 stage attempts' out.txt ||
	fail "the legitimate log: $(cat out.txt)"
echo "ingest-bounds: ok"
