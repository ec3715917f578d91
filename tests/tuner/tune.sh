#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tune.sh SPARKSHIM: `sparkshim ingest`, `sparkshim tune` and `sparkshim report --job` as an
# admin runs them (sparkshim-tune(1)), through sparkshim's own dispatch to sparkshim-tuner,
# over real reports of `sparkshim run` (stand-in executors that sleep: CPU use near 0 of a
# 2000-millicore request):
#   - the rules lower the CPU request, with their reason in --format json, the same output
#     twice (deterministic), conf and properties forms with the executors' environment;
#   - the policy's bounds hold (cpu.millicores.min) and say so;
#   - report --job lists the runs (table and JSON lines);
#   - exit statuses: 2 for a job or a history that is not there (and no file made), 120 for
#     a bad flag, 121 for a bad policy.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fixtures=${2:?usage: tune.sh SPARKSHIM FIXTURES}
fail() { echo "FAIL: $*"; exit 1; }

tmp=$(mktemp -d /tmp/sparkshim-tune.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# run times here are whole seconds of a loaded machine: the run-time rules are the unit
# suite's (test-rules), not this one's
printf '{ "version": 1, "fail_mode": "open", "tuner": { "runtime_target": 100, "runtime_allowance": 100 } }\n' >open.json
printf '{ "version": 1, "cpu": { "millicores": { "min": 1500 } }, "tuner": { "runtime_target": 100 } }\n' >bounded.json
printf '{ "version": 1, "tuner": { "bogus": 1 } }\n' >bad.json
chmod 0644 open.json bounded.json bad.json

for i in 1 2 3 4; do
	for e in 1 2; do
		"$shim" run -q --policy open.json --memory 256m --cores 2 --millicores 2000 \
			--report "run$i.jsonl" --report-interval 1 -- /bin/sh -c 'sleep 1.2' sh \
			--app-id "app-tune-$i" --executor-id "$e" --cores 2 || fail "run $i.$e"
	done
done
echo "8 executors of 4 runs reported"

"$shim" ingest --policy open.json --db h.db --job nightly run1.jsonl run2.jsonl run3.jsonl \
	run4.jsonl >ingest.out || fail "ingest exited $?: $(cat ingest.out)"
[ "$(grep -c 'job nightly' ingest.out)" = 4 ] || fail "ingest said: $(cat ingest.out)"

# the job's users own the event log directory: a FIFO must not hang ingest, a symlink is
# not followed (root would read where it points), in a rolling event log's directory too
mkfifo fifo.jsonl
ln -s run1.jsonl link.jsonl
mkdir eventlog_v2_app-link
ln -s ../run1.jsonl eventlog_v2_app-link/events_1_app-link
status=0
timeout 20 "$shim" ingest --policy open.json --db h2.db --job other fifo.jsonl link.jsonl \
	eventlog_v2_app-link run1.jsonl >/dev/null 2>err.txt || status=$?
[ "$status" = 1 ] || fail "ingest of a FIFO and symlinks exited $status: $(cat err.txt)"
grep -q 'fifo.jsonl.*not a regular file' err.txt || fail "the FIFO: $(cat err.txt)"
grep -q 'link.jsonl.*symbolic link' err.txt || fail "the symlink: $(cat err.txt)"
grep -q 'events_1_app-link.*symbolic link' err.txt || fail "the rolling symlink: $(cat err.txt)"
"$shim" report --policy open.json --db h2.db --job other --json | grep -q '"app_id":"app-tune-1"' ||
	fail "the regular file beside them was not stored"

# --- tune -------------------------------------------------------------------------------
"$shim" tune --policy open.json --db h.db --job nightly --format json >a.json || fail "tune json"
"$shim" tune --policy open.json --db h.db --job nightly --format json >b.json || fail "tune json again"
cmp -s a.json b.json || fail "two tunes of one history differ"
python3 - a.json <<'PY' || fail "tune --format json: $(cat a.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["job"] == "nightly" and d["stage"] == "rules" and d["runs_used"] >= 1, d
m = int(d["properties"]["spark.executor.millicores"])
assert 0 < m < 2000, m
assert d["reasons"]["millicores"]["source"].startswith("rule:cpu"), d["reasons"]["millicores"]
assert d["properties"]["spark.executorEnv.SPARKSHIM_MILLICORES"] == str(m)
assert d["properties"]["spark.executor.cores"] == "2"
assert d["last_run"]["app_id"] == "app-tune-4", d["last_run"]
print("json: millicores 2000 ->", m, "by", d["reasons"]["millicores"]["source"] + ":",
      d["reasons"]["millicores"]["text"])
PY
"$shim" tune --policy open.json --db h.db --job nightly >conf.out || fail "tune conf"
grep -qx -- '--conf spark.executor.millicores=[0-9]*' conf.out || fail "conf: $(cat conf.out)"
grep -qx -- '--conf spark.executorEnv.SPARKSHIM_BURST_RATIO=[0-9.]*' conf.out || fail "conf: $(cat conf.out)"
grep -v -- '^--conf spark\.[A-Za-z._]*=[0-9a-z.]*$' conf.out && fail "conf: a line of another form"
"$shim" tune --policy open.json --db h.db --job nightly --format properties >p.out || fail "tune properties"
[ "$(grep -vc '^#' p.out)" = "$(wc -l <conf.out)" ] || fail "properties and conf differ: $(cat p.out)"

# stage 2 on demand: a prediction and a failure probability below the policy's bound
"$shim" tune --policy open.json --db h.db --job nightly --format json --stage bo >bo.json ||
	fail "tune --stage bo"
python3 - bo.json <<'PY' || fail "tune --stage bo: $(cat bo.json)"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["stage"] == "bo", d["stage"]
assert d["predicted_objective"] > 0 and 0 <= d["failure_probability"] < 0.1, d
assert d["reasons"]["millicores"]["source"] in ("bo", "bound", "unchanged"), d["reasons"]
print("bo: predicted objective", d["predicted_objective"], "P(failure)", d["failure_probability"])
PY
"$shim" tune --policy open.json --db h.db --job nightly --format json --stage rules | grep -q '"stage": "rules"' ||
	fail "tune --stage rules"

# the admin's bounds win
"$shim" tune --policy bounded.json --db h.db --job nightly --format json >bounded.out ||
	fail "tune with bounds"
python3 - bounded.out <<'PY' || fail "bounded: $(cat bounded.out)"
import json, sys
d = json.load(open(sys.argv[1]))
m = int(d["properties"]["spark.executor.millicores"])
assert m >= 1500, m
assert d["reasons"]["millicores"]["source"] in ("bound", "unchanged") or m >= 1500, d["reasons"]
print("bounded: millicores", m, d["reasons"]["millicores"])
PY

# what the policy does not let users set is not printed (sparkshim would refuse the next
# executor), and no rounding passes a bound
printf '{ "version": 1, "overrides": ["millicores", "burst_ratio"], "memory": { "burst_ratio": { "max": 0.126 } }, "tuner": { "runtime_target": 100 } }\n' >narrow.json
chmod 0644 narrow.json
"$shim" tune --policy narrow.json --db h.db --job nightly --format properties >narrow.out ||
	fail "tune with narrow overrides"
grep -q 'SPARKSHIM_MILLICORES=' narrow.out || fail "narrow: no millicores: $(cat narrow.out)"
! grep -q 'SPARKSHIM_MEMORY_OVERHEAD\|SPILL_FRACTION\|spillFraction' narrow.out ||
	fail "narrow: a setting the policy does not allow: $(cat narrow.out)"
ratio=$(sed -n 's/^spark.executor.memoryBurst.ratio=//p' narrow.out)
python3 -c 'import sys; assert float(sys.argv[1]) <= 0.126, sys.argv[1]' "$ratio" ||
	fail "narrow: burst ratio $ratio above the policy's 0.126"

# --- report --job -------------------------------------------------------------------------
"$shim" report --policy open.json --db h.db --job nightly >table.out || fail "report --job"
[ "$(grep -c '^app-tune-' table.out)" = 4 ] || fail "report table: $(cat table.out)"
grep -q '^job nightly: 4 runs, 0 failed$' table.out || fail "report table: $(cat table.out)"
"$shim" report --policy open.json --db h.db --job nightly --json >lines.out || fail "report --json"
python3 - lines.out <<'PY' || fail "report --json: $(cat lines.out)"
import json, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
assert [r["app_id"] for r in runs] == ["app-tune-1", "app-tune-2", "app-tune-3", "app-tune-4"], runs
assert all(r["executors"] == 2 and r["millicores"] == 2000 and r["failure"] == "ok" for r in runs)
assert all(0 <= r["cpu_util"] < 0.5 for r in runs), [r["cpu_util"] for r in runs]
PY
cat table.out

# --- exit statuses ------------------------------------------------------------------------
status=0; "$shim" tune --policy open.json --db h.db --job nobody 2>err.txt || status=$?
[ "$status" = 2 ] || fail "unknown job: exit $status"
grep -q "job 'nobody': no run" err.txt || fail "unknown job: $(cat err.txt)"
status=0; "$shim" tune --policy open.json --db "$tmp/none.db" --job nightly 2>err.txt || status=$?
[ "$status" = 2 ] || fail "missing history: exit $status"
[ ! -e "$tmp/none.db" ] || fail "tune made a history file"
status=0; "$shim" tune --policy open.json --db h.db --job nightly --format yaml 2>err.txt || status=$?
[ "$status" = 120 ] || fail "bad format: exit $status"
grep -q "'yaml' is not a format; allowed: conf, properties, json" err.txt || fail "bad format: $(cat err.txt)"
status=0; "$shim" tune --policy open.json --db h.db --job nightly --stage best 2>err.txt || status=$?
[ "$status" = 120 ] || fail "bad stage: exit $status"
status=0; "$shim" tune --policy open.json --db h.db 2>err.txt || status=$?
[ "$status" = 120 ] || fail "no --job: exit $status"
status=0; "$shim" tune --policy bad.json --db h.db --job nightly 2>err.txt || status=$?
[ "$status" = 121 ] || fail "bad policy: exit $status"
grep -q 'tuner.bogus: unknown key' err.txt || fail "bad policy: $(cat err.txt)"
# a job's history is one user's: event logs of two users (files of uids 1001 and 1002) may
# neither replace each other's run (an application id is the job's to choose) nor mix under
# one job name; a run from the future is refused
if [ "$(id -u)" = 0 ]; then
	el=$fixtures/eventlog/spark-3.5.9-plain
	cp "$el" victim.log
	sed 's/"spark.app.name":"el-default"/"spark.app.name":"el-other"/' "$el" >same-id.log
	sed 's/local-1796317883102/local-1796317883999/g' "$el" >same-job.log
	sed 's/local-1796317883102/local-4102444800000/g; s/"Timestamp":1796317/"Timestamp":4102444/g' \
		"$el" >future.log
	chown 1001 victim.log
	chown 1002 same-id.log same-job.log future.log
	"$shim" ingest --policy open.json --db o.db victim.log >/dev/null || fail "victim.log"
	# another user's log under the same application id: kept apart, under a key of its own
	# that nobody can take beforehand (issue 23: application ids are first-come)
	"$shim" ingest --policy open.json --db o.db same-id.log >/dev/null 2>err.txt ||
		fail "another user's log of the same application: $(cat err.txt)"
	"$shim" report --policy open.json --db o.db --job el-other --owner 1002 --json >other.out ||
		fail "report el-other"
	grep -q '"app_id":"local-1796317883102~[0-9a-f]\{12\}"' other.out || fail "same id, uid 1002: $(cat other.out)"
	# the other way round: a log claiming uid 1001's next application id first does not keep
	# uid 1001's real log out
	sed 's/local-1796317883102/local-1796317883555/g' "$el" >squat.log
	sed 's/local-1796317883102/local-1796317883555/g' "$el" >victim2.log
	chown 1002 squat.log
	chown 1001 victim2.log
	"$shim" ingest --policy open.json --db squat.db squat.log >/dev/null || fail "squat.log"
	"$shim" ingest --policy open.json --db squat.db victim2.log >/dev/null 2>err.txt ||
		fail "uid 1001's log after a squatter's: $(cat err.txt)"
	"$shim" report --policy open.json --db squat.db --job el-default --owner 1001 --json >v2.out ||
		fail "report --owner 1001 after a squatter"
	[ "$(wc -l <v2.out)" = 1 ] && grep -q '"app_id":"local-1796317883555~[0-9a-f]\{12\}"' v2.out ||
		fail "uid 1001's run after a squatter's: $(cat v2.out)"
	# the same file again: the same key, nothing doubled
	"$shim" ingest --policy open.json --db squat.db victim2.log >/dev/null || fail "victim2.log again"
	"$shim" report --policy open.json --db squat.db --job el-default --owner 1001 --json >v3.out
	cmp -s v2.out v3.out || fail "a second ingest changed the run: $(cat v2.out v3.out)"
	status=0; "$shim" ingest --policy open.json --db o.db future.log >/dev/null 2>err.txt || status=$?
	[ "$status" = 1 ] || fail "a run from the future: exit $status"
	grep -q 'starts more than a day from now' err.txt || fail "future: $(cat err.txt)"
	"$shim" ingest --policy open.json --db o.db same-job.log >/dev/null || fail "same-job.log"
	status=0; "$shim" report --policy open.json --db o.db --job el-default >/dev/null 2>err.txt || status=$?
	[ "$status" = 4 ] || fail "a job of two users: exit $status"
	grep -q "runs of uid 100[12] and of uid 100[12] in the history" err.txt || fail "two users: $(cat err.txt)"
	"$shim" report --policy open.json --db o.db --job el-default --owner 1001 --json >own.out ||
		fail "report --owner 1001"
	[ "$(wc -l <own.out)" = 1 ] && grep -q '"app_id":"local-1796317883102"' own.out ||
		fail "--owner 1001: $(cat own.out)"
	# the owner before the window (issue 23): newer runs of uid 1002 under the victim's job
	# name fill a window of history_runs = 2, yet --owner 1001 finds the victim's own run and
	# a plain tune sees the name's two users instead of tuning from the newer runs alone
	printf '{ "version": 1, "fail_mode": "open", "tuner": { "runtime_target": 100, "runtime_allowance": 100, "history_runs": 2 } }\n' >window.json
	chmod 0644 window.json
	for i in 1 2 3; do
		python3 -c 'import re, sys
i = int(sys.argv[2])
text = open(sys.argv[1]).read()
# every time and the application id, i hours later
print(re.sub(r"17963\d{8}", lambda m: str(int(m.group(0)) + i * 3600000), text), end="")' "$el" "$i" >squat$i.log
		chown 1002 squat$i.log
		"$shim" ingest --policy window.json --db o.db squat$i.log >/dev/null || fail "squat$i.log"
	done
	status=0; "$shim" tune --policy window.json --db o.db --job el-default >/dev/null 2>err.txt || status=$?
	[ "$status" = 4 ] || fail "a squatted job: tune exit $status: $(cat err.txt)"
	grep -q "runs of uid 1001 and of uid 1002 in the history" err.txt || fail "squatted: $(cat err.txt)"
	"$shim" report --policy window.json --db o.db --job el-default --owner 1001 --json >own.out 2>err.txt ||
		fail "squatted: report --owner 1001: $(cat err.txt)"
	[ "$(wc -l <own.out)" = 1 ] && grep -q '"app_id":"local-1796317883102"' own.out ||
		fail "squatted: --owner 1001: $(cat own.out)"
	"$shim" tune --policy window.json --db o.db --job el-default --owner 1001 >/dev/null 2>err.txt ||
		fail "squatted: tune --owner 1001: $(cat err.txt)"
	"$shim" report --policy window.json --db o.db --job el-default --owner 1002 --json >squat.out ||
		fail "squatted: report --owner 1002"
	[ "$(wc -l <squat.out)" = 2 ] && ! grep -q '"app_id":"local-1796317883102"' squat.out ||
		fail "squatted: --owner 1002, a window of 2: $(cat squat.out)"
	# a rolling log is its files' owner's, never its directory's (Spark makes the directory
	# 0770 for a group): uid 1002's files in uid 1001's directory are uid 1002's run; a log
	# with files of both users is refused (issue 23)
	# rolling APP [SUFFIX]: the fixture as a rolling log eventlog_v2_local-APP of job el-roll
	# in roll-APP/, split into events_1 (its name + SUFFIX) and events_2, all uid 1001's
	rolling() {
		d=roll-$1/eventlog_v2_local-$1
		mkdir -p "$d"
		sed "s/local-1796317883102/local-$1/g; s/\"spark.app.name\":\"el-default\"/\"spark.app.name\":\"el-roll\"/" \
			"$el" >roll.txt
		half=$(($(wc -l <roll.txt) / 2))
		head -n "$half" roll.txt >"$d/events_1_local-$1${2:-}"
		tail -n "+$((half + 1))" roll.txt >"$d/events_2_local-$1"
		chown -R 1001 "roll-$1"
	}
	for app in 1796317883555 1796317883556; do
		rolling $app
		chown 1002 "roll-$app/eventlog_v2_local-$app"/events_*
	done
	chown 1001 roll-1796317883556/eventlog_v2_local-1796317883556/events_1_local-1796317883556
	"$shim" ingest --policy open.json --db o.db roll-1796317883555/eventlog_v2_local-1796317883555 \
		>/dev/null 2>err.txt || fail "a rolling log of uid 1002 in uid 1001's directory: $(cat err.txt)"
	"$shim" report --policy open.json --db o.db --job el-roll --owner 1002 --json >roll.out 2>err.txt ||
		fail "the rolling log is not uid 1002's: $(cat err.txt)"
	grep -q '"app_id":"local-1796317883555"' roll.out || fail "rolling, --owner 1002: $(cat roll.out)"
	status=0; "$shim" report --policy open.json --db o.db --job el-roll --owner 1001 >/dev/null 2>&1 || status=$?
	[ "$status" = 2 ] || fail "the rolling log of uid 1002 is uid 1001's (its directory's): exit $status"
	status=0; "$shim" ingest --policy open.json --db o.db roll-1796317883556/eventlog_v2_local-1796317883556 \
		>/dev/null 2>err.txt || status=$?
	[ "$status" = 1 ] || fail "a rolling log of two users: exit $status"
	grep -q 'files of uid 1001 and of uid 1002 in one event log' err.txt ||
		fail "a rolling log of two users: $(cat err.txt)"
	# a compaction: a .compact file of root's (a History Server running as root) leaves the
	# log the user's whose files are beside it; one of another user's (uid 1003), who could
	# replace the events before it, is refused like any second user's file
	rolling 1796317883558 .compact
	chown -R 1002 roll-1796317883558
	chown 1003 "$d/events_1_local-1796317883558.compact"
	status=0; "$shim" ingest --policy open.json --db o.db "$d" >/dev/null 2>err.txt || status=$?
	[ "$status" = 1 ] && grep -q 'files of uid 1003 and of uid 1002 in one event log' err.txt ||
		fail "a compact file of another user: exit $status: $(cat err.txt)"
	chown 0 "$d/events_1_local-1796317883558.compact"
	"$shim" ingest --policy open.json --db o.db "$d" >/dev/null 2>err.txt ||
		fail "a compacted rolling log: $(cat err.txt)"
	"$shim" report --policy open.json --db o.db --job el-roll --owner 1002 --json >roll.out 2>err.txt ||
		fail "the compacted log is not uid 1002's: $(cat err.txt)"
	grep -q '"app_id":"local-1796317883558"' roll.out || fail "compacted, --owner 1002: $(cat roll.out)"
	# a report of root's (sparkshim's own) carries the application and executor ids the job
	# gave: its figures are the user's the executor ran as (identity.run_as_uid) and join only
	# a run of that user. An executor of uid 1002 naming uid 1001's application is kept apart
	# and uid 1001's run stays as it was; the same executor under an application of its own is uid
	# 1002's (issue 23)
	for app in local-1796317883102 local-1796317883777; do
		"$shim" run -q --policy open.json --memory 256m --cores 2 --millicores 2000 \
			--report "exec-$app.jsonl" --report-interval 1 -- \
			setpriv --reuid 1002 --regid 1002 --clear-groups /bin/sh -c 'sleep 3' sh \
			--app-id "$app" --executor-id 7 --cores 256 || fail "the executor of uid 1002 ($app)"
		grep -q '"run_as_uid":1002' "exec-$app.jsonl" ||
			fail "no run_as_uid 1002 in the report: $(tail -c 800 "exec-$app.jsonl")"
	done
	"$shim" report --policy open.json --db o.db --job el-default --owner 1001 --json >before.out
	"$shim" ingest --policy open.json --db o.db exec-local-1796317883102.jsonl >/dev/null 2>err.txt ||
		fail "an executor of uid 1002 under uid 1001's application: $(cat err.txt)"
	"$shim" report --policy open.json --db o.db --job el-default --owner 1001 --json >after.out
	cmp -s before.out after.out || fail "uid 1001's run changed: $(cat before.out after.out)"
	"$shim" ingest --policy open.json --db o.db --job exec-own exec-local-1796317883777.jsonl >/dev/null 2>err.txt ||
		fail "the executor's own application: $(cat err.txt)"
	"$shim" report --policy open.json --db o.db --job exec-own --owner 1002 --json | grep -q '"app_id":"local-1796317883777"' ||
		fail "the executor's own application is not uid 1002's"
fi

# as root, no history in a directory others may write (SQLite's -wal and -shm go there)
if [ "$(id -u)" = 0 ]; then
	mkdir shared && chmod 1777 shared
	status=0; "$shim" ingest --policy open.json --db shared/h.db --job x run1.jsonl 2>err.txt || status=$?
	[ "$status" = 3 ] || fail "a history in a 1777 directory: exit $status"
	grep -q 'directory shared is writable by others' err.txt || fail "shared: $(cat err.txt)"
	[ ! -e shared/h.db ] || fail "a history was made in a 1777 directory"
fi
echo "tune: ok"
