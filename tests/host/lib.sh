# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/host/test-*.sh (POSIX sh): the checks they share.

fail() {
	echo "FAIL: $*"
	exit 1
}

# expect CODE PATTERN CMD...: exit CODE, exactly one line on stderr matching PATTERN
# (the documented exit codes and one-line errors of bad input); out.txt and err.txt in the
# current directory keep what CMD printed.
expect() {
	code=$1 pattern=$2
	shift 2
	set +e
	"$@" >out.txt 2>err.txt
	rc=$?
	set -e
	[ $rc = "$code" ] || { cat err.txt; fail "$* exited $rc, expected $code"; }
	[ "$(wc -l <err.txt)" = 1 ] || { cat err.txt; fail "$*: expected one line on stderr"; }
	grep -q -- "$pattern" err.txt || { cat err.txt; fail "$*: stderr lacks '$pattern'"; }
	echo "ok: exit $code: $(cat err.txt)"
}
