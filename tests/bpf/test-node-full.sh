#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bpf-node-full: the node's probe set is bounded (PROBE_NODE_MAX = 1,024 cgroups, a constant
# of the build). One probe-dump registers 1,024 leaves with a set of this test's own; the
# 1,025th registration is refused, saying why; and an executor started then (sparkshim-test
# run, pointed at this set by SPARKSHIM_PROBE_ROOT, a hook only the test build has) does not
# load a set of its own: it measures through its collectors and its report says why.
. "$(dirname "$0")/lib.sh"

[ -x "${SPARKSHIM_TEST:-}" ] || skip "no sparkshim-test binary (SPARKSHIM_TEST)"
ROOT=/sys/fs/bpf/sparkshim-test-$$
MAX=1024
PARENT=$CG2/sparkshim-test-$$-full
holder=
remove_all() {
	[ -z "$holder" ] || { kill -INT "$holder" 2>/dev/null; wait "$holder" 2>/dev/null || :; }
	for d in "$PARENT"/l*; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
	rmdir "$PARENT" 2>/dev/null || :
	rm -rf "$ROOT" 2>/dev/null || :
	cleanup
}
trap remove_all EXIT
mkdir "$PARENT"
i=1
while [ "$i" -le $((MAX + 1)) ]; do
	mkdir "$PARENT/l$i"
	i=$((i + 1))
done

set --
i=1
while [ "$i" -le "$MAX" ]; do
	set -- "$@" "$PARENT/l$i"
	i=$((i + 1))
done
"$PROBE_DUMP" --node "$ROOT" --ready "$WORK/ready" "$@" >/dev/null 2>"$WORK/holder.err" &
holder=$!
for _ in $(seq 1200); do
	[ -s "$WORK/ready" ] && break
	kill -0 "$holder" 2>/dev/null || break
	sleep 0.1
done
[ -s "$WORK/ready" ] || { cat "$WORK/holder.err"; fail "the holder of $MAX registrations never attached"; }
n=$("$PROBE_DUMP" --node-list "$ROOT" | grep -c '"owner_alive":true')
[ "$n" = "$MAX" ] || fail "$n registrations, expected $MAX"
pass "$MAX cgroups registered with one set"

if "$PROBE_DUMP" --node "$ROOT" "$PARENT/l$((MAX + 1))" --seconds 0 >/dev/null 2>"$WORK/over.err"; then
	fail "the $((MAX + 1))th registration was accepted"
fi
grep -q "watches $MAX cgroups already" "$WORK/over.err" || { cat "$WORK/over.err"; fail "the refusal does not say why"; }
pass "the $((MAX + 1))th registration is refused: $(cat "$WORK/over.err")"

printf '{ "version": 1, "fail_mode": "open" }\n' >"$WORK/open.json"
chmod 0644 "$WORK/open.json"
SPARKSHIM_PROBE_ROOT=$ROOT "$SPARKSHIM_TEST" run -q --policy "$WORK/open.json" --memory 256m \
	--report "$WORK/r.jsonl" -- "$BURN" 1 1.5c || fail "sparkshim-test run failed"
python3 - "$WORK/r.jsonl" "$MAX" <<'PY' || fail "the executor past the set's bound"
import json, sys
f = [d for d in map(json.loads, open(sys.argv[1])) if d["kind"] == "final"][0]
c, u = f["collectors"], f["usage"]
assert not any(c["bpf_attached"].values()), f"probes attached: {c['bpf_attached']}"
assert c["bpf_set"] is None, c["bpf_set"]
assert c["bpf"] and f"watches {sys.argv[2]} cgroups already" in c["bpf"], c["bpf"]
assert c["bpf_node"] == c["bpf"], (c["bpf_node"], c["bpf"])
assert u["cpu"]["seconds"] and u["cpu"]["seconds"] >= 1.4, u["cpu"]
assert not u["sources"]["cpu"].startswith("bpf"), u["sources"]
print(f"ok: the executor past the bound measured {u['cpu']['seconds']:.2f} s of CPU from {u['sources']['cpu']}; bpf: {c['bpf']}")
PY
