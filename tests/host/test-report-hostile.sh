#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-report-hostile.sh SPARKSHIM: sparkshim report on hostile input (issue 11, defect 12):
# a 1 GB line (a sparse file: no disk used), /dev/zero as a file and on standard input
# (16 GiB read then: the input bound), a FIFO without a writer, a
# directory, totals that overflow int64, an operator without a name. Each ends (timeout
# guard), within bounded memory (ulimit -v), with one line naming the file and what is
# wrong, the documented exit code (sparkshim(1)), and the valid lines still summarised.
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
src=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# The memory bound: 256 MiB of address space (ulimit -v), or, for an ASan build (whose
# shadow memory reserves terabytes of it), 256 MiB of resident memory (/usr/bin/time).
asan=0
grep -q __asan_init "$shim" && asan=1
time=
[ -x /usr/bin/time ] && time=/usr/bin/time
[ $asan = 0 ] || [ -n "$time" ] || { echo "SKIP: an ASan build needs /usr/bin/time (package time)"; exit 77; }

# bounded TIMEOUT ARGS...: sparkshim report ARGS with stdin as given; exit status in $rc
bounded() {
	limit=$1
	shift
	rm -f rss.txt
	set +e
	if [ $asan = 0 ]; then
		(ulimit -v 262144; exec timeout "$limit" ${time:+$time -f %M -o rss.txt} "$shim" report "$@") >out.txt 2>err.txt
	else
		timeout "$limit" $time -f %M -o rss.txt "$shim" report "$@" >out.txt 2>err.txt
	fi
	rc=$?
	set -e
	[ $rc != 124 ] || fail "report $*: still running after $limit s"
	if [ -s rss.txt ]; then
		rss=$(tail -1 rss.txt)
		[ "$rss" -lt 262144 ] || fail "report $*: $rss KiB resident"
	fi
}

# run EXPECTED_RC ARGS...: one line on stderr and the expected exit status
run() {
	want=$1
	shift
	bounded 60 "$@"
	[ $rc = "$want" ] || { cat err.txt; fail "report $*: exit $rc, expected $want"; }
	[ "$(wc -l <err.txt)" = 1 ] || { cat err.txt; fail "report $*: expected one line on stderr"; }
	echo "ok: report $* -> $rc: $(cat err.txt)"
}

python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$src/docs/report-example.json" >good.jsonl

# a 1 GB line, then a valid report: the line is skipped without being held, the report read
truncate -s 1G big.jsonl
printf '\n' >>big.jsonl
cat good.jsonl >>big.jsonl
run 0 big.jsonl
grep -q 'big.jsonl:1: line longer than 16777216 bytes; skipped' err.txt || fail "the long line is not named"
grep -q '^application_1700000000000_0042/3 ' out.txt || fail "the valid line after the long one was lost"
grep -q '^TOTAL (1 executors)' out.txt || fail "no total"

# the same through standard input (a pipe)
bounded 60 - <big.jsonl
[ $rc = 0 ] || { cat err.txt; fail "report - <big.jsonl: exit $rc"; }
grep -q -- ' -:1: line longer than' err.txt || fail "stdin: the long line is not named: $(cat err.txt)"

# an endless stream on standard input: the line is skipped unbuffered, the input bound ends it
bounded 120 - </dev/zero
[ $rc = 120 ] || { cat err.txt; fail "report - </dev/zero: exit $rc, expected 120"; }
grep -q -- ' -:1: line longer than 16777216 bytes; skipped' err.txt || fail "stdin: the long line not named"
grep -q -- '-: longer than 17179869184 bytes; stopped at line 1' err.txt || fail "stdin: the input bound not named"
echo "ok: report - </dev/zero -> 120: $(tail -1 err.txt)"

# not regular files: refused at once, 120
run 120 /dev/zero
grep -q '/dev/zero: is a character device, not a regular file' err.txt || fail "/dev/zero not named"
mkfifo fifo
run 120 fifo
grep -q 'fifo: is a FIFO, not a regular file' err.txt || fail "the FIFO not named"
mkdir dir
run 120 dir
grep -q 'dir: is a directory' err.txt || fail "the directory not named"
# and the other files are still read
run 120 dir good.jsonl
grep -q '^TOTAL (1 executors)' out.txt || fail "a directory before a good file stops the report"

python3 - "$src/docs/report-example.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
doc["spills"] = {"forced_spills": 2**63 - 1}
with open("overflow.jsonl", "w") as f:
    f.write(json.dumps(doc) + "\n" + json.dumps(doc) + "\n")
doc["spills"] = None
doc["agent"]["operators"] = [{"forced_spills": 3, "failed_spills": 0, "forced_by": {"force_bytes": 3}}]
with open("noname.jsonl", "w") as f:
    f.write(json.dumps(doc) + "\n")
PY

# two int64 maxima: the total saturates, says so, never wraps to a negative count
run 0 overflow.jsonl
grep -q '^TOTAL (2 executors) .* 9223372036854775807+$' out.txt || { cat out.txt; fail "the total did not saturate"; }
! grep -q -- '-2$' out.txt || fail "the total wrapped"
grep -q 'total of forced spills passes 9223372036854775807' err.txt || fail "saturation not said"

# an operator without a name: the line is named and skipped, the other file summarised
run 0 noname.jsonl good.jsonl
grep -q 'noname.jsonl:1: not a sparkshim.report/v1 report: agent.operators\[0\].operator is missing' err.txt ||
	fail "the unnamed operator not named"
! grep -q '(null)' out.txt || fail "(null) printed"
grep -q '^TOTAL (1 executors)' out.txt || fail "the valid file after it not summarised"
# alone: no report in it (exit 1), the bad line named
set +e
"$shim" report noname.jsonl >out.txt 2>err.txt
rc=$?
set -e
[ $rc = 1 ] || fail "a file with only a bad line: exit $rc, expected 1"
grep -q 'noname.jsonl:1:' err.txt || fail "bad line not named"

# a symlink (issue 22, defect 8a): root reads no file a link names, even to a good report
ln -s good.jsonl link.jsonl
run 120 link.jsonl
grep -q 'link.jsonl: a symbolic link (refused)' err.txt || fail "the symlink is not named"
[ ! -s out.txt ] || { cat out.txt; fail "the report a symlink names was read"; }
run 120 link.jsonl good.jsonl
grep -q '^TOTAL (1 executors)' out.txt || fail "a symlink before a good file stops the report"
echo "ok: a symbolic link is refused (120), the other files read"

# what a bad line's first token echoes, and a file's name, as they reach stderr: control
# characters (C0, DEL, C1 such as CSI 0x9b) and bytes that are not UTF-8 escaped as \xNN,
# the line valid UTF-8 (issue 22, defect 8a); a C0 control the error text itself carries
# becomes '?' there (util_error_set), before the logger sees it
printf '\302\233[2J\033]0;t\007x\n' >ctl.jsonl
printf 'abc\n' >"name$(printf '\377\302\233').jsonl"
printf '\033[2J\n' >esc.jsonl
cat good.jsonl >>ctl.jsonl
cat good.jsonl >>esc.jsonl
set +e
"$shim" report ctl.jsonl esc.jsonl name*.jsonl >out.txt 2>err.txt
rc=$?
set -e
[ $rc = 0 ] || { cat err.txt; fail "report of bad lines: exit $rc, expected 0"; }
python3 - err.txt <<'PY' || { cat -v err.txt; fail "a bad line's token or a file name reached stderr raw"; }
import sys
raw = open(sys.argv[1], "rb").read()
text = raw.decode("utf-8")  # UnicodeDecodeError: not UTF-8
lines = text.splitlines()
assert len(lines) == 3, lines
assert all(c >= " " and c != "\x7f" and not "\x80" <= c <= "\x9f" for l in lines for c in l), lines
assert "ctl.jsonl:1: not JSON: '[' or '{' expected near '\\xc2\\x9b'" in lines[0], lines[0]
assert "esc.jsonl:1: not JSON: '[' or '{' expected near '?'" in lines[1], lines[1]
assert "name\\xff\\xc2\\x9b.jsonl:1: not JSON" in lines[2], lines[2]
PY
grep -q '^application_1700000000000_0042/3 ' out.txt || fail "the valid line after a bad one was lost"
echo "ok: a bad line's token and a file name are escaped: $(head -1 err.txt)"
echo "ok: hostile report inputs"
