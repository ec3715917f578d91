#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# history.sh SPARKSHIM TUNER TEST_STORE FIXTURES: the tuner's history store on both backends.
# Starts a PostgreSQL 15 server of its own (Debian's binaries, a unix socket in a temporary
# directory, as the postgres user when run as root; stopped and removed on exit), makes real
# executor reports with `sparkshim run` over stand-in commands, and checks through
# `sparkshim-tuner ingest`, on SQLite and on PostgreSQL alike:
#   - a file with a corrupt line in the middle is refused whole (exit 1, one line naming
#     file:line), the other files are stored;
#   - ingesting everything again leaves the same tables (idempotence);
#   - both backends hold the same rows;
#   - a store made before executors.heap_after_gc_peak_bytes (the column dropped; and one with
#     no version row either) gains the column when opened, keeps its rows and stores the
#     figure of a report that has it; a store of a newer version is refused (exit 3,
#     "upgrade sparkshim") and left as it is;
#   - the unit suite test-store passes against PostgreSQL too (TUNER_TEST_DB).
# Skips (77) only when the PostgreSQL server binaries are missing.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tuner=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
test_store=$(cd "$(dirname "$3")" && pwd)/$(basename "$3")
fixtures=$4
. "$(dirname "$0")/pg.sh"
fail() { echo "FAIL: $*"; exit 1; }

if missing=$(pg_missing); then
	echo "SKIP: $missing is missing (Debian: postgresql-15)"
	exit 77
fi

tmp=$(mktemp -d /tmp/sparkshim-history.XXXXXX)
chmod 0755 "$tmp"
cleanup() {
	pg_stop
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# ---------------------------------------------------------------- the server
pg_start "$tmp" || fail "cannot start PostgreSQL"
psql() { pg_psql "$@"; }
psql -d postgres -c 'CREATE DATABASE history' || fail "CREATE DATABASE"
psql -d postgres -c 'CREATE DATABASE unit' || fail "CREATE DATABASE"
pg_url=$(pg_url history)
unit_url=$(pg_url unit)
echo "PostgreSQL $("$pg_bin/postgres" --version | awk "{print \$3}") on $pg_sock, port $pg_port"

# ---------------------------------------------------------------- real reports
cd "$tmp"
printf '{ "version": 1, "fail_mode": "open" }\n' >open.json
chmod 0644 open.json
# one executor of app under sparkshim run: COMMAND is a shell snippet, the executor's flags
# follow it as Spark's backend has them
executor() { # FILE APP EXECUTOR SNIPPET
	"$shim" run -q --policy open.json --memory 256m --cores 2 --report "$1" \
		--report-interval 1 -- /bin/sh -c "$4" sh --app-id "$2" --executor-id "$3" --cores 2 ||
		true
}
executor a.jsonl app-history-a 1 'sleep 1.1'
executor a.jsonl app-history-a 2 'sleep 1.1'
executor b.jsonl app-history-b 1 'sleep 1.1; kill -TERM $$'
executor c-good.jsonl app-history-c 1 'sleep 0.2'
executor c-good.jsonl app-history-c 2 'sleep 0.2'
[ "$(grep -c '"kind":"final"' a.jsonl)" = 2 ] || fail "a.jsonl: not two final reports: $(cat a.jsonl)"
grep -q '"signal":15' b.jsonl || fail "b.jsonl: the executor was not ended by SIGTERM"
# the corrupt file: a final report, a cut line, another final report
head -n "$(grep -n '"kind":"final"' c-good.jsonl | head -1 | cut -d: -f1)" c-good.jsonl >c.jsonl
corrupt_line=$(($(wc -l <c.jsonl) + 1))
printf '{"schema":"sparkshim.report/v1","kind":"final","identity":{"app_id":"app-hi\n' >>c.jsonl
grep '"kind":"final"' c-good.jsonl | tail -1 >>c.jsonl
# a report with the agent's heap after GC (768 MiB of a 1 GiB heap), as a JVM's agent gives it
python3 - a.jsonl d.jsonl <<'PY'
import json, sys
d = json.loads(next(l for l in open(sys.argv[1]) if '"kind":"final"' in l))
d["identity"]["app_id"] = "app-history-d"
d["plan"]["memory"]["heap_bytes"] = 1 << 30
d["agent"] = {"pressure": {"heap": {"after_gc_bytes": 1, "peak_after_gc_bytes": 768 << 20,
                                    "max_bytes": 1 << 30, "threshold_bytes": 1 << 30,
                                    "crossings": 0, "over": False}}}
open(sys.argv[2], "w").write(json.dumps(d, separators=(",", ":")) + "\n")
PY

# event logs, once the event-log reader is merged (its fixture is there): a log a real Spark
# wrote, and a copy of it under another app id with a corrupt line in the middle
el=$fixtures/eventlog/spark-3.5.9-plain
eventlogs=
errors=1
if [ -f "$el" ]; then
	el_app=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    if d.get("Event") == "SparkListenerApplicationStart":
        print(d["App ID"]); break' "$el")
	[ -n "$el_app" ] || fail "$el: no application id"
	cp "$el" el.log
	sed "s/$el_app/app-history-el-bad/g" "$el" >el-bad.log
	sed -i '5s/.*/{"Event":"SparkListenerTaskEnd","Stage ID":/' el-bad.log
	eventlogs="el.log el-bad.log"
	errors=2
else
	echo "note: $el is missing: event logs not checked (the event-log reader is not merged)"
fi

# ---------------------------------------------------------------- dumps
tables="runs executors app_executors stages"
order_runs="app_id"
order_executors="app_id, executor_id"
order_app_executors="app_id, executor_id"
order_stages="app_id, stage_id, attempt"
# SQL on one backend's store, one statement a call, its rows as CSV (NULL: empty)
sql() { # DB STATEMENT
	case $1 in
	postgresql://*) psql -d history --csv -t -c "$2" ;;
	*) python3 -c '
import csv, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
csv.writer(sys.stdout, lineterminator="\n").writerows(con.execute(sys.argv[2]))
con.commit()' "$1" "$2" ;;
	esac
}
dump() { # DB OUT
	: >"$2"
	for t in $tables; do
		eval "o=\$order_$t"
		echo "== $t" >>"$2"
		sql "$1" "SELECT * FROM $t ORDER BY $o" >>"$2"
	done
}

check_backend() { # DB NAME
	db=$1
	name=$2
	status=0
	# shellcheck disable=SC2086 # $eventlogs: file names without spaces
	"$tuner" ingest --db "$db" --job history-etl a.jsonl c.jsonl b.jsonl $eventlogs \
		>"$name.out" 2>"$name.err" || status=$?
	[ "$status" = 1 ] || fail "$name: ingest with a corrupt file exited $status, not 1: $(cat "$name.err")"
	[ "$(wc -l <"$name.err")" = $errors ] || fail "$name: not $errors error lines: $(cat "$name.err")"
	grep -Eq "^sparkshim\[[0-9]+\]: error: c\.jsonl:$corrupt_line: " "$name.err" ||
		fail "$name: the error does not name c.jsonl:$corrupt_line: $(cat "$name.err")"
	grep -q '^a.jsonl: run app-history-a: 2 executor reports, job history-etl$' "$name.out" ||
		fail "$name: a.jsonl not stored: $(cat "$name.out")"
	grep -q '^b.jsonl: run app-history-b: 1 executor report, job history-etl$' "$name.out" ||
		fail "$name: b.jsonl not stored: $(cat "$name.out")"
	dump "$db" "$name.1"
	grep -q app-history-c "$name.1" && fail "$name: something of the refused c.jsonl was stored"
	grep -q '^app-history-a,1,' "$name.1" || fail "$name: no executor 1 of app-history-a: $(cat "$name.1")"
	grep -q '^app-history-a,history-etl,1,' "$name.1" || fail "$name: run a has not job history-etl"
	if [ -n "$eventlogs" ]; then
		grep -q "el-bad\.log:5: " "$name.err" || fail "$name: the error does not name el-bad.log:5: $(cat "$name.err")"
		grep -q "^el\.log: run $el_app: event log, " "$name.out" || fail "$name: el.log not stored: $(cat "$name.out")"
		grep -q app-history-el-bad "$name.1" && fail "$name: something of the refused el-bad.log was stored"
		grep -q "^$el_app,history-etl,1,1," "$name.1" || fail "$name: no run $el_app from its event log"
		grep -q "^$el_app,[0-9]*,[0-9]" "$name.1" || fail "$name: no stage of $el_app"
	fi

	# the same input again, and standard input: the same tables
	status=0
	# shellcheck disable=SC2086
	"$tuner" ingest --db "$db" --job history-etl a.jsonl c.jsonl b.jsonl $eventlogs >/dev/null 2>&1 ||
		status=$?
	[ "$status" = 1 ] || fail "$name: second ingest exited $status"
	"$tuner" ingest --db "$db" --job history-etl - <a.jsonl >/dev/null ||
		fail "$name: ingest from standard input"
	dump "$db" "$name.2"
	cmp -s "$name.1" "$name.2" || { diff "$name.1" "$name.2"; fail "$name: a second ingest changed the tables"; }

	# the good copy of c is stored; all files good: exit 0
	"$tuner" ingest --db "$db" --job history-c c-good.jsonl >/dev/null || fail "$name: c-good.jsonl"
	dump "$db" "$name.3"
	[ "$(grep -c '^app-history-c,[12],' "$name.3")" = 2 ] || fail "$name: c-good.jsonl not stored"
	# a job's runs, for any owner and for one uid past 2^31 (the runs of no owner, which
	# these reports of root's are): the same runs (issue 23: the owner taken before the window)
	"$tuner" report --db "$db" --job history-etl --json >"$name.runs" 2>"$name.err" ||
		fail "$name: report --job: $(cat "$name.err")"
	"$tuner" report --db "$db" --job history-etl --owner 4294967294 --json >"$name.runs-owner" \
		2>"$name.err" || fail "$name: report --job --owner 4294967294: $(cat "$name.err")"
	[ "$(wc -l <"$name.runs")" -ge 2 ] && cmp -s "$name.runs" "$name.runs-owner" ||
		fail "$name: --owner 4294967294 found other runs: $(cat "$name.runs" "$name.runs-owner")"
	echo "ok: $name: atomic per file, idempotent, runs by owner"
}

# a store made before the heap-after-GC column (dropped here), and one with no version row as
# well, gain it when opened, their rows kept, and store a report's figure; a newer version
# is refused and left as it is
check_schema() { # DB NAME
	db=$1
	name=$2
	[ "$(sql "$db" "SELECT version FROM schema_version")" = 1 ] || fail "$name: schema version not 1"
	for how in "column" "column and version"; do
		sql "$db" "ALTER TABLE executors DROP COLUMN heap_after_gc_peak_bytes" >/dev/null ||
			fail "$name: cannot drop the column"
		[ "$how" = column ] || sql "$db" "DELETE FROM schema_version" >/dev/null
		"$tuner" ingest --db "$db" --job history-c c-good.jsonl >/dev/null 2>"$name.err" ||
			fail "$name: ingest into a store without the $how: $(cat "$name.err")"
		[ "$(sql "$db" "SELECT version FROM schema_version")" = 1 ] ||
			fail "$name: no version 1 after opening a store without the $how"
		dump "$db" "$name.4"
		cmp -s "$name.3" "$name.4" || { diff "$name.3" "$name.4"; fail "$name: adding the column changed the rows"; }
	done
	"$tuner" ingest --db "$db" --job history-d d.jsonl >/dev/null 2>"$name.err" ||
		fail "$name: ingest d.jsonl: $(cat "$name.err")"
	[ "$(sql "$db" "SELECT heap_after_gc_peak_bytes FROM executors WHERE app_id = 'app-history-d'")" = $((768 << 20)) ] ||
		fail "$name: the heap after GC of d.jsonl is not stored"
	"$tuner" report --db "$db" --job history-d --json >"$name.d" 2>"$name.err" || fail "$name: report --job history-d"
	grep -q "\"heap_after_gc_peak_bytes\": *$((768 << 20))" "$name.d" || fail "$name: the run has not its heap after GC: $(cat "$name.d")"
	sql "$db" "UPDATE schema_version SET version = 2" >/dev/null
	status=0
	"$tuner" ingest --db "$db" --job history-c c-good.jsonl >/dev/null 2>"$name.err" || status=$?
	[ "$status" = 3 ] && grep -q "schema version 2 is newer than this sparkshim's (1); upgrade sparkshim" "$name.err" ||
		fail "$name: a store of a newer schema: exit $status: $(cat "$name.err")"
	[ "$(sql "$db" "SELECT version FROM schema_version")" = 2 ] || fail "$name: the newer store was changed"
	sql "$db" "UPDATE schema_version SET version = 1" >/dev/null
	echo "ok: $name: the heap-after-GC column added to a store without it, a newer store refused"
}

check_backend "$tmp/history.db" sqlite
[ "$(stat -c %a "$tmp/history.db")" = 600 ] || fail "history.db is not 0600"
check_schema "$tmp/history.db" sqlite
check_backend "$pg_url" postgresql
check_schema "$pg_url" postgresql

# both backends hold the same rows (numbers compared as numbers: the CSVs format them apart)
python3 - sqlite.3 postgresql.3 <<'PY' || fail "SQLite and PostgreSQL hold different rows"
import csv, math, sys
def rows(path):
    out, table = {}, None
    for r in csv.reader(open(path)):
        if r and r[0].startswith("== "):
            table = r[0][3:]; out[table] = []
        else:
            out[table].append(r)
    return out
def same(a, b):
    if a == b: return True
    try:
        x, y = float(a), float(b)
    except ValueError:
        return False
    return math.isclose(x, y, rel_tol=1e-12, abs_tol=0)
s, p = rows(sys.argv[1]), rows(sys.argv[2])
assert s.keys() == p.keys(), (s.keys(), p.keys())
for t in s:
    assert len(s[t]) == len(p[t]), f"{t}: {len(s[t])} rows in SQLite, {len(p[t])} in PostgreSQL"
    for rs, rp in zip(s[t], p[t]):
        assert len(rs) == len(rp) and all(same(a, b) for a, b in zip(rs, rp)), f"{t}:\n{rs}\n{rp}"
print("ok: SQLite and PostgreSQL hold the same rows")
PY

# the store's own suite against PostgreSQL: the same assembly from both backends
TUNER_TEST_DB=$unit_url FIXTURES=$fixtures "$test_store" >unit.log 2>&1 ||
	{ cat unit.log; fail "test-store against PostgreSQL"; }
tail -1 unit.log
echo "ok: test-store passes against PostgreSQL"

# a password in --db is never printed: a job with no history (exit 2) through a URI and
# key=value pairs that hold one (trust authentication does not ask for it), and an ingest
secret=s3cretpw
for db in "postgresql://tuner:$secret@/history?host=$pg_sock&port=$pg_port" \
	"host=$pg_sock port=$pg_port dbname=history user=tuner password=$secret"; do
	for cmd in tune report; do
		status=0
		"$tuner" "$cmd" --db "$db" --job nobody >out.txt 2>err.txt || status=$?
		[ "$status" = 2 ] || fail "$cmd --db '$db' of a job with no run: exit $status: $(cat err.txt)"
		! grep -q "$secret" out.txt err.txt || fail "$cmd --db '$db' printed the password: $(cat err.txt)"
		grep -q "job 'nobody': no run in the history at .*history" err.txt ||
			fail "$cmd --db '$db': $(cat err.txt)"
		shown=$(cat err.txt)
	done
	"$tuner" ingest --db "$db" --job history-a a.jsonl >out.txt 2>err.txt ||
		fail "ingest --db '$db': exit $?: $(cat err.txt)"
	! grep -q "$secret" out.txt err.txt || fail "ingest --db '$db' printed the password"
done
echo "ok: no password printed: $shown"
ls "$tmp" | grep -q '=' && fail "a SQLite file was made of a connection string: $(ls "$tmp")"

# an unreachable store is exit 3
status=0
"$tuner" ingest --db "$(pg_url nowhere)" a.jsonl >/dev/null 2>err.txt ||
	status=$?
[ "$status" = 3 ] || fail "an unknown database exited $status, not 3: $(cat err.txt)"
status=0
"$tuner" ingest --db "$tmp/no/such/dir/h.db" a.jsonl >/dev/null 2>err.txt || status=$?
[ "$status" = 3 ] || fail "an unusable SQLite path exited $status, not 3"
status=0
"$tuner" ingest --db "$tmp/history.db" --bogus a.jsonl >/dev/null 2>&1 || status=$?
[ "$status" = 120 ] || fail "a bad flag exited $status, not 120"
echo "ok: exit statuses"
