#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-report.sh SPARKSHIM BURN: reports on this host (hybrid or not, fail_mode open so the
# run happens either way): sample and final lines in every sink, every documented field
# present with its unit, CPU seconds of a known burner, utilization maths, the sources
# named; sparkshim report reads them back; unusable sinks refuse the start (125) under
# report.sink_failure refuse (the default, warn, is tests/host/test-sink-failure.sh).
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
burn=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'kill $listener 2>/dev/null || true; rm -rf "$tmp"' EXIT
listener=
cd "$tmp"
printf '{ "version": 1, "fail_mode": "open" }\n' >open.json
chmod 0644 open.json

# a socket collector that keeps what it receives
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept()
with open(sys.argv[2], "wb") as out:
    while True:
        b = c.recv(65536)
        if not b: break
        out.write(b); out.flush()
' "$tmp/collector.sock" "$tmp/socket.jsonl" &
listener=$!
for _ in $(seq 600); do [ -S collector.sock ] && break; sleep 0.1; done # a guard, not a timing

"$shim" run -q --policy open.json --memory 512m --cores 1 --name "report-test-$$" \
	--report r.jsonl --report-socket "$tmp/collector.sock" --prometheus "$tmp/metrics.prom" \
	--report-interval 1 -- "$burn" 1 2.5c &
runner=$!
# the Prometheus file lives as long as the executor: keep its last version
while kill -0 $runner 2>/dev/null; do cp metrics.prom seen.prom 2>/dev/null || true; sleep 0.2; done
wait $runner || fail "run failed"
[ ! -e metrics.prom ] || fail "metrics.prom was not removed at the end of the run"
wait $listener || true
listener=

python3 - "$src/docs/sparkshim-report.5.md" r.jsonl socket.jsonl <<'PY'
import json, math, sys
doc_md, path, sock = sys.argv[1:4]
lines = [json.loads(l) for l in open(path)]
finals = [d for d in lines if d["kind"] == "final"]
samples = [d for d in lines if d["kind"] == "sample"]
assert len(finals) == 1, f"{len(finals)} final reports"
assert len(samples) >= 1, "no sample lines at a 1 s interval over >= 2.5 s"
assert open(sock).read().splitlines() == open(path).read().splitlines(), "socket and file sinks differ"
f = finals[0]
# every field the schema page documents is present
required = {
  "": ["schema", "kind", "identity", "plan", "enforcement", "collectors", "usage", "utilization", "exit", "agent", "spills", "samples"],
  "identity": ["app_id", "executor_id", "name", "host", "command", "mode", "start", "end", "wall_seconds", "pid"],
  "enforcement": ["enforced", "reason", "cgroup"],
  "collectors": ["bpf", "bpf_attached", "bpf_set", "bpf_node", "taskstats"],
  "usage.cpu": ["seconds", "user_seconds", "system_seconds", "throttled_seconds", "nr_throttled", "bpf_oncpu_seconds", "runq_wait", "psi"],
  "usage.cpu.runq_wait": ["seconds", "count", "p50_us", "p95_us", "p99_us", "histogram_log2_us"],
  "usage.memory": ["peak_bytes", "average_bytes", "p95_bytes", "anon_peak_bytes", "oom_kills", "high_events", "reclaim_stall_seconds", "psi"],
  "usage.disk": ["read_bytes", "write_bytes", "read_ops", "write_ops", "latency_p50_us", "latency_p95_us", "psi"],
  "usage.sources": ["cpu", "cpu.runq_wait", "memory.peak", "memory.average", "memory.oom_kills", "disk", "psi"],
  "utilization": ["cpu", "memory", "objective"],
  "exit": ["status", "signal", "oom_killed"],
  "agent": ["enabled", "injected", "reason", "method", "path", "options", "threshold_bytes", "threshold_of", "stats", "hooks", "pressure", "operators", "totals"],
  "agent.stats": ["file", "status", "error", "final", "pid", "version", "invalid_lines"],
}
md = open(doc_md).read()
for where, keys in required.items():
    obj = f
    for k in filter(None, where.split(".")) if where != "usage.cpu.runq_wait" else ["usage", "cpu", "runq_wait"]:
        obj = obj[k]
    for k in keys:
        assert k in obj, f"{where}.{k} missing"
        assert f"`{k}`" in md or f"**{k}" in md or f"**{where}.{k}" in md, f"{where}.{k} not documented in sparkshim-report.5.md"
assert f["schema"] == "sparkshim.report/v1"
# the policy leaves the agent off: the report says so, and there are no spills
assert f["agent"]["enabled"] is False and f["agent"]["injected"] is False, f["agent"]
assert f["agent"]["reason"] == "disabled by the policy (agent.enabled is false)", f["agent"]["reason"]
assert f["agent"]["stats"]["status"] == "none" and f["spills"] is None, (f["agent"]["stats"], f["spills"])
assert f["exit"]["status"] == 0 and f["exit"]["signal"] is None
cpu = f["usage"]["cpu"]["seconds"]
assert 2.5 <= cpu <= 2.8, f"a burner of 2.5 CPU seconds was reported to use {cpu}"
src = f["usage"]["sources"]["cpu"]
assert src in ("cgroup:cpu.stat", "taskstats", "rusage:children"), src
wall = f["identity"]["wall_seconds"]
req = f["plan"]["cpu"]["request_millicores"] / 1000
u = f["utilization"]
assert math.isclose(u["cpu"], cpu / (req * wall), rel_tol=1e-6), (u["cpu"], cpu, req, wall)
peak = f["usage"]["memory"]["peak_bytes"]
assert peak and peak > 0, "no memory peak"
assert math.isclose(u["memory"], peak / f["plan"]["memory"]["request_bytes"], rel_tol=1e-6)
assert math.isclose(u["objective"], 1 / (u["cpu"] * u["memory"]), rel_tol=1e-6)
assert f["usage"]["sources"]["memory.peak"], "memory peak has no source"
print(f"ok: final report complete: cpu {cpu:.2f} s from {src}, peak {peak} from {f['usage']['sources']['memory.peak']}, "
      f"util cpu {u['cpu']:.2f} mem {u['memory']:.4f}, {len(samples)} samples, enforced {f['enforcement']['enforced']}")
PY
grep -q "^sparkshim_container_cpu_usage_seconds_total{app_id=\"\",executor_id=\"\",name=\"report-test-$$\"} " seen.prom ||
	{ cat seen.prom; fail "prometheus file lacks the CPU counter"; }
echo "ok: prometheus file"

"$shim" report r.jsonl >table.txt
cat table.txt
[ "$(wc -l <table.txt)" = 3 ] || fail "expected header, one row and the total"
grep -q '^TOTAL (1 executors)' table.txt || fail "no total"
[ "$("$shim" report --json r.jsonl | wc -l)" = 1 ] || fail "--json does not re-emit the one final report"
[ "$("$shim" report --json --all r.jsonl | wc -l)" = "$(wc -l <r.jsonl)" ] || fail "--all does not re-emit every line"
echo '{"schema": "other"}' >bad.jsonl
set +e
"$shim" report bad.jsonl >/dev/null 2>err.txt
rc=$?
set -e
[ $rc = 1 ] || fail "a file without reports gave $rc"
grep -q 'not a sparkshim.report/v1 report' err.txt || fail "invalid line not named"
echo "ok: sparkshim report"

# unusable sinks refuse the start, before the command runs, when the policy says so
printf '{ "version": 1, "fail_mode": "open", "report": { "sink_failure": "refuse" } }\n' >refuse.json
chmod 0644 refuse.json
for sink in "--report /nonexistent/dir/r.jsonl" "--report-socket $tmp/nobody.sock" "--prometheus /nonexistent/dir/m.prom"; do
	set +e
	# shellcheck disable=SC2086
	"$shim" run --policy refuse.json --memory 512m $sink -- sh -c 'echo ran' >out.txt 2>err.txt
	rc=$?
	set -e
	[ $rc = 125 ] || fail "$sink: exit $rc, expected 125"
	[ "$(wc -l <err.txt)" = 1 ] || { cat err.txt; fail "$sink: expected one line"; }
	[ ! -s out.txt ] || fail "$sink: the command ran"
	echo "ok: $sink refused: $(cat err.txt)"
done

# the documented example stays a valid report
python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$src/docs/report-example.json" >example.jsonl
[ "$("$shim" report --json example.jsonl | wc -l)" = 1 ] || fail "docs/report-example.json is not a valid final report"
echo "ok: docs/report-example.json validates"
