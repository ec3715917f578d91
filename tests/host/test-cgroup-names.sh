#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-cgroup-names.sh SPARKSHIM: the executor's leaf on this host's cgroup v2 hierarchy
# (issue 11, defect 8): names that are kernel interface files are escaped, a leaf sparkshim
# did not create or that a live shim uses is left alone and fails only the newcomer, and a
# dead shim's leftovers are removed (its processes killed).
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/lib.sh"

if [ "$(id -u)" != 0 ]; then
	echo "skip: needs root (cgroup directories and trusted.* attributes)"
	exit 77
fi
mount=
for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ "$(stat -f -c %T "$m" 2>/dev/null)" = cgroup2fs ] && [ -w "$m" ]; then
		mount=$m
		break
	fi
done
[ -n "$mount" ] || { echo "skip: no writable cgroup2 hierarchy"; exit 77; }

tmp=$(mktemp -d)
parent=sparkshim-names-$$
cg=$mount/$parent
cleanup() {
	for p in $(cat "$cg"/*/cgroup.procs 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
	sleep 0.2
	[ ! -d "$cg" ] || find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
cd "$tmp"
# fail_mode open: where the host has no controllers, the leaf is a measuring one (--report)
printf '{ "version": 1, "fail_mode": "open", "cgroup": { "parent": "%s" } }\n' "$parent" >open.json
chmod 0644 open.json
run() { # NAME CMD... (stdout out.txt, stderr err.txt)
	name=$1
	shift
	"$shim" run --policy open.json --memory 256m --name "$name" --report r.jsonl -- "$@" \
		>out.txt 2>err.txt
}
leaf_of() { sed -n 's/^0:://p' out.txt; }
wait_filled() { # LEAF: until a process of a shim started in the background is in it
	i=0
	until [ -n "$(cat "$cg/$1/cgroup.procs" 2>/dev/null)" ]; do
		i=$((i + 1))
		[ $i -lt 1200 ] || fail "the leaf $1 never filled"
		sleep 0.05
	done
}
mkdir -p "$cg"

# kernel interface names get a '_' in front, as systemd escapes unit cgroups
for name in cgroup.procs memory.max io.pressure _x .hidden; do
	run "$name" cat /proc/self/cgroup || { cat err.txt; fail "--name $name"; }
	case "$(leaf_of)" in
	*"/$parent/_$name") echo "ok: --name $name runs in $(leaf_of)" ;;
	*) cat out.txt err.txt; fail "--name $name ran in '$(leaf_of)'" ;;
	esac
done
run executor-1 cat /proc/self/cgroup
case "$(leaf_of)" in
*"/$parent/executor-1") echo "ok: a plain name is kept" ;;
*) fail "--name executor-1 ran in '$(leaf_of)'" ;;
esac

# a leaf sparkshim did not create: not removed, not used; the newcomer runs in a fresh leaf
# of its own (a name never means "run unconstrained" or "refused": issue 22, defect 1)
mkdir "$cg/foreign"
before=$(stat -c %i "$cg/foreign")
run foreign cat /proc/self/cgroup || { cat err.txt; fail "--name foreign did not run"; }
grep -q "cgroup .*/$parent/foreign already exists and was not created by sparkshim.*this executor's cgroup is .*/$parent/foreign-[0-9a-f]\{8\} instead" err.txt ||
	{ cat err.txt; fail "no word on the foreign leaf and the fresh one"; }
[ "$(stat -c %i "$cg/foreign")" = "$before" ] || fail "the foreign leaf was removed and made again"
leaf_of | grep -q "/$parent/foreign-[0-9a-f]\{8\}\$" || fail "the executor ran in '$(leaf_of)', not a fresh leaf"
[ -z "$(cat "$cg/foreign/cgroup.procs")" ] || fail "a process was put in the foreign leaf"
grep -q '"name":"foreign-[0-9a-f]\{8\}"' r.jsonl || { cat r.jsonl; fail "the report does not name the fresh leaf"; }
echo "ok: a leaf sparkshim did not create is left alone; the newcomer runs in $(leaf_of)"

# a live shim's leaf: the newcomer does not touch it and runs (measured) in a fresh leaf;
# a Prometheus file named after {name} is the newcomer's own, never the first shim's
# (the first shim's executor waits for a gate, not a time: under load the newcomer may take
# longer than any sleep to start)
"$shim" run --policy open.json --memory 256m --name live --report live.jsonl \
	--prometheus "$tmp/prom-{name}.prom" -- sh -c 'until [ -e "$0" ]; do sleep 0.1; done' \
	"$tmp/live.gate" >live.out 2>live.err &
first=$!
wait_filled live
"$shim" run --policy open.json --memory 256m --name live --report r.jsonl \
	--prometheus "$tmp/prom-{name}.prom" --report-interval 1 -- sh -c 'cat /proc/self/cgroup; sleep 1.5' \
	>out.txt 2>err.txt || { cat err.txt; fail "the newcomer of a live name did not run"; }
grep -q "cgroup .*/$parent/live is in use by sparkshim pid $first.*this executor's cgroup is .*/$parent/live-[0-9a-f]\{8\} instead" err.txt ||
	{ cat err.txt; fail "no word on the live leaf"; }
leaf_of | grep -q "/$parent/live-[0-9a-f]\{8\}\$" || fail "the newcomer ran in '$(leaf_of)'"
[ -n "$(cat "$cg/live/cgroup.procs")" ] || fail "the live leaf was emptied"
[ -f prom-live.prom ] || fail "the first shim's Prometheus file is gone"
! grep -q "live-" prom-live.prom || fail "the newcomer wrote the first shim's Prometheus file"
touch "$tmp/live.gate"
wait $first || fail "the first shim failed: $(cat live.err)"
echo "ok: a live shim's leaf is left alone; the newcomer runs in $(leaf_of)"

# the name is a plan input: from the job's side (flag or environment) it needs the policy's
# "name" override
printf '{ "version": 1, "fail_mode": "open", "cgroup": { "parent": "%s" }, "overrides": ["memory"] }\n' \
	"$parent" >noname.json
chmod 0644 noname.json
expect 122 "SPARKSHIM_NAME: set by the user, but the policy does not allow overriding name" \
	env SPARKSHIM_NAME=victim "$shim" run --policy noname.json -- true
expect 122 "--name: set by the user, but the policy does not allow overriding name" \
	"$shim" run --policy noname.json --name victim -- true
[ ! -e "$cg/victim" ] || fail "a refused name made a leaf"
echo "ok: a name from the job's side needs the policy's name override"

# a dead shim's leftovers: the same name kills and replaces it; others go at the next start
python3 - "$cg" <<'PY'
import os, sys
for name in ("left", "left2"):
    path = os.path.join(sys.argv[1], name)
    os.mkdir(path)
    # pid 4194304 is above any pid_max: surely gone
    os.setxattr(path, "trusted.sparkshim.owner", b"4194304 1")
PY
sleep 300 &
orphan=$!
echo $orphan >"$cg/left/cgroup.procs"
run left cat /proc/self/cgroup || { cat err.txt; fail "--name left"; }
case "$(leaf_of)" in
*"/$parent/left") ;;
*) fail "--name left ran in '$(leaf_of)'" ;;
esac
sleep 0.2
! kill -0 $orphan 2>/dev/null || fail "the leftover's process $orphan still runs"
wait $orphan 2>/dev/null || true
[ ! -d "$cg/left2" ] || fail "the other leftover was not swept"
echo "ok: a dead shim's leaf is replaced (its process killed) and other leftovers swept"

# a shim killed outright: the kernel kills its executor, and the next start removes the leaf
"$shim" run --policy open.json --memory 256m --name killed --report k.jsonl -- sleep 300 \
	>/dev/null 2>&1 &
victim=$!
wait_filled killed
executor=$(cat "$cg/killed/cgroup.procs")
kill -9 $victim
wait $victim 2>/dev/null || true
i=0
while kill -0 "$executor" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 100 ] || fail "the executor $executor outlived its killed shim"
	sleep 0.05
done
[ -d "$cg/killed" ] || fail "expected the killed shim's leaf to be left for the next start"
run next true || { cat err.txt; fail "the start after a killed shim"; }
[ ! -d "$cg/killed" ] || fail "the killed shim's leaf was not removed at the next start"
echo "ok: a killed shim's executor dies with it; its leaf goes at the next start"
echo "ok: all"
