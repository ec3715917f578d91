# SPDX-License-Identifier: Apache-2.0
# 25-report: under real enforcement, a run killed by OOM, a run ended by SIGTERM and one
# killed after ignoring TERM each leave a complete final report with the right exit,
# signal and OOM figures; a throttled burner reports throttling from cpu.stat.
# vm-timeout: 180
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

final() { # FILE PYTHON-EXPRESSION...: assert on the final report of FILE
	_file=$1
	shift
	python3 - "$_file" "$@" <<'PY'
import json, sys
docs = [json.loads(l) for l in open(sys.argv[1])]
finals = [d for d in docs if d["kind"] == "final"]
assert len(finals) == 1, f"{len(finals)} final reports in {sys.argv[1]}"
f = finals[0]
u, e, x = f["usage"], f["enforcement"], f["exit"]
for expr in sys.argv[2:]:
    assert eval(expr), f"{expr} is false; exit={x} usage.memory={u['memory']} sources={u['sources']}"
print("final report:", json.dumps({"exit": x, "cpu_s": u["cpu"]["seconds"], "peak": u["memory"]["peak_bytes"],
      "oom_kills": u["memory"]["oom_kills"], "sources": u["sources"]}))
PY
}

run_rc rc "$SPARKSHIM" run --memory 64m --memory-overhead 32m --report oom.jsonl -- "$VMHELPERS/memhog" 400 2>/dev/null
[ "$rc" = 137 ] || fail "OOM run exited $rc"
final oom.jsonl 'x["status"] == 137' 'x["signal"] == 9' 'x["oom_killed"] is True' \
	'u["memory"]["oom_kills"] == 1' 'u["sources"]["memory.oom_kills"] == "cgroup:memory.events"' \
	'e["enforced"] is True' '90 * 2**20 <= u["memory"]["peak_bytes"] <= 96 * 2**20' \
	'u["sources"]["memory.peak"] == "cgroup:memory.peak"'
pass "OOM-killed run: complete report, oom_killed, peak at the 96 MiB limit"

wait_ready() {
	for _ in $(seq 100); do
		grep -qx ready "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "the executor never got ready"
}
"$SPARKSHIM" run --memory 64m --report term.jsonl -- "$VMHELPERS/sigrecord" "$PWD/sig1.txt" &
shim=$!
wait_ready sig1.txt
kill -s TERM "$shim"
run_rc rc wait "$shim"
[ "$rc" = 0 ] || fail "TERM run exited $rc"
final term.jsonl 'x["status"] == 0' 'x["signal"] is None' 'x["oom_killed"] is False'
pass "run ended by SIGTERM: complete report"

"$SPARKSHIM" run --memory 64m --grace 1 --report kill.jsonl -- "$VMHELPERS/sigrecord" "$PWD/sig2.txt" ignore-term &
shim=$!
wait_ready sig2.txt
kill -s TERM "$shim"
run_rc rc wait "$shim" 2>/dev/null
[ "$rc" = 137 ] || fail "ignoring TERM exited $rc"
final kill.jsonl 'x["status"] == 137' 'x["signal"] == 9' 'x["oom_killed"] is False' 'u["memory"]["oom_kills"] == 0'
pass "killed after the grace period: complete report, not an OOM"

"$SPARKSHIM" run --memory 64m --millicores 250 --report cpu.jsonl -- "$VMHELPERS/burn" 2 3
final cpu.jsonl 'u["sources"]["cpu"] == "cgroup:cpu.stat"' 'u["cpu"]["throttled_seconds"] > 1' \
	'u["cpu"]["nr_throttled"] > 10' '1.6 <= f["utilization"]["cpu"] <= 2.05' \
	'u["cpu"]["psi"] is not None and u["cpu"]["psi"]["some_total_us"] > 0'
pass "throttled burner: throttling, PSI and utilization reported"
