# SPDX-License-Identifier: Apache-2.0
# 70-fail-modes: a read-only cgroup file system and a missing controller give one clear
# line and exit 123 under fail_mode closed, and an unenforced run with a warning under
# fail_mode open; nothing is left behind.
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

write_policy closed.json '{ "version": 1, "fail_mode": "closed" }'
write_policy open.json '{ "version": 1, "fail_mode": "open" }'

# SPARKSHIM_CGROUP_ROOT is a hook of the test build only (the installed sparkshim has none)
shim_t=$SPARKSHIM-test

both_modes() { # WHAT EXPECTED-MESSAGE
	run_rc rc "$shim_t" run --policy closed.json --memory 64m -- sh -c 'echo ran' >out.txt 2>err.txt
	cat err.txt
	[ "$rc" = 123 ] || fail "$1, closed: exit $rc, expected 123"
	[ "$(wc -l <err.txt)" = 1 ] || fail "$1, closed: expected one line on stderr"
	grep -q "$2" err.txt || fail "$1, closed: message lacks '$2'"
	grep -q 'fail_mode closed' err.txt || fail "$1, closed: message does not name the fail mode"
	[ ! -s out.txt ] || fail "$1, closed: the executor ran"
	run_rc rc "$shim_t" run --policy open.json --memory 64m -- sh -c 'echo ran; cat /proc/self/cgroup' >out.txt 2>err.txt
	cat err.txt out.txt
	[ "$rc" = 0 ] || fail "$1, open: exit $rc, expected 0"
	grep -q '^ran$' out.txt || fail "$1, open: the executor did not run"
	grep -q 'warning: not enforcing the plan' err.txt || fail "$1, open: no warning"
	grep -q "$2" err.txt || fail "$1, open: warning lacks '$2'"
	pass "$1: closed refuses with 123, open runs unenforced with a warning"
}

# a read-only view of the cgroup file system
mkdir ro
mount --bind "$CG" ro
mount -o remount,bind,ro ro
SPARKSHIM_CGROUP_ROOT=$PWD/ro both_modes "read-only cgroupfs" "Read-only file system"
umount ro

# a hierarchy whose root lacks the memory controller: a delegated subtree with cpu only
echo "+cpu" >"$CG/cgroup.subtree_control"
mkdir "$CG/cpuonly" "$CG/cpuonly/pod"
echo "+cpu" >"$CG/cpuonly/cgroup.subtree_control"
mkdir nomem
mount --bind "$CG/cpuonly/pod" nomem
SPARKSHIM_CGROUP_ROOT=$PWD/nomem both_modes "missing memory controller" "controllers '+memory' are not available"
umount nomem
[ -z "$(children_of "$CG/cpuonly/pod")" ] || fail "left behind: $(children_of "$CG/cpuonly/pod")"
