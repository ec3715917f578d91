#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-report-all.sh SPARKSHIM: `sparkshim report` over real reports (issue 12, part 4):
# a run without an app id is labelled with its --name; --all shows the sample lines but
# counts executors (and totals) from final reports only (before the fix, every sample
# line counted as one more executor and its CPU seconds were added again).
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
printf '{ "version": 1, "fail_mode": "open" }\n' >open.json
chmod 0644 open.json

echo "running two executors with 1 s sample lines (about 3 s)"
"$shim" run -q --policy open.json --memory 256m --name "named-$$" --report r.jsonl \
	--report-interval 1 -- sleep 2.5 || fail "run without an app id failed"
"$shim" run -q --policy open.json --memory 256m --report r.jsonl --report-interval 1 \
	-- sh -c 'sleep 0.2' x --app-id app-report-1 --executor-id 7 || fail "run with an app id failed"
samples=$(grep -c '"kind":"sample"' r.jsonl || true)
[ "$samples" -ge 1 ] || fail "no sample lines in r.jsonl"
grep -q "\"name\":\"named-$$\"" r.jsonl || fail "the report has no identity.name named-$$"

"$shim" report r.jsonl >table.txt || { cat table.txt; fail "report failed"; }
grep -q "^named-$$ " table.txt || { cat table.txt; fail "the run without an app id is not labelled with its --name"; }
grep -q "^app-report-1/7 " table.txt || { cat table.txt; fail "the run with an app id is not labelled app/executor"; }
grep -q "^TOTAL (2 executors)" table.txt || { cat table.txt; fail "report: not 2 executors"; }
echo "ok: labels: --name without an app id, app/executor with one"

"$shim" report --all r.jsonl >all.txt || { cat all.txt; fail "report --all failed"; }
grep -q "^TOTAL (2 executors)" all.txt ||
	{ cat all.txt; fail "report --all counts $samples sample lines as executors"; }
[ "$(grep -c '(sample)' all.txt)" = "$samples" ] || { cat all.txt; fail "report --all does not show the $samples sample lines as samples"; }
# the totals of --all are those of the final reports alone
[ "$(grep '^TOTAL' all.txt)" = "$(grep '^TOTAL' table.txt)" ] ||
	{ cat table.txt all.txt; fail "report --all has other totals than the final reports"; }
echo "ok: --all shows $samples sample lines and counts 2 executors"
