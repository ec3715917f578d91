#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-unsafe-sinks.sh SPARKSHIM SRC: root's report writes follow no symlink (issue 11,
# defect 5). A symlink at the report path, symlinks planted at the Prometheus file's
# predictable temporary names and at the Prometheus path itself leave their targets
# untouched; a directory writable by others without the sticky bit, and a report file that
# is not root's own, are refused with exit 125 and one line, whatever report.sink_failure
# says. Needs root (skips otherwise): only root's writes are the danger.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$2" && pwd)
. "$src/tests/host/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: not root"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
printf '{ "version": 1, "fail_mode": "open" }\n' >open.json
chmod 0644 open.json
run="$shim run -q --policy $tmp/open.json --memory 512m"
echo precious >target

untouched() {
	[ "$(cat "$1")" = precious ] || fail "$2: root wrote through a symlink into $1: $(head -c 200 "$1")"
}

# a symlink at the report path
ln -s "$tmp/target" r.jsonl
expect 125 "report file $tmp/r.jsonl: refused: a symlink" $run --report "$tmp/r.jsonl" -- true
untouched target "symlink at the report path"
rm r.jsonl

# symlinks at every temporary name the Prometheus file could get (<path>.tmp.<pid>, pids
# of a fresh pid namespace) and at the Prometheus path itself
mkdir prom
for pid in $(seq 2 64); do ln -s "$tmp/target" "prom/m.prom.tmp.$pid"; done
echo precious >target2
ln -s "$tmp/target2" prom/m.prom
# (the file is written at the executor's first second and removed at its end: look at it
# while the executor runs, which waits for a gate file the test makes once it has looked,
# however late a busy machine runs the executor or the poll; at most 60 s)
unshare -p -f sh -c "$run --prometheus $tmp/prom/m.prom -- sh -c 'while [ ! -e $tmp/prom-seen ]; do sleep 0.05; done'; rc=\$?; exit \$rc" &
runner=$!
for _ in $(seq 600); do [ -f prom/m.prom ] && [ ! -L prom/m.prom ] && break; sleep 0.1; done
seen=0
[ -f prom/m.prom ] && [ ! -L prom/m.prom ] && seen=1
grep -q '^sparkshim_container_spec_memory_limit_bytes' prom/m.prom 2>/dev/null || seen=0
touch prom-seen
[ $seen = 1 ] || fail "prom/m.prom was not replaced by a regular file with the metrics"
wait $runner || fail "run with planted temporary names failed"
untouched target "symlinks at predictable temporary names"
untouched target2 "a symlink at the Prometheus path"
[ ! -e prom/m.prom ] || fail "prom/m.prom was not removed at the end of the run"
[ -z "$(find prom -name '.m.prom.*')" ] || fail "temporary files left behind: $(ls -a prom)"
echo "ok: no write through symlinks; the Prometheus file replaced atomically, removed at the end"

# a directory others may write without the sticky bit: refused (also under sink_failure warn)
mkdir open-dir
chmod 0777 open-dir
expect 125 "report file $tmp/open-dir/r.jsonl: refused: directory $tmp/open-dir is writable by group or others (mode 0777) without the sticky bit" \
	$run --report "$tmp/open-dir/r.jsonl" -- true
expect 125 "prometheus file $tmp/open-dir/m.prom: refused: directory $tmp/open-dir is writable" \
	$run --prometheus "$tmp/open-dir/m.prom" -- true
[ -z "$(ls open-dir)" ] || fail "files created in open-dir: $(ls open-dir)"

# ... the sticky bit (as on /tmp) makes it fine
mkdir sticky-dir
chmod 1777 sticky-dir
$run --report "$tmp/sticky-dir/r.jsonl" -- true || fail "a sticky world-writable directory was refused"
[ -s sticky-dir/r.jsonl ] || fail "no report in the sticky directory"

# a report file that is not root's own, or has a second link
touch theirs.jsonl
chown 65534 theirs.jsonl
expect 125 "report file $tmp/theirs.jsonl: refused: owned by uid 65534" $run --report "$tmp/theirs.jsonl" -- true
echo precious >linked-target
ln linked-target linked.jsonl
expect 125 "report file $tmp/linked.jsonl: refused: 2 hard links" $run --report "$tmp/linked.jsonl" -- true
untouched linked-target "a hard link at the report path"
echo "ok: unsafe report paths refused"
