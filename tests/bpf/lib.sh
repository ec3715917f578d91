# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/bpf/test-*.sh. Environment from tests/bpf/meson.build: PROBE_DUMP, BURN,
# BURN_DIO, HAVE_BPF (1/0), BPF_STUB_REASON. Leaves are created in the cgroup v2 hierarchy
# (/sys/fs/cgroup/unified on hybrid hosts) and removed on exit.
set -eu
export LC_ALL=C

skip() {
	echo "SKIP: $*"
	exit 77
}

fail() {
	echo "FAIL: $*"
	exit 1
}

pass() {
	echo "ok: $*"
}

[ "${HAVE_BPF:-0}" = 1 ] || skip "built without BPF: ${BPF_STUB_REASON:-see the meson configure log}"
[ "$(id -u)" = 0 ] || skip "needs root (BPF programs and cgroup leaves)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF at /sys/kernel/btf/vmlinux"

CG2=
for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ "$(stat -f -c %T "$d" 2>/dev/null)" = cgroup2fs ]; then
		CG2=$d
		break
	fi
done
[ -n "$CG2" ] || skip "no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified"

WORK=$(mktemp -d /tmp/sparkshim-bpf-test.XXXXXX)
LEAVES=

# make_leaf VAR: a fresh leaf below the v2 root, removed by cleanup
make_leaf() {
	_leaf=$CG2/sparkshim-test-$$-$1
	mkdir "$_leaf"
	LEAVES="$LEAVES $_leaf"
	eval "$1=\$_leaf"
}

cleanup() {
	for l in $LEAVES; do
		[ -d "$l" ] || continue
		if [ -e "$l/cgroup.kill" ]; then
			echo 1 >"$l/cgroup.kill" 2>/dev/null || true
		else
			for p in $(cat "$l/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
		fi
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			rmdir "$l" 2>/dev/null && break
			sleep 0.2
		done
	done
	rm -rf "$WORK"
}
trap cleanup EXIT

# usage_usec LEAF: cpu.stat usage of a v2 cgroup (present without the cpu controller)
usage_usec() {
	awk '$1 == "usage_usec" { print $2 }' "$1/cpu.stat"
}

# field FILE LEAF KEY: a number from probe-dump's JSON line for LEAF
field() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    if not line.startswith("{"):
        continue
    o = json.loads(line)
    if o["cgroup"] == sys.argv[2]:
        v = o[sys.argv[3]]
        print(sum(v) if isinstance(v, list) else v)
        break
else:
    sys.exit("no JSON object for " + sys.argv[2])
PY
}

# within A B PERCENT: |A - B| <= PERCENT% of B
within() {
	awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b * p / 100) }'
}

# pct A B: (A - B) / B in percent, for messages
pct() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "inf"; else printf "%+.2f%%\n", (a - b) * 100 / b }'
}
