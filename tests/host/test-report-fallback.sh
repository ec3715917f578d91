#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-report-fallback.sh SPARKSHIM BURN: with the eBPF probes disabled (--no-bpf), and
# without root (no cgroup, no BPF, no taskstats exit records), the final report is still
# complete from files, /proc, taskstats or rusage, and names the sources it used.
# sparkshim probe watches a process and prints valid sample lines.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
burn=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "needs root to run sparkshim as root and as nobody"; exit 77; }
command -v setpriv >/dev/null || { echo "setpriv (util-linux) is missing"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 0755 "$tmp"
cd "$tmp"
printf '{ "version": 1, "fail_mode": "open" }\n' >open.json
chmod 0644 open.json

check() { # FILE EXPECTED-CPU-SOURCE PYTHON-ASSERTIONS...
	python3 - "$@" <<'PY'
import json, sys
path, cpu_source = sys.argv[1:3]
f = [d for d in map(json.loads, open(path)) if d["kind"] == "final"][0]
u, c = f["usage"], f["collectors"]
for sec in ("cpu", "memory", "disk"):
    assert sec in u, sec
assert u["sources"]["cpu"] == cpu_source, f"cpu source {u['sources']['cpu']}, expected {cpu_source}"
assert 2.4 <= u["cpu"]["seconds"] <= 2.9, f"cpu {u['cpu']['seconds']} for a 2.5 CPU-second burner"
assert u["memory"]["peak_bytes"] and u["sources"]["memory.peak"], "no memory peak or no source for it"
assert u["disk"]["write_bytes"] is not None and u["sources"]["disk"], "no disk figures or no source"
assert f["utilization"]["cpu"] is not None and f["utilization"]["memory"] is not None
for expr in sys.argv[3:]:
    assert eval(expr), expr
print(f"ok: {path}: cpu {u['cpu']['seconds']:.2f} s from {u['sources']['cpu']}, peak from {u['sources']['memory.peak']}, "
      f"disk from {u['sources']['disk']}; bpf: {c['bpf']}; taskstats: {c['taskstats']}")
PY
}

"$shim" run -q --policy open.json --memory 256m --no-bpf --report nobpf.jsonl -- "$burn" 1 2.5c
check nobpf.jsonl cgroup:cpu.stat 'c["bpf"] == "disabled (--no-bpf)"' \
	'u["cpu"]["runq_wait"]["count"] is None' 'u["sources"]["cpu.runq_wait"] is None' \
	'not any(c["bpf_attached"].values())'

touch nobody.jsonl
chown 65534:65534 nobody.jsonl
setpriv --reuid 65534 --regid 65534 --clear-groups \
	"$shim" run -q --policy open.json --memory 256m --report nobody.jsonl -- "$burn" 1 2.5c
check nobody.jsonl rusage:children 'c["bpf"] is not None' 'c["taskstats"] is not None' \
	'f["enforcement"]["enforced"] is False' 'f["enforcement"]["cgroup"] == ""' \
	'u["sources"]["memory.peak"] == "rusage:children"'

# sparkshim probe on a live process: two sample lines and a final line, all valid reports
"$burn" 1 5 &
pid=$!
"$shim" probe --pid $pid --interval 1 --count 2 >probe.jsonl
kill $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
[ "$(wc -l <probe.jsonl)" = 3 ] || { cat probe.jsonl; fail "probe printed $(wc -l <probe.jsonl) lines, expected 3"; }
[ "$("$shim" report --json --all probe.jsonl | wc -l)" = 3 ] || fail "probe lines are not valid reports"
python3 -c '
import json, sys
d = [json.loads(l) for l in open(sys.argv[1])]
assert [x["kind"] for x in d] == ["sample", "sample", "final"], [x["kind"] for x in d]
assert d[-1]["plan"] is None and d[-1]["identity"]["mode"] == "probe"
assert d[-1]["usage"]["cpu"]["seconds"] > 0.5, d[-1]["usage"]["cpu"]
print("ok: probe --pid: %.2f CPU s over %.1f s from %s" % (d[-1]["usage"]["cpu"]["seconds"],
      d[-1]["identity"]["wall_seconds"], d[-1]["usage"]["sources"]["cpu"]))
' probe.jsonl
