# SPDX-License-Identifier: Apache-2.0
# 50-signals: HUP, INT, QUIT, USR1, USR2 and TERM sent to sparkshim reach the executor;
# with --signal-group they reach its whole process group.
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

wait_for_line() { # FILE LINE
	for _ in $(seq 100); do
		grep -qx "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$1 never got '$2'"
}

for mode in "" --signal-group; do
	rm -f sig.txt
	"$SPARKSHIM" run $mode --grace 5 --memory 128m -- "$VMHELPERS/sigrecord" "$PWD/sig.txt" &
	shim=$!
	wait_for_line sig.txt ready
	for s in HUP INT QUIT USR1 USR2; do
		kill -s "$s" "$shim"
		wait_for_line sig.txt "$s"
	done
	kill -s TERM "$shim"
	run_rc rc wait "$shim"
	cat sig.txt
	[ "$rc" = 0 ] || fail "sparkshim exited $rc after the executor handled TERM and exited 0"
	[ "$(tr '\n' ' ' <sig.txt)" = "ready HUP INT QUIT USR1 USR2 TERM " ] || fail "signals not forwarded in order"
	pass "forwarded HUP INT QUIT USR1 USR2 TERM ${mode:-(to the child)}"
done
