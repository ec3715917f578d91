# SPDX-License-Identifier: Apache-2.0
# 80-check: on a pure cgroup v2 kernel, `sparkshim check` says run can enforce (exit 0).
# vm-timeout: 60
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

run_rc rc "$SPARKSHIM" check >out.txt
cat out.txt
[ "$rc" = 0 ] || fail "check exited $rc on a cgroup v2 guest"
grep -q '^cgroup v2 *ok *unified hierarchy at /sys/fs/cgroup' out.txt || fail "layout not reported"
grep -q '^controllers *ok' out.txt || fail "controllers not ok"
grep -q 'sparkshim run can enforce the plan on this host' out.txt || fail "no verdict"
pass "check: can enforce"
