#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tune-offline.sh TUNE_OFFLINE DATA_DIR: a short real instance of the offline benchmark
# (bench/tune-offline, docs/tuner-bench.md) over the committed measured grids, as CI runs the
# long evidence: every tuner and both starts are compared, the reference point is found, and
# the safe tuners (BO with its safety models, two-stage) never propose a configuration that a
# run which ran out of memory dominates, and two-stage never a CPU limit under the p90 of a
# run it has seen (the floor, docs/tuner-rules.md; cpu-light's bursty p90 asked for one on 10
# seeds before it). A grid measured at other settings than the derivation needs is refused
# with its file and line.
set -eu
bin=${1:?usage: tune-offline.sh TUNE_OFFLINE DATA_DIR}
data=${2:?usage: tune-offline.sh TUNE_OFFLINE DATA_DIR}
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d /tmp/sparkshim-tune-offline.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

for job in cpu-light mem-sort skew; do
	set -- "$data"/grid-"$job"*.runs
	[ -f "$1" ] || fail "no measured grid for $job in $data"
	seeds=3
	[ "$job" != cpu-light ] || seeds=10
	for bounds in grid policy; do
		"$bin" --seeds $seeds --runs 6 --bounds "$bounds" "$@" >"$tmp/out" ||
			fail "$job, $bounds bounds: exit $?"
		grep -q '^best safe point: objective [0-9.]* at heap' "$tmp/out" ||
			fail "$job, $bounds: no reference point: $(cat "$tmp/out")"
		[ "$(grep -c '^Start: ' "$tmp/out")" = 2 ] || fail "$job, $bounds: not both starts"
		for tuner in 'rules only' 'BO (safe)' 'BO without safety' 'two-stage' \
			'random search' 'VPA-like'; do
			[ "$(grep -cF "| $tuner |" "$tmp/out")" = 2 ] ||
				fail "$job, $bounds: $tuner not compared on both starts"
		done
		if grep -E '^\| (BO \(safe\)|two-stage) \|' "$tmp/out" | grep -qvE '\| 0 / [0-9]+ \|$'; then
			fail "$job, $bounds: a safe tuner proposed what a measured OOM dominates: $(cat "$tmp/out")"
		fi
		if grep -E '^\| two-stage \|' "$tmp/out" | grep -qvE '\| 0 / 0 \|$'; then
			fail "$job, $bounds: two-stage asked a CPU limit under a measured p90 or no larger than a throttled one: $(cat "$tmp/out")"
		fi
		! grep -qi 'nan' "$tmp/out" || fail "$job, $bounds: NaN in the output"
	done
	echo "ok: $job"
done

# the work bound (issue 24, defect 4): every point the reference may take burns at most the
# printed limit of core-seconds, fitted (the spread's last column: median / fitted) or, with
# --strict-runtime, the medians; without it, the run time alone
for job in cpu-light mem-sort skew; do
	for mode in fits medians; do
		strict=
		[ "$mode" = medians ] && strict=--strict-runtime
		"$bin" --seeds 1 --runs 1 --spread $strict "$data"/grid-"$job"*.runs >"$tmp/spread" ||
			fail "$job --spread $strict: exit $?"
		line=$(grep '^fastest good point: ' "$tmp/spread") || fail "$job: no constraint line"
		limit=$(printf '%s\n' "$line" | sed -n "s/.*; work limit \([0-9.]*\) core-s ($mode);.*/\1/p")
		[ -n "$limit" ] || fail "$job, $mode: no work limit in '$line'"
		within=${line##*constraint:}
		[ -n "$within" ] || fail "$job, $mode: no point within the constraints"
		for point in $within; do
			heap=${point%%/*} parts=${point#*/}
			work=$(awk -F'|' -v h=" $heap " -v p=" $parts " -v m="$mode" \
				'$2 == h && $3 == p { split($9, w, "/"); print (m == "fits" ? w[2] : w[1]) + 0 }' "$tmp/spread")
			awk -v w="$work" -v l="$limit" 'BEGIN { exit !(w + 0 > 0 && w + 0 <= l + 0) }' ||
				fail "$job, $mode: $point within the constraints with work '$work' over the limit $limit"
		done
		echo "ok: $job ($mode): the points within the bounds burn at most $limit core-s"
	done
	"$bin" --seeds 1 --runs 1 --spread --no-work-bound "$data"/grid-"$job"*.runs >"$tmp/spread" ||
		fail "$job --no-work-bound: exit $?"
	grep -q '^fastest good point: .*; points within the run-time constraint: ' "$tmp/spread" ||
		fail "$job --no-work-bound: $(grep '^fastest' "$tmp/spread")"
done

# the models between measured points (round_to_axis): with --world-per-seed, within a seed
# every tuner's same ask (a heap and partitions) runs at the same measured point; with the
# default coin per run the same asks land on both sides (so the check can fail); the
# history holds the measured point, or with --record-ask the ask. The pair, not each axis:
# skew's grid is not a full product (4 and 6 partitions have 4 heaps), and an ask's heap is
# rounded among the heaps measured at its rounded partitions
trace_runs() { # MODE...: "seed recorded asked run-at" heap, then the same for partitions
	for seed in 1 2 3 4 5 6; do
		"$bin" --seeds 1 --first-seed "$seed" --runs 10 --trace "$seed" "$@" "$data"/grid-skew*.runs >"$tmp/trace" ||
			fail "--trace $seed $*: exit $?"
		sed -n 's/.* heap \([0-9]*\)m (asked \([0-9]*\)m, run at \([0-9]*\)m).* \([0-9]*\) partitions (asked \([0-9]*\), run at \([0-9]*\)).*/\1 \2 \3 \4 \5 \6/p' \
			"$tmp/trace" | sed "s/^/$seed /"
	done
}
# the asks (field 3 heap, 6 partitions) that ran at two measured points in one seed
split_asks() {
	awk '{ k = $1 " " $3 " " $6; r = $4 " " $7
		if ((k in at) && at[k] != r) print k; at[k] = r }' "$1" | LC_ALL=C sort -u
}
trace_runs --world-per-seed --record-ask >"$tmp/world"
[ "$(wc -l <"$tmp/world")" -ge 300 ] || fail "trace: $(wc -l <"$tmp/world") runs read, not every tuner's"
awk '$2 != $3 || $5 != $6 { bad++ } END { exit bad > 0 }' "$tmp/world" ||
	fail "--record-ask: the history holds other values than the asks: $(awk '$2 != $3 || $5 != $6' "$tmp/world" | head -3)"
# an ask strictly between two measured heaps, made twice in a seed: the case the world fixes
again=$(awk '$3 > 512 && $3 < 2048 && $3 != 768 && $3 != 1024 && $3 != 1536 { n[$1 " " $3]++ }
	END { for (k in n) if (n[k] > 1) c++; print c + 0 }' "$tmp/world")
[ "$again" -ge 1 ] || fail "trace: no ask between two measured heaps made twice in a seed: nothing checked"
split=$(split_asks "$tmp/world")
[ -z "$split" ] || fail "one seed's same ask ran at two measured points (seed, heap, partitions): $split"
trace_runs --record-ask >"$tmp/coin"
# heaps rounded among those measured at the rounded partitions: 1280m is measured at 4 and 6
# partitions only, so an ask between 1280m and 1536m at 8 or more partitions runs at 1g or
# 1536m, both measured there (rounded on every heap first, it ran at 1536m each time)
between=$(awk '$3 > 1280 && $3 < 1536 && $7 >= 8' "$tmp/coin" | wc -l)
[ "$between" -ge 10 ] || fail "trace: $between asks between 1280m and 1536m at 8 or more partitions: nothing checked"
awk '$3 > 1280 && $3 < 1536 && $7 >= 8 && $4 == 1024 { n++ } END { exit n == 0 }' "$tmp/coin" ||
	fail "no ask between 1280m and 1536m at 8 or more partitions ran at 1g: the heap was rounded on every count's heaps"
[ -n "$(split_asks "$tmp/coin")" ] || fail "a coin per run: no ask ran at two values (the check above cannot fail)"
trace_runs >"$tmp/point"
awk '$2 != $4 || $5 != $7 { bad++ } END { exit bad > 0 }' "$tmp/point" ||
	fail "by default the history holds other values than the points: $(awk '$2 != $4 || $5 != $7' "$tmp/point" | head -3)"
echo "ok: --world-per-seed: one world a seed ($(wc -l <"$tmp/world") runs, $again asks between measured heaps made again)"

# the agent's heap after GC, measured in a session of its own (--after-gc, docs/tuner-bench.md):
# given to the grid's runs at the points it measured, shown in the spread, and read by the
# tuner: two-stage's skew episodes change with it (its floor and the rules' hold), and it
# still proposes nothing a measured OOM dominates
set --
for f in "$data"/after-gc-skew*.runs; do
	[ ! -f "$f" ] || set -- "$@" --after-gc "$f"
done
[ $# -gt 0 ] || fail "no heap-after-GC readings of skew in $data (after-gc-skew*.runs)"
for f in "$data"/grid-skew*.runs; do set -- "$@" "$f"; done
"$bin" --seeds 1 --runs 1 --spread "$@" >"$tmp/ag" || fail "--after-gc --spread: exit $?"
given=$(sed -n 's/^heap after GC (--after-gc, [0-9]* files\{0,1\}): given to \([0-9]*\) of [0-9]* points.*/\1/p' "$tmp/ag")
[ "${given:-0}" -ge 20 ] || fail "--after-gc: readings given to '${given:-}' points: $(grep '^heap after GC' "$tmp/ag")"
shown=$(awk -F'|' '$2 ~ /^ [0-9]+m $/ && $10 + 0 > 0 { n++ } END { print n + 0 }' "$tmp/ag")
[ "$shown" = "$given" ] || fail "--after-gc: $given points given readings, $shown shown in the spread"
changed=0
for seed in 1 2 3 4 5 6; do
	"$bin" --seeds 1 --first-seed "$seed" --runs 10 --trace "$seed" "$@" >"$tmp/with" ||
		fail "--after-gc --trace $seed: exit $?"
	"$bin" --seeds 1 --first-seed "$seed" --runs 10 --trace "$seed" "$data"/grid-skew*.runs >"$tmp/without" ||
		fail "--trace $seed: exit $?"
	[ "$(grep -cE '^\| two-stage \|' "$tmp/with")" = 2 ] || fail "--after-gc, seed $seed: not both starts"
	if grep -E '^\| two-stage \|' "$tmp/with" | grep -qvE '\| 0 / 0 \|$'; then
		fail "--after-gc, seed $seed: two-stage proposed what a measured OOM or p90 dominates: $(grep '^| two-stage' "$tmp/with")"
	fi
	[ "$(grep '^  two-stage' "$tmp/with")" = "$(grep '^  two-stage' "$tmp/without")" ] || changed=$((changed + 1))
done
[ "$changed" -ge 1 ] || fail "--after-gc: two-stage's skew episodes are the same with the readings as without (seeds 1-6)"
echo "ok: --after-gc: readings at $given points, two-stage changed in $changed of 6 seeds"

# --heap-margin (the proposed target, docs/tuner-bench.md): the reference's heap is at least
# 1.10x every heap that ran out of memory at its partitions or more; skew's default reference
# (960m at 8 partitions, where 1g ran out once) is not, so the check can fail
clear_of_oom() { # OUT: exit 0 when OUT's reference heap clears every measured OOM at >= its partitions
	python3 - "$1" "$data"/grid-skew*.runs <<'PY'
import json, re, sys
ref = re.search(r"^best safe point: .* at heap (\d+)m, (\d+) partitions", open(sys.argv[1]).read(), re.M)
heap, parts = int(ref.group(1)), int(ref.group(2))
ran_out = 0
for path in sys.argv[2:]:
    for line in open(path):
        r = json.loads(line)
        if r["failure"] in ("oom", "executor_lost") and r["shuffle_partitions"] >= parts:
            ran_out = max(ran_out, r["heap_bytes"] >> 20)
sys.exit(0 if heap >= 1.10 * ran_out else 1)
PY
}
"$bin" --seeds 1 --runs 1 "$data"/grid-skew*.runs >"$tmp/nomargin" || fail "skew: exit $?"
! clear_of_oom "$tmp/nomargin" || fail "skew's default reference already clears its OOMs: the --heap-margin check cannot fail"
"$bin" --seeds 1 --runs 1 --heap-margin "$data"/grid-skew*.runs >"$tmp/margin" || fail "skew --heap-margin: exit $?"
clear_of_oom "$tmp/margin" || fail "--heap-margin: $(grep '^best safe point' "$tmp/margin")"
grep -q 'heap >= 1.10x every heap that ran out' "$tmp/margin" || fail "--heap-margin: not in the legend"
echo "ok: --heap-margin: $(sed -n 's/^best safe point: objective [0-9.]* at heap \([0-9]*m, [0-9]* partitions\).*/\1/p' "$tmp/margin")"

# the derivation needs runs measured at 1000m and burst 0: anything else is refused
set -- "$data"/grid-skew*.runs
sed -n 1p "$1" | sed 's/"millicores":1000/"millicores":500/' >"$tmp/bad.runs"
grep -q '"millicores":500' "$tmp/bad.runs" || fail "no run at 1000m to alter in $1"
if "$bin" "$tmp/bad.runs" >"$tmp/out" 2>"$tmp/err"; then
	fail "a grid at 500m accepted"
fi
grep -q "bad.runs:1: measured at 500m" "$tmp/err" || fail "refusal: $(cat "$tmp/err")"
echo "ok: refusal"
