#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# service.sh SPARKSHIM FIXTURES: `sparkshim tune-service` (sparkshim-tune(1)) as the timer
# runs it, on SQLite and on a PostgreSQL server of the test's own, over reports of a real
# `sparkshim run` (executors that ran as uid 4242) and real Spark 3.5 event logs:
#   - a pass reads the new files and publishes the job's next and safe settings, root's,
#     per owner (0711 directory, 0644 file); a second pass is not due, a forced one reads
#     nothing (every file known);
#   - incremental: a grown report file is read from its checkpoint (its first line, made
#     invalid after it was read, is not read again), a partial last line waits until it is
#     complete, a truncated file is read from the start, an .inprogress event log waits
#     until renamed (or stale), a copy compressed after rotation does not double its run,
#     a refused file is not read again until it changes; no symlink or FIFO is followed;
#   - two users' runs under one job name are published apart, each from their own runs;
#   - a pass killed mid-way (SIGKILL injected by strace at an openat) loses and doubles
#     nothing: the next pass stores exactly the rest;
#   - PostgreSQL restarted during a pass: the pass exits 3 saying so, the next reads the rest.
set -eu
# LeakSanitizer cannot run under ptrace (the strace'd passes below): in scripts/sanitize's
# build, leaks are checked by the passes that run without it
nolsan="ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fixtures=${2:?usage: service.sh SPARKSHIM FIXTURES}
here=$(cd "$(dirname "$0")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (runs executors as uid 4242, chowns event logs)"; exit 77; }
command -v strace >/dev/null || { echo "SKIP: strace missing (scripts/deps installs it)"; exit 77; }
command -v zstd >/dev/null || { echo "SKIP: zstd missing (scripts/deps installs it)"; exit 77; }

tmp=$(mktemp -d /tmp/sparkshim-service.XXXXXX)
. "$here/pg.sh"
trap 'pg_stop; [ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
cd "$tmp"

# one real report of an executor that ran as uid 4242: the lines the files below are made of
printf '{ "version": 1, "fail_mode": "open" }\n' >run.json
"$shim" run -q --policy run.json --memory 256m --cores 2 --millicores 2000 --report real.jsonl \
	--report-interval 1 -- setpriv --reuid=4242 --regid=4242 --clear-groups /bin/sh -c \
	'sleep 3' sh --app-id app-real --executor-id 1 --cores 2 || fail "sparkshim run"
grep -q '"kind":"final".*"run_as_uid":4242' real.jsonl || fail "no final report as uid 4242: $(cat real.jsonl)"
grep '"kind":"final"' real.jsonl >final.line

# report LINES APP EXEC...: the final report line of each executor of APP
report() {
	app=$1
	shift
	for e in "$@"; do
		sed -e "s/app-real/$app/g" -e "s/\"executor_id\":\"1\"/\"executor_id\":\"$e\"/" "$tmp/final.line"
	done
}
# eventlog APP JOB UID [NAME]: a real Spark 3.5 event log (its one failed task attempt
# dropped: a successful run) of APP, job JOB, written by UID
eventlog() {
	sed -e "s/local-1796317883102/$1/g" -e "s/\"el-default\"/\"$2\"/g" \
		"$fixtures/eventlog/spark-3.5.9-plain" |
		grep -v '"Task End Reason":{"Reason":"ExceptionFailure"' >"events/${4:-$1}"
	chown "$3" "events/${4:-$1}"
}

check_backend() {
	db=$1
	name=$2
	mkdir "$name"
	cd "$name"
	mkdir reports events
	cat >policy.json <<EOF
{ "version": 1, "tuner": { "db": "$db", "runtime_target": 100, "runtime_allowance": 100,
  "service": { "reports": ["$PWD/reports"], "eventlogs": ["$PWD/events"],
               "publish_dir": "$PWD/pub", "period_seconds": 3600 } } }
EOF
	chmod 0644 policy.json
	if [ "$name" = sqlite ]; then
		q() { python3 -c 'import sqlite3, sys; print("\n".join("|".join(str(c) for c in r) for r in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])))' "$db" "$1"; }
	else
		q() { pg_psql -d service -tAc "$1"; }
	fi
	pass() { "$shim" tune-service --once --force --verbose --policy policy.json >"$1" 2>&1; }

	# --- the first pass: everything is new; the job is published for its user
	report app-svc-1 1 2 >reports/r1.jsonl
	report app-svc-2 1 2 >reports/r2.jsonl
	eventlog app-svc-1 nightly 4242
	eventlog app-svc-2 nightly 4242
	"$shim" tune-service --once --policy policy.json >p1.out 2>&1 || fail "$name: pass 1 exited $?: $(cat p1.out)"
	grep -q '4 files, 0 known, 4 read, 0 refused, 0 in progress, 0 lines skipped;.* 1 jobs published' p1.out ||
		fail "$name: pass 1 said: $(cat p1.out)"
	f=pub/4242/nightly.json
	[ "$(stat -c '%U %a' pub/4242)" = "root 711" ] || fail "$name: pub/4242 is $(stat -c '%U %a' pub/4242)"
	[ "$(stat -c '%U %a' $f)" = "root 644" ] || fail "$name: $f is $(stat -c '%U %a' $f)"
	python3 - "$f" <<'PY' || fail "$name: published: $(cat $f)"
import json, re, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "sparkshim.published/v1" and d["owner_uid"] == 4242 and d["job"] == "nightly", d
assert d["state"] == "explore", d["state"]
assert d["expires"] > d["created"], d
for k in ("next", "safe"):
    assert re.fullmatch(k + r"-[0-9a-f]{16}", d[k]["id"]), d[k]
    assert "spark.executor.memory" in d[k]["conf"], d[k]
    assert not any("extraJavaOptions" in c for c in d[k]["conf"]), d[k]
assert d["safe_from"] in ("app-svc-1", "app-svc-2"), d
PY
	# the same history publishes the same ids
	cp $f first.json
	# not due (period 3600 s): nothing, quietly; forced: every file known
	"$shim" tune-service --once --policy policy.json >p2.out 2>&1 || fail "$name: pass 2 exited $?"
	[ ! -s p2.out ] || fail "$name: a pass that is not due said: $(cat p2.out)"
	pass p3.out || fail "$name: pass 3: $(cat p3.out)"
	grep -q '4 files, 4 known, 0 read' p3.out || fail "$name: pass 3 said: $(cat p3.out)"

	# --- a grown report file is read from its checkpoint: its first line, made invalid since
	# it was read (same size), is not read again
	python3 - reports/r1.jsonl <<'PY'
import sys
p = sys.argv[1]; lines = open(p, "rb").read().split(b"\n")
lines[0] = b"x" * len(lines[0])
open(p, "r+b").write(b"\n".join(lines))
PY
	report app-svc-3 1 2 >>reports/r1.jsonl
	eventlog app-svc-3 nightly 4242
	pass p4.out || fail "$name: pass 4 exited $?: $(cat p4.out)"
	grep -q '5 files, 3 known, 2 read, 0 refused' p4.out || fail "$name: pass 4 said: $(cat p4.out)"
	[ "$(q "SELECT COUNT(*) FROM executors WHERE app_id = 'app-svc-3'")" = 2 ] ||
		fail "$name: app-svc-3's executors not stored"
	python3 - first.json $f <<'PY' || fail "$name: pass 4 did not republish"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["created"] >= a["created"] and b["state"] == "explore", (a, b)
PY

	# --- a partial last line waits until it is complete
	report app-svc-4 1 >line
	head -c 100 line >>reports/r1.jsonl
	pass p5.out || fail "$name: pass 5: $(cat p5.out)"
	grep -q ' 0 refused' p5.out || fail "$name: a partial line was refused: $(cat p5.out)"
	[ "$(q "SELECT COUNT(*) FROM executors WHERE app_id = 'app-svc-4'")" = 0 ] || fail "$name: half a line stored"
	tail -c +101 line >>reports/r1.jsonl
	pass p6.out || fail "$name: pass 6: $(cat p6.out)"
	[ "$(q "SELECT COUNT(*) FROM executors WHERE app_id = 'app-svc-4'")" = 1 ] ||
		fail "$name: the completed line was not stored: $(cat p6.out)"

	# --- a truncated file (smaller than what was read) is read from the start
	report app-svc-5 1 >reports/r2.jsonl
	pass p7.out || fail "$name: pass 7: $(cat p7.out)"
	[ "$(q "SELECT COUNT(*) FROM executors WHERE app_id = 'app-svc-5'")" = 1 ] ||
		fail "$name: the rewritten file was not read from its start: $(cat p7.out)"

	# --- the same inode rewritten past the offset read (a reused inode, a truncate and a
	# longer write): read from its start, not from the old file's offset
	report app-svc-9 1 >reports/r3.jsonl
	pass p7b.out || fail "$name: pass 7b: $(cat p7b.out)"
	ino=$(stat -c %i reports/r3.jsonl)
	: >reports/r3.jsonl
	report app-svc-10 12345 >>reports/r3.jsonl
	[ "$(stat -c %i reports/r3.jsonl)" = "$ino" ] || fail "$name: the rewrite made a new inode"
	pass p7c.out || fail "$name: pass 7c: $(cat p7c.out)"
	[ "$(q "SELECT COUNT(*) FROM executors WHERE app_id = 'app-svc-10'")" = 1 ] ||
		fail "$name: a file rewritten on its inode was read from the old offset: $(cat p7c.out)"
	# --- a file gone: its checkpoint is forgotten
	files_before=$(q "SELECT COUNT(*) FROM ingested_files")
	rm reports/r3.jsonl
	pass p7d.out || fail "$name: pass 7d: $(cat p7d.out)"
	[ "$(q "SELECT COUNT(*) FROM ingested_files")" = $((files_before - 1)) ] ||
		fail "$name: the checkpoint of a file gone stays: $files_before before, $(q "SELECT COUNT(*) FROM ingested_files") after"

	# --- an event log in progress waits for its rename; a stale one is read
	eventlog app-svc-6 nightly 4242 app-svc-6.inprogress
	eventlog app-svc-7 nightly 4242 app-svc-7.inprogress
	touch -d '2 days ago' events/app-svc-7.inprogress
	pass p8.out || fail "$name: pass 8: $(cat p8.out)"
	grep -q '1 read, 0 refused, 1 in progress' p8.out || fail "$name: pass 8 said: $(cat p8.out)"
	[ "$(q "SELECT COUNT(*) FROM runs WHERE app_id = 'app-svc-6'")" = 0 ] || fail "$name: an .inprogress log was read"
	[ "$(q "SELECT COUNT(*) FROM runs WHERE app_id = 'app-svc-7'")" = 1 ] || fail "$name: a stale .inprogress log was not read"
	mv events/app-svc-6.inprogress events/app-svc-6
	pass p9.out || fail "$name: pass 9: $(cat p9.out)"
	[ "$(q "SELECT COUNT(*) FROM runs WHERE app_id = 'app-svc-6'")" = 1 ] || fail "$name: the renamed log was not read"

	# --- compressed after rotation: read once more, into the same run, nothing doubled
	stages=$(q "SELECT COUNT(*) FROM stages WHERE app_id = 'app-svc-1'")
	zstd -q events/app-svc-1 -o events/app-svc-1.zstd
	chown 4242 events/app-svc-1.zstd
	rm events/app-svc-1
	pass p10.out || fail "$name: pass 10: $(cat p10.out)"
	grep -q ' 1 read, 0 refused' p10.out || fail "$name: pass 10 said: $(cat p10.out)"
	[ "$(q "SELECT COUNT(*) FROM runs WHERE app_id = 'app-svc-1'")" = 1 ] &&
		[ "$(q "SELECT COUNT(*) FROM stages WHERE app_id = 'app-svc-1'")" = "$stages" ] ||
		fail "$name: the compressed copy doubled its run"

	# --- a symlink, a FIFO, a bad file: none followed or hung on; the bad one refused once
	ln -s ../r1.jsonl reports/link.jsonl
	ln -s /etc/shadow events/app-link
	mkfifo reports/fifo.jsonl
	printf 'not json\n' >reports/bad.jsonl
	timeout 60 "$shim" tune-service --once --force --verbose --policy policy.json >p11.out 2>&1 ||
		fail "$name: pass 11 exited $?: $(cat p11.out)"
	grep -q ' 1 read, 0 refused, 0 in progress, 1 lines skipped' p11.out &&
		grep -q 'bad.jsonl: the line at byte 0: .*; line skipped' p11.out || fail "$name: pass 11 said: $(cat p11.out)"
	pass p12.out || fail "$name: pass 12: $(cat p12.out)"
	grep -q ' 0 read, 0 refused' p12.out || fail "$name: the bad file was read again: $(cat p12.out)"
	# a bad line in a growing shared file skips that line only: the lines after it are stored
	printf '{"schema":"sparkshim.report/v1","kind":"final"}\n' >>reports/r1.jsonl
	report app-svc-8 1 >>reports/r1.jsonl
	pass p12b.out || fail "$name: pass 12b: $(cat p12b.out)"
	grep -q '1 lines skipped' p12b.out || fail "$name: the bad line was not skipped: $(cat p12b.out)"
	[ "$(q "SELECT COUNT(*) FROM executors WHERE app_id = 'app-svc-8'")" = 1 ] ||
		fail "$name: a line after a bad one was not stored: $(cat p12b.out)"

	# --- another user's runs under the same job name: published apart
	eventlog app-other-1 nightly 4343
	pass p13.out || fail "$name: pass 13: $(cat p13.out)"
	python3 - pub/4343/nightly.json $f <<'PY' || fail "$name: two owners: $(cat pub/4343/nightly.json)"
import json, sys
o, v = (json.load(open(p)) for p in sys.argv[1:])
assert o["owner_uid"] == 4343 and o["safe_from"] == "app-other-1", o
assert v["owner_uid"] == 4242 and v["safe_from"] != "app-other-1", v
PY

	# --- killed mid-pass: nothing lost, nothing doubled. A pass over known files only makes
	# this many openat calls (policy, libraries, store, directories; a known file is not
	# opened); the pass with 40 new files is killed at the open of its 20th
	env "$nolsan" strace -f -qq -e trace=openat -o base.trace "$shim" tune-service --once --force \
		--policy policy.json --verbose >base.out 2>&1 || fail "$name: strace of a pass: $(cat base.out)"
	grep -q ' 0 read, 0 refused' base.out || fail "$name: the pass for the base read something: $(cat base.out)"
	base=$(grep -c 'openat(' base.trace)
	for i in $(seq 1 40); do report "app-crash2-$i" 1 >"reports/crash2-$i.jsonl"; done
	status=0
	env "$nolsan" strace -f -qq -o /dev/null -e trace=openat -e inject=openat:signal=SIGKILL:when=$((base + 20)) \
		"$shim" tune-service --once --force --policy policy.json >/dev/null 2>&1 || status=$?
	[ "$status" = 137 ] || fail "$name: the injected kill did not land (exit $status)"
	stored=$(q "SELECT COUNT(*) FROM executors WHERE app_id LIKE 'app-crash2-%'")
	[ "$stored" -gt 0 ] && [ "$stored" -lt 40 ] || fail "$name: the kill was not mid-pass ($stored of 40 stored)"
	pass p14.out || fail "$name: pass after the kill: $(cat p14.out)"
	[ "$(q "SELECT COUNT(*) FROM executors WHERE app_id LIKE 'app-crash2-%'")" = 40 ] &&
		[ "$(q "SELECT COUNT(DISTINCT app_id) FROM executors WHERE app_id LIKE 'app-crash2-%'")" = 40 ] ||
		fail "$name: after the kill: $(q "SELECT COUNT(*) FROM executors WHERE app_id LIKE 'app-crash2-%'") of 40"
	grep -q " $((40 - stored)) read, 0 refused" p14.out ||
		fail "$name: the pass after the kill did not read exactly the rest ($stored stored before): $(cat p14.out)"
	echo "ok: $name: pass, incremental checkpoints, in-progress logs, owners apart, a kill mid-pass"
	cd ..
}

check_backend "$tmp/sqlite/history.db" sqlite

if missing=$(pg_missing); then
	echo "SKIP: PostgreSQL: $missing missing (scripts/deps installs postgresql)"
	[ -z "${CI:-}" ] || fail "CI must run the PostgreSQL half"
	exit 0
fi
pg_start "$tmp" || fail "PostgreSQL did not start"
pg_psql -d postgres -qc 'CREATE DATABASE service' || fail "createdb"
check_backend "$(pg_url service)" postgresql

# --- PostgreSQL restarted during a pass: the pass fails cleanly, the next reads the rest
cd postgresql
for i in $(seq 1 30); do report "app-pg-$i" 1 >"reports/pg-$i.jsonl"; done
base=$(grep -c 'openat(' base.trace)
env "$nolsan" strace -f -qq -o restart.trace -e trace=openat -e signal=SIGSTOP \
	-e inject=openat:signal=SIGSTOP:when=$((base + 15)) \
	"$shim" tune-service --once --force --policy policy.json >restart.out 2>&1 &
pid=$!
# the pass stops itself at its 15th new file (SIGSTOP; strace writes "stopped by SIGSTOP"
# once it is in its group stop): then restart the server
for _ in $(seq 1 1200); do
	grep -q 'stopped by SIGSTOP' restart.trace 2>/dev/null && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
done
grep -q 'stopped by SIGSTOP' restart.trace 2>/dev/null ||
	fail "postgresql: the pass did not stop at its 15th file: $(cat restart.out; tail -3 restart.trace)"
tuner=$(pgrep -P $pid -x sparkshim-tuner) || fail "postgresql: the stopped pass is gone"
pg_as "$pg_bin/pg_ctl" -D "$pg_dir/data" -m fast -w restart >/dev/null 2>&1 || fail "pg restart"
kill -CONT "$tuner"
status=0
wait $pid || status=$?
[ "$status" = 3 ] || fail "postgresql: the pass across a server restart exited $status: $(cat restart.out)"
grep -q 'the next pass reads the rest' restart.out || fail "postgresql: the pass said: $(cat restart.out)"
pass p15.out || fail "postgresql: the pass after the restart: $(cat p15.out)"
[ "$(q "SELECT COUNT(*) FROM executors WHERE app_id LIKE 'app-pg-%'")" = 30 ] ||
	fail "postgresql: after the restart, $(q "SELECT COUNT(*) FROM executors WHERE app_id LIKE 'app-pg-%'") of 30"
echo "ok: postgresql: a server restart during a pass: exit 3, then the rest"
