# SPDX-License-Identifier: Apache-2.0
# 52-reaping: 100 orphans of the executor are re-parented to sparkshim (a subreaper) and
# reaped: none is left a zombie.
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

"$SPARKSHIM" run --memory 128m -- "$VMHELPERS/orphans" 100 || fail "orphans were not all reaped"
pass "100 orphans reaped"
