#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-sink-failure.sh SPARKSHIM SRC: a monitoring outage is not a Spark outage (issue 11,
# defect 10). A sink that cannot be opened (missing directory, no listener) does not block
# the executor by default (report.sink_failure warn): one warning, the command runs, and
# the report counts the sink's lines as dropped; a socket is connected again when a
# listener appears. `sparkshim check` tests every sink the policy names, and the example
# policy's sinks pass it on this host.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
. "$src/tests/host/lib.sh"
tmp=$(mktemp -d)
trap 'kill $listener 2>/dev/null || true; rm -rf "$tmp"' EXIT
listener=
cd "$tmp"
printf '{ "version": 1, "fail_mode": "open" }\n' >open.json
chmod 0644 open.json

# the default: warn and run; the sinks that failed are in the report
set +e
"$shim" run --policy open.json --memory 512m --report /nonexistent/dir/r.jsonl \
	--prometheus /nonexistent/dir/m.prom --report-stdout -- sh -c 'echo ran' >out.txt 2>err.txt
rc=$?
set -e
[ $rc = 0 ] || { cat err.txt; fail "a missing report directory gave exit $rc; the executor must run"; }
grep -qx ran out.txt || fail "the command did not run"
grep -q 'report file /nonexistent/dir/r.jsonl: directory /nonexistent/dir: No such file.*running without it (report.sink_failure warn)' err.txt ||
	{ cat err.txt; fail "no warning naming the report file"; }
grep -q 'prometheus file /nonexistent/dir/m.prom: .*running without it' err.txt ||
	{ cat err.txt; fail "no warning naming the prometheus file"; }
python3 - out.txt <<'PY'
import json, sys
f = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]
assert f["kind"] == "final", f["kind"]
s = f["sinks"]
assert s["file"]["dropped_lines"] >= 1 and "No such file" in s["file"]["error"], s
assert "No such file" in s["prometheus"]["error"], s
assert s["stdout"] == {"dropped_lines": 0, "error": None}, s
print("ok: missing directory: the executor ran, the report counts", s["file"]["dropped_lines"], "dropped lines")
PY

# a socket without a listener: the executor runs, and the monitor connects once one listens
python3 -c '
import socket, sys, time
time.sleep(2.5)
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept()
with open(sys.argv[2], "wb") as out:
    while True:
        b = c.recv(65536)
        if not b: break
        out.write(b); out.flush()
' "$tmp/late.sock" "$tmp/late.jsonl" &
listener=$!
"$shim" run --policy open.json --memory 512m --report-socket "$tmp/late.sock" --report-interval 1 \
	--report late-file.jsonl -- sleep 5 2>err.txt || { cat err.txt; fail "run with a late listener failed"; }
grep -q "report socket $tmp/late.sock: cannot connect" err.txt || { cat err.txt; fail "no warning for the socket"; }
wait $listener || true
listener=
python3 - late.jsonl <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines and lines[-1]["kind"] == "final", "the late listener did not get the final report"
d = lines[-1]["sinks"]["socket"]["dropped_lines"]
assert d >= 1, f"lines before the listener were not counted: {d}"
print(f"ok: late listener got {len(lines)} lines, the final report counts {d} dropped before it listened")
PY

# sparkshim check names every sink of the policy that run could not open
cat >sinks.json <<EOF
{ "version": 1, "fail_mode": "open",
  "report": { "path": "/nonexistent/dir/r.jsonl", "socket": "$tmp/nobody.sock",
              "prometheus_path": "/nonexistent/dir/m.prom" } }
EOF
chmod 0644 sinks.json
"$shim" check --policy sinks.json >check.txt 2>&1 || true
for row in "report file  *warn  */nonexistent/dir/r.jsonl: directory /nonexistent/dir" \
	"report socket  *warn  *$tmp/nobody.sock: cannot connect" \
	"prometheus file  *warn  */nonexistent/dir/m.prom: directory /nonexistent/dir"; do
	grep -q "^$row" check.txt || { cat check.txt; fail "check does not say: $row"; }
done
echo "ok: check names the three unusable sinks"
sed 's/"open" }/"open", "report": { "path": "\/nonexistent\/dir\/r.jsonl", "sink_failure": "refuse" } }/' open.json >refuse.json
chmod 0644 refuse.json
set +e
"$shim" check --policy refuse.json >check.txt 2>&1
rc=$?
set -e
[ $rc = 1 ] || fail "check exited $rc for a sink that makes run refuse"
grep -q '^report file  *FAIL' check.txt && grep -q 'run refuses to start on this host: report file /nonexistent/dir/r.jsonl' check.txt ||
	{ cat check.txt; fail "check does not say that run refuses to start"; }
echo "ok: check fails for a sink under sink_failure refuse"

# the example policy, installed as-is: its sinks pass check on this host
cp "$src/conf/policy.json" example.json
chmod 0644 example.json
"$shim" check --policy example.json >check.txt 2>&1 || true
grep -q '^report file  *ok' check.txt || { cat check.txt; fail "the example's report file does not pass check"; }
! grep -q '^\(report\|prometheus\).*\(warn\|FAIL\)' check.txt || { cat check.txt; fail "a sink of the example policy fails check"; }
echo "ok: conf/policy.json: every sink passes check"
