#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-check.sh SPARKSHIM: `sparkshim check` on this host gives the verdict the host's own
# layout implies, found here independently: exit 0 on a unified hierarchy with cpu and
# memory available; exit 1 naming the missing controllers and where they are bound on a
# hybrid or v1-only host.
set -eu
shim=$1
fail() { echo "FAIL: $*"; exit 1; }

set +e
"$shim" check >out.txt 2>&1
rc=$?
set -e
cat out.txt

root=/sys/fs/cgroup
if [ "$(stat -f -c %T $root)" = cgroup2fs ]; then
	if grep -qw cpu $root/cgroup.controllers && grep -qw memory $root/cgroup.controllers; then
		[ $rc = 0 ] || fail "unified host with cpu and memory: check exited $rc"
		grep -q 'can enforce the plan' out.txt || fail "no positive verdict"
	else
		[ $rc = 1 ] || fail "unified host without cpu/memory: check exited $rc"
		grep -q 'lacks' out.txt || fail "missing controllers not named"
	fi
	echo "ok: unified host"
	exit 0
fi

# hybrid (v2 at unified/) or v1 only: cpu and memory are bound to v1 hierarchies
[ $rc = 1 ] || fail "check exited $rc on a host whose cpu/memory are on cgroup v1"
grep -q '^controllers  *FAIL' out.txt || fail "controllers row is not FAIL"
for c in cpu memory; do
	if [ "$(stat -f -c %T $root/$c 2>/dev/null)" = cgroup ]; then
		grep -q "bound to cgroup v1 at .*$root/$c" out.txt || fail "does not say $c is bound to v1 at $root/$c"
	fi
done
if [ "$(stat -f -c %T $root/unified 2>/dev/null)" = cgroup2fs ]; then
	grep -q 'hybrid host: cgroup2 at /sys/fs/cgroup/unified' out.txt || fail "hybrid layout not named"
	grep -q "lacks cpu memory (has '$(cat $root/unified/cgroup.controllers)')" out.txt ||
		fail "does not list what unified/cgroup.controllers lacks and has"
fi
grep -q 'cannot enforce the plan on this host: controllers:' out.txt || fail "verdict does not give the reason"
echo "ok: check says precisely why this host cannot enforce"
