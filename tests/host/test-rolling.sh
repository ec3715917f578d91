#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-rolling.sh SPARKSHIM PWRHOG: executor rolling on this host (issue 14,
# docs/rolling.md), with the age trigger, which needs no memory controller. The executor
# is a stand-in (pwrhog, tests/vm/helpers/pwrhog.c) run through a file named java with a
# backend's class name, as rolling looks for the JVM; it records every SIGPWR and TERM.
#   c1 it catches SIGPWR and carries on: exactly one SIGPWR, TERM rolling.grace_seconds
#      later, decisions decommission then terminate, the Prometheus counter at 1;
#   c2 it does not catch SIGPWR: nothing sent, it runs on, "unavailable" firings counted
#      (one per cool-down) and one warning;
#   c3 a bash wrapper runs it as a child: SIGPWR reaches the java process only, which
#      decommissions (exit 0) while the wrapper lives;
#   c4 no target: a wrapper that traps PWR and names the backend (not java), a java that
#      catches PWR but runs no backend: none gets SIGPWR;
#   c5 rolling off: the report's rolling is null, no series, nothing sent;
#   c6 the executor runs as nobody: a set-uid-root java and a root java moved into its
#      cgroup, both naming the backend and catching PWR, get nothing (jvm_target_ids_ok);
#   c7 a root wrapper runs the java as nobody (YARN's container-executor): it gets SIGPWR.
# fail_mode open, so the runs happen whether or not this host has the controllers.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
pwrhog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/tests/host/lib.sh"
backend=org.apache.spark.executor.CoarseGrainedExecutorBackend
tmp=$(mktemp -d)
pids=
cleanup() {
	for p in $pids; do kill "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
# c6 and c7 run stand-ins as nobody: they must reach their binary (a copy: the build tree
# may be below a directory nobody cannot enter) and their record
chmod 0755 "$tmp"
mkdir bin
cp "$pwrhog" bin/pwrhog
ln -s pwrhog bin/java
pwrhog=$tmp/bin/pwrhog

policy() { # FILE JSON
	printf '%s\n' "$2" >"$1"
	chmod 0644 "$1"
}
policy off.json '{ "version": 1, "fail_mode": "open" }'
policy age.json '{ "version": 1, "fail_mode": "open",
  "rolling": { "grace_seconds": 2, "age": { "seconds": 1 } } }'
policy again.json '{ "version": 1, "fail_mode": "open",
  "rolling": { "grace_seconds": 2, "age": { "seconds": 1, "cooldown_seconds": 1 } } }'

# start NAME POLICY CMD...: sparkshim in the background (pid in $runner); its stderr in
# NAME.err, reports in NAME.jsonl, Prometheus file NAME.prom, every version of which is
# appended to NAME.seen while it runs
start() {
	_name=$1 _policy=$2
	shift 2
	"$shim" run -v --policy "$_policy" --memory 256m --grace 2 --name "rolling-$_name-$$" \
		--report "$_name.jsonl" --report-interval 1 --prometheus "$tmp/$_name.prom" \
		-- "$@" 2>"$_name.err" &
	runner=$!
	pids="$pids $runner"
	(
		while kill -0 $runner 2>/dev/null; do
			cat "$_name.prom" >>"$_name.seen" 2>/dev/null || true
			sleep 0.2
		done
	) &
}

# finish NAME: wait for the runner (at most 60 s: a guard, not a timing); rc = its status
finish() {
	for _ in $(seq 600); do
		kill -0 $runner 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 $runner 2>/dev/null; then
		cat "$1.err"
		fail "$1: sparkshim still runs after 60 s"
	fi
	rc=0
	wait $runner || rc=$?
	wait
	echo "$1: exit $rc"
	sed 's/^/  | /' "$1.err"
}

# series NAME TRIGGER ACTION: the largest value the counter had in NAME's Prometheus file
series() {
	cat "$1.seen" "$1.prom" 2>/dev/null | awk -v t="trigger=\"$2\"" -v a="action=\"$3\"" '
		/^sparkshim_executor_rolling_decisions_total\{/ && index($0, t) && index($0, a) {
			if ($NF + 0 > max) max = $NF + 0
		}
		END { print max + 0 }'
}

# await_unavailable NAME N: until the Prometheus file counts N unavailable firings of age
await_unavailable() {
	for _ in $(seq 600); do
		[ "$(series "$1" age unavailable)" -ge "$2" ] && return 0
		kill -0 $runner 2>/dev/null || break
		sleep 0.1
	done
	cat "$1.err"
	fail "$1: the Prometheus file never counted $2 unavailable firings"
}

# rolling NAME PYTHON-EXPRESSION...: assert on the final report's "rolling" object (r),
# its exit object (x); prints r
rolling() {
	python3 - "$@" <<'PY'
import json, sys
name = sys.argv[1]
docs = [json.loads(l) for l in open(name + ".jsonl")]
finals = [d for d in docs if d["kind"] == "final"]
assert len(finals) == 1, f"{name}: {len(finals)} final reports"
f = finals[0]
assert "rolling" in f, f"{name}: the final report has no rolling key"
r, x = f["rolling"], f["exit"]
acts = [d["action"] for d in r["decisions"]] if r else None
for expr in sys.argv[2:]:
    assert eval(expr), f"{name}: {expr} is false; rolling={json.dumps(r)} exit={x}"
print(f"{name}: rolling", json.dumps(r))
PY
}

# log_lines NAME LEVEL: the number of sparkshim's "LEVEL: rolling: " lines in NAME.err
log_lines() {
	grep -Ec "^sparkshim(\[[0-9]+\])?: $2: rolling: " "$1.err" || true
}

# arrival FILE EVENT: the stand-in's time of its first EVENT (seconds), or -1
arrival() {
	sed -n "s/^pwrhog: $2 at \([0-9.]*\) s.*/\1/p" "$1" | head -n1 | grep . || echo -1
}

echo "c1: the stand-in catches SIGPWR and ignores it"
start c1 age.json bin/java -Xmx256m "$backend" --executor-id 1 --cores 1 \
	--record "$tmp/c1.rec" --pwr ignore --term exit --timeout 60
finish c1
cat c1.rec
[ "$(grep -c '^pwrhog: SIGPWR at' c1.rec)" = 1 ] || fail "c1: not exactly one SIGPWR"
[ "$(grep -c '^pwrhog: TERM at' c1.rec)" = 1 ] || fail "c1: not exactly one TERM"
pwr=$(arrival c1.rec SIGPWR)
term=$(arrival c1.rec TERM)
awk -v p="$pwr" -v t="$term" 'BEGIN { exit !(p >= 0.9 && t - p >= 1.9) }' ||
	fail "c1: SIGPWR at $pwr s, TERM at $term s: not after age 1 s, then the 2 s grace"
[ "$rc" = 143 ] || fail "c1: exit $rc, expected the stand-in's 143 after TERM"
rolling c1 'r["sigpwr_caught"] is True' 'acts == ["decommission", "terminate"]' \
	'r["decisions"][0]["trigger"] == "age"' 'r["decisions"][0]["unit"] == "seconds"' \
	'r["decisions"][0]["threshold"] == 1' 'r["decisions"][0]["value"] >= 1' \
	'r["decisions"][0]["window_seconds"] is None' 'r["decisions"][0]["age_seconds"] >= 1' \
	'r["decisions"][1]["age_seconds"] - r["decisions"][0]["age_seconds"] >= 1.9' \
	'r["counts"] == {"decommission": 1, "unavailable": 0, "terminate": 1}' \
	'r["state"] == "terminating"' 'r["decisions_dropped"] == 0' 'x["status"] == 143'
[ "$(series c1 age decommission)" = 1 ] || { cat c1.seen; fail "c1: the decommission counter is not 1"; }
# both actions are warnings (the java personality shows only those): SIGPWR, then TERM
[ "$(log_lines c1 warning)" = 2 ] || fail "c1: $(log_lines c1 warning) rolling warnings, expected 2"
grep -Eq "warning: rolling: age: .*: SIGPWR to pid [0-9]+$" c1.err ||
	fail "c1: the SIGPWR warning does not name the trigger and the pid"
grep -Eq "warning: rolling: age: still running .*: TERM$" c1.err || fail "c1: no TERM warning"
echo "ok: c1: one SIGPWR at $pwr s, TERM at $term s, decommission then terminate"

echo "c2: the stand-in does not catch SIGPWR"
start c2 again.json bin/java "$backend" --executor-id 2 --record "$tmp/c2.rec" --pwr default \
	--term exit --timeout 60
await_unavailable c2 3
kill -TERM $runner
finish c2
cat c2.rec
! grep -q SIGPWR c2.rec || fail "c2: SIGPWR was sent to an executor that does not catch it"
grep -q '^pwrhog: TERM at' c2.rec || fail "c2: the stand-in did not live to see the TERM"
[ "$rc" = 143 ] || fail "c2: exit $rc, expected 143 (it ran until our TERM)"
rolling c2 'r["sigpwr_caught"] is False' 'len(acts) >= 3' 'set(acts) == {"unavailable"}' \
	'r["counts"]["unavailable"] == len(acts) + r["decisions_dropped"]' \
	'r["counts"]["decommission"] == 0' 'r["counts"]["terminate"] == 0' \
	'r["state"] == "watching"' 'all(d["trigger"] == "age" for d in r["decisions"])'
[ "$(log_lines c2 warning)" = 1 ] || fail "c2: $(log_lines c2 warning) rolling warnings, expected exactly one"
! grep -q "SIGPWR to pid" c2.err || fail "c2: a line says SIGPWR was sent"
echo "ok: c2: nothing sent, $(series c2 age unavailable)+ unavailable firings, one warning"

echo "c3: a bash wrapper runs the java stand-in"
# shellcheck disable=SC2016 # the wrapper's own "$@"
start c3 age.json bash -c '"$@"; s=$?; echo "wrapper: child exited $s" >&2; exit $s' wrapper \
	"$tmp/bin/java" "$backend" --executor-id 3 --record "$tmp/c3.rec" --pwr catch --timeout 60
finish c3
cat c3.rec
[ "$(grep -c '^pwrhog: SIGPWR at' c3.rec)" = 1 ] || fail "c3: the java stand-in did not get one SIGPWR"
grep -q '^pwrhog: exit 0' c3.rec || fail "c3: the stand-in did not decommission"
grep -q '^wrapper: child exited 0$' c3.err || fail "c3: the wrapper did not outlive SIGPWR"
[ "$rc" = 0 ] || fail "c3: exit $rc, expected 0 (the wrapper's, after its child decommissioned)"
rolling c3 'r["sigpwr_caught"] is True' 'acts == ["decommission"]' 'x["status"] == 0'
echo "ok: c3: SIGPWR reached the java child only; decommissioned, exit 0"

echo "c4: no target: a PWR-trapping wrapper naming the backend, a java running no backend"
# shellcheck disable=SC2016 # the wrapper's own $1, $2
start c4 again.json bash -c '
	trap "echo wrapper: SIGPWR >>$1" PWR
	"$2" "$1" --record "$1" --pwr catch --timeout 60 &
	while :; do sleep 1 & wait $!; done' wrapper "$tmp/c4.rec" "$tmp/bin/java" "$backend"
await_unavailable c4 3
kill -TERM $runner
finish c4
cat c4.rec
! grep -q SIGPWR c4.rec || fail "c4: SIGPWR reached a process that is not the executor's JVM"
grep -q '^pwrhog: ready' c4.rec || fail "c4: the java stand-in did not start"
rolling c4 'r["sigpwr_caught"] is None' 'set(acts) == {"unavailable"}' 'r["counts"]["decommission"] == 0'
[ "$(log_lines c4 warning)" = 1 ] || fail "c4: $(log_lines c4 warning) rolling warnings, expected exactly one"
echo "ok: c4: nothing sent to the wrapper nor to a java that runs no executor"

if ! command -v setpriv >/dev/null 2>&1; then
	echo "c6, c7: skipped: no setpriv (util-linux) to run an executor as another user"
else
	as_nobody='setpriv --reuid=65534 --regid=65534 --clear-groups'

	echo "c6: the executor runs as nobody: neither a set-uid java nor a root java moved into its cgroup is its JVM"
	mkdir suid
	cp "$pwrhog" suid/java
	chmod 4755 suid/java
	: >c6.rec
	chmod 0666 c6.rec
	# shellcheck disable=SC2016,SC2086 # the wrapper's own $1...; as_nobody splits
	start c6 again.json $as_nobody bash -c '
		"$1" "$2" --record "$3" --pwr catch --timeout 60 &
		while :; do sleep 1 & wait $!; done' wrapper "$tmp/suid/java" "$backend" "$tmp/c6.rec"
	"$tmp/bin/java" "$backend" --record "$tmp/c6.rec" --pwr catch --timeout 60 2>/dev/null &
	rootjava=$!
	pids="$pids $rootjava"
	leaf=
	for _ in $(seq 600); do # a guard, not a timing
		leaf=$(sed -n 's/.*: info: measuring .* in \(\/.*\) (.*/\1/p' c6.err)
		[ -n "$leaf" ] && [ "$(grep -c '^pwrhog: ready' c6.rec)" -ge 2 ] && break
		sleep 0.1
	done
	[ -n "$leaf" ] || fail "c6: no 'measuring ... in LEAF' line"
	echo $rootjava >"$leaf/cgroup.procs"
	suid_pid=$(sed -n 's/^pwrhog: ready pid //p' c6.rec | grep -vx $rootjava | head -n1)
	uids=$(sed -n 's/^Uid:\t//p' "/proc/$suid_pid/status" | tr '\t' ' ')
	echo "c6: the set-uid java $suid_pid has uids $uids; root's java $rootjava is in $leaf"
	[ "$uids" = "65534 0 0 0" ] || fail "c6: the set-uid java runs with uids $uids (a nosuid file system?)"
	# the scans after both are in place: two more firings
	await_unavailable c6 $(($(series c6 age unavailable) + 2))
	kill -TERM $runner
	finish c6
	cat c6.rec
	! grep -q SIGPWR c6.rec || fail "c6: SIGPWR reached a set-id or root process of a user's executor"
	rolling c6 'r["sigpwr_caught"] is None' 'set(acts) == {"unavailable"}'
	echo "ok: c6: nothing sent to a set-uid java or root's java in a user's executor"

	echo "c7: a root wrapper runs the executor's java as nobody (container-executor's way)"
	: >c7.rec
	chmod 0666 c7.rec
	# shellcheck disable=SC2016,SC2086 # the wrapper's own "$@"; as_nobody splits
	start c7 age.json bash -c '"$@"; s=$?; echo "wrapper: child exited $s" >&2; exit $s' wrapper \
		$as_nobody "$tmp/bin/java" "$backend" --record "$tmp/c7.rec" --pwr catch --timeout 60
	finish c7
	cat c7.rec
	[ "$(grep -c '^pwrhog: SIGPWR at' c7.rec)" = 1 ] || fail "c7: the user's java did not get one SIGPWR"
	[ "$rc" = 0 ] || fail "c7: exit $rc, expected 0 after the decommission"
	rolling c7 'r["sigpwr_caught"] is True' 'acts == ["decommission"]'
	echo "ok: c7: SIGPWR reached the user's java under a root wrapper"
fi

echo "c5: rolling off"
start c5 off.json bin/java "$backend" --executor-id 5 --record "$tmp/c5.rec" --pwr catch --timeout 3
finish c5
[ "$rc" = 4 ] || fail "c5: exit $rc, expected the stand-in's 4 at its timeout"
! grep -q SIGPWR c5.rec || fail "c5: SIGPWR with rolling off"
rolling c5 'r is None'
! grep -q '^sparkshim_executor_rolling_decisions_total{' c5.seen || fail "c5: rolling series with rolling off"
[ "$(log_lines c5 warning)$(log_lines c5 info)" = 00 ] || fail "c5: rolling logged"
echo "ok: c5: rolling null, no series, nothing sent"
