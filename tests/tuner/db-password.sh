#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# db-password.sh SPARKSHIM TUNER: a PostgreSQL password in --db never reaches standard output
# or standard error. `sparkshim ingest`, `tune` and `report --job` (through sparkshim's
# dispatch, as an admin runs them, and as sparkshim-tuner itself) with a URI and a key=value
# connection string that hold a password, against 127.0.0.1 port 1 (nothing listens: the
# connection fails), and with connection strings libpq cannot parse (whose libpq messages
# quote the string): exit 3, the error names the host and the database, the password appears
# nowhere, and no SQLite file is made of a connection string.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
tuner=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
fail() { echo "FAIL: $*"; exit 1; }

tmp=$(mktemp -d /tmp/sparkshim-db-password.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
printf '{ "version": 1, "fail_mode": "open" }\n' >open.json
chmod 0644 open.json
printf '{"schema":"sparkshim.report/v1","kind":"final"}\n' >r.jsonl

secret=s3cretpw
# DB EXPECTED...: each command fails with exit 3, names EXPECTED, never prints the password
check() {
	db=$1
	shift
	for cmd in "ingest r.jsonl" "tune --job nightly" "report --job nightly" "report --job nightly --json"; do
		verb=${cmd%% *}
		rest=${cmd#* }
		for prog in "$shim" "$tuner"; do
			status=0
			# shellcheck disable=SC2086 # $rest: arguments without spaces
			"$prog" "$verb" --policy open.json --db "$db" $rest >out.txt 2>err.txt ||
				status=$?
			what="$(basename "$prog") $cmd --db '$db'"
			if grep -q "$secret" out.txt err.txt; then
				fail "$what printed the password: $(cat out.txt err.txt)"
			fi
			[ "$status" = 3 ] || fail "$what: exit $status, not 3: $(cat err.txt)"
			for e in "$@"; do
				grep -qF -- "$e" err.txt || fail "$what: the error does not name '$e': $(cat err.txt)"
			done
		done
	done
	echo "ok: $(head -1 err.txt)"
}

check "postgresql://u:$secret@127.0.0.1:1/x" "postgresql://u:***@127.0.0.1:1/x" '127.0.0.1'
check "postgres://u:$secret@127.0.0.1:1/x?connect_timeout=3" "postgresql://u:***@127.0.0.1:1/x"
check "postgresql://127.0.0.1:1/x?user=u&password=$secret" "postgresql://u:***@127.0.0.1:1/x"
check "host=127.0.0.1 port=1 dbname=x user=u password=$secret" \
	"host=127.0.0.1 port=1 dbname=x user=u password=***"
check "host=127.0.0.1 port=1 password='$secret' dbname=x" "host=127.0.0.1 port=1 dbname=x password=***"
# libpq quotes the string, or the bad part of it, when it cannot parse it
check "postgresql://u:$secret@[::1/x" "not a connection string libpq can parse"
check "postgresql://u:${secret}%zz@127.0.0.1:1/x" "not a connection string libpq can parse"
check "host=127.0.0.1 password=$secret bogus" "not a connection string libpq can parse"
check "host=127.0.0.1 password=$secret nosuchoption=1" "not a connection string libpq can parse"
ls | grep -q '=' && fail "a SQLite file was made of a connection string: $(ls)"
echo "db-password: ok"
