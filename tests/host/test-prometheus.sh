#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-prometheus.sh SPARKSHIM: the Prometheus files of several executors on one node
# (issue 12, part 4; node_exporter's textfile-collector convention): one file per executor
# named by the policy's template, present while it runs, removed when it ends (exit 0, a
# failing command, TERM to sparkshim); hostile app ids stay one escaped file name in the
# collector's directory; files of a sparkshim that is gone are swept, live ones kept; the
# report file template gives one JSON-lines file per executor.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
pids=
trap 'for p in $pids; do kill $p 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
cd "$tmp"
mkdir textfile reports
chmod 0755 textfile reports
cat >policy.json <<JSON
{ "version": 1, "fail_mode": "open",
  "report": { "prometheus_path": "$tmp/textfile/sparkshim-{name}.prom",
              "path": "$tmp/reports/{app_id}-{executor_id}.jsonl",
              "interval_seconds": 1 } }
JSON
chmod 0644 policy.json
run="$shim run -q --policy $tmp/policy.json --memory 256m"

# wait_for FILE: until FILE exists, at most 60 s (a guard, not a timing). The executors wait
# for a gate file that the test makes once it has seen theirs (held GATE): a file that lives
# only while its executor runs is never missed, however late a busy machine runs the poll.
held() { echo "while [ ! -e $tmp/$1 ]; do sleep 0.05; done"; }
wait_for() {
	for _ in $(seq 600); do [ -f "$1" ] && return 0; sleep 0.1; done
	ls -la textfile
	fail "$1 did not appear"
}

echo "two concurrent executors"
$run -- sh -c "$(held go-conc)" x --app-id app-conc --executor-id 1 & a=$!
$run -- sh -c "$(held go-conc)" x --app-id app-conc --executor-id 2 & b=$!
pids="$a $b"
wait_for textfile/sparkshim-app-conc-1.prom
wait_for textfile/sparkshim-app-conc-2.prom
for e in 1 2; do
	f=textfile/sparkshim-app-conc-$e.prom
	grep -q "^sparkshim_container_spec_memory_limit_bytes{app_id=\"app-conc\",executor_id=\"$e\",name=\"app-conc-$e\"} " $f ||
		{ cat $f; fail "$f lacks its executor's series"; }
	head -1 $f | grep -q '^# sparkshim-owner pid=[0-9]* start=[0-9]* pidns=[0-9]* boot=' ||
		{ head -1 $f; fail "$f has no owner line"; }
done
touch go-conc
wait $a || fail "executor 1 failed"
wait $b || fail "executor 2 failed"
pids=
[ -z "$(ls -A textfile)" ] || { ls -la textfile; fail "files left after both executors ended"; }
for e in 1 2; do
	grep -q '"kind":"final"' reports/app-conc-$e.jsonl || fail "reports/app-conc-$e.jsonl has no final report"
done
[ "$(grep -c '"executor_id":"1"' reports/app-conc-2.jsonl || true)" = 0 ] || fail "executor 1 wrote executor 2's report file"
echo "ok: two .prom files while both ran, none after; one report file each"

echo "a failing command, and TERM to sparkshim"
$run -- sh -c "$(held go-fail); exit 3" x --app-id app-fail --executor-id 1 & a=$!
pids=$a
wait_for textfile/sparkshim-app-fail-1.prom
touch go-fail
set +e
wait $a
rc=$?
set -e
[ $rc = 3 ] || fail "the failing command's status is $rc, expected 3"
[ ! -e textfile/sparkshim-app-fail-1.prom ] || fail "the failing executor's file stayed"
$run -- sh -c 'exec sleep 30' x --app-id app-term --executor-id 1 & a=$!
pids=$a
wait_for textfile/sparkshim-app-term-1.prom
kill -TERM $a
set +e
wait $a
rc=$?
set -e
pids=
[ $rc = 143 ] || fail "sparkshim killed by TERM exited $rc, expected 143"
[ ! -e textfile/sparkshim-app-term-1.prom ] || fail "the file stayed after TERM"
echo "ok: removed after exit 3 and after TERM (143)"

echo "hostile app ids"
long=$(printf 'L%.0s' $(seq 127))
ctrl=$(printf 'c\001\033[31m\177')
for id in '../x' 'a/b' "$long" "$ctrl" '.hidden' '' "$(printf 'x\ny')"; do
	rm -f go-hostile
	set +e
	$run --name "hostile-$$" -- sh -c "$(held go-hostile)" x --app-id "$id" --executor-id 1 >out.txt 2>err.txt &
	a=$!
	set -e
	pids=$a
	wait_for textfile/sparkshim-hostile-$$.prom
	touch go-hostile
	wait $a || { cat err.txt; fail "run with app id '$id' failed"; }
	pids=
done
[ -z "$(ls -A textfile)" ] || { ls -la textfile; fail "hostile runs left files"; }
# the report files: one escaped file name each, all in reports/
ls -A reports >names.txt
python3 - reports names.txt "$tmp" <<'PY'
import os, re, sys
reports, names, tmp = sys.argv[1:4]
got = sorted(open(names).read().split("\n")[:-1])
for n in got:
    assert re.fullmatch(r"[A-Za-z0-9_.-]{1,200}", n) and not n.startswith("."), f"bad name {n!r}"
want = {"_.._x-1.jsonl", "_.hidden-1.jsonl", "-1.jsonl", "a_b-1.jsonl", "c___31m_-1.jsonl", "x_y-1.jsonl"}
missing = want - set(got)
assert not missing, f"missing {missing} in {got}"
long = [n for n in got if n.startswith("LLL")]
assert len(long) == 1 and re.fullmatch(r"L{47}-[0-9a-f]{16}-1\.jsonl", long[0]), long
# nothing escaped the directory
for root, dirs, files in os.walk(tmp):
    for f in files:
        assert not (f.endswith(".jsonl") and root != os.path.join(tmp, reports)), os.path.join(root, f)
print(f"ok: hostile app ids give {len(got)} file names in reports/: {sorted(got)[:4]}...")
PY
# label values stay one line of valid text
$run --name "labels-$$" -- sh -c "$(held go-labels)" x --app-id "$(printf 'a"b\\c\nd\001\377')" --executor-id 1 & a=$!
pids=$a
wait_for textfile/sparkshim-labels-$$.prom
cp textfile/sparkshim-labels-$$.prom labels.prom
touch go-labels
wait $a
pids=
grep -q '^sparkshim_start_time_seconds{app_id="a\\"b\\\\c\\nd??",executor_id="1",name="labels-'$$'"} ' labels.prom ||
	{ grep start_time labels.prom; fail "label values are not escaped"; }
echo "ok: label values escaped (quote, backslash, newline; control and non-UTF-8 bytes as ?)"

echo "stale files of a sparkshim that is gone"
boot=$(cat /proc/sys/kernel/random/boot_id)
pidns=$(stat -L -c %i /proc/self/ns/pid)
sleep 0 & dead=$!
wait $dead
start=$(cut -d' ' -f22 /proc/$$/stat)
printf '# sparkshim-owner pid=%d start=1 pidns=%s boot=%s\nstale_metric 1\n' "$dead" "$pidns" "$boot" >textfile/sparkshim-dead.prom
printf '# sparkshim-owner pid=%d start=1 pidns=%s boot=00000000-0000-0000-0000-000000000000\nstale_metric 1\n' $$ "$pidns" >textfile/sparkshim-oldboot.prom
printf '# sparkshim-owner pid=%d start=%s pidns=%s boot=%s\nlive_metric 1\n' $$ "$start" "$pidns" "$boot" >textfile/sparkshim-live.prom
printf '# sparkshim-owner pid=%d start=1 pidns=1 boot=%s\nother_ns 1\n' "$dead" "$boot" >textfile/sparkshim-otherns.prom
printf 'node_other_metric 1\n' >textfile/other.prom
$run -- sh -c true x --app-id app-sweep --executor-id 1 || fail "run failed"
for f in dead oldboot; do [ ! -e textfile/sparkshim-$f.prom ] || fail "sparkshim-$f.prom was not swept"; done
for f in sparkshim-live sparkshim-otherns other; do [ -e textfile/$f.prom ] || fail "$f.prom was swept"; done
echo "ok: files of a dead pid and of another boot swept; a live owner's, another pid namespace's and a foreign file kept"

echo "bad templates"
for t in "$tmp/textfile/m.txt" "$tmp/{name}/m.prom" "$tmp/textfile/{nam}.prom" "$tmp/textfile/.{name}.prom"; do
	set +e
	$shim run -q --policy "$tmp/policy.json" --memory 256m --prometheus "$t" -- true >out.txt 2>err.txt
	rc=$?
	set -e
	[ $rc = 120 ] && [ "$(wc -l <err.txt)" = 1 ] && grep -q -- "--prometheus: '$t' " err.txt ||
		{ cat err.txt; fail "--prometheus $t: exit $rc"; }
done
echo "ok: bad --prometheus templates refused (exit 120, one line): $(cat err.txt)"
