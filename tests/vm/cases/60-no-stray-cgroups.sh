# SPDX-License-Identifier: Apache-2.0
# 60-no-stray-cgroups: 50 consecutive runs (clean exits, failures, kills, a background
# leftover) leave no cgroup behind.
# vm-timeout: 300
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

i=0
while [ $i -lt 50 ]; do
	case $((i % 4)) in
	0) "$SPARKSHIM" run --memory 64m -- true ;;
	1) run_rc _ "$SPARKSHIM" run --memory 64m -- sh -c 'exit 3' ;;
	2) run_rc _ "$SPARKSHIM" run --memory 64m -- sh -c 'kill -9 $$' ;;
	3) "$SPARKSHIM" run --memory 64m -- sh -c 'sleep 100 & exit 0' ;;
	esac
	i=$((i + 1))
done
left=$(children_of "$CG/sparkshim")
[ -z "$left" ] || fail "left behind: $left"
# its own sleeps, by their whole command line: the harness's watchdog sleeps too (guest-main.sh)
pgrep -fx 'sleep 100' >/dev/null && fail "a leftover sleep survived its executor"
pass "50 runs, no cgroup and no process left"
