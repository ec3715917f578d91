# SPDX-License-Identifier: Apache-2.0
# 54-fd-leak: no file descriptor of sparkshim's reaches the executor, in wrap mode and
# with the fork fallback's pipe; only 0, 1 and 2.
# vm-timeout: 60
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

"$SPARKSHIM" run -v --memory 64m -- "$VMHELPERS/fdcheck" || fail "fds leaked into the executor"
pass "only 0, 1, 2 in the executor"
