#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# guest-main.sh BUILD_DIR OUTDIR -- runs INSIDE the vm-run guest (as root, cgroup v2 at
# /sys/fs/cgroup) and runs every tests/vm/cases/*.sh in name order, printing TAP on
# stdout. Started by tests/vm/run-suite; not meant to run on the host.
#
# Each case is run as `sh CASE` with cwd = CASE_TMP, stdin from /dev/null, and env:
#   SPARKSHIM  = BUILD_DIR/shim/sparkshim
#   VMHELPERS  = the directory of the C payload helpers: BUILD_DIR/tests/vm/helpers when
#                it exists (tests/vm/helpers/meson.build), else BUILD_DIR/tests/vm
#   BUILD_DIR, SRC_DIR                       CASE_TMP  = fresh dir under /tmp (guest RAM)
#   CASE_OUT   = OUTDIR/cases/NAME: writable, kept on the host after the run
# plus PATH/HOME/TERM. It starts in the leaf cgroup /sys/fs/cgroup/vm-case and in a
# private mount namespace (mounts it leaves die with it). Exit 0 = pass,
# 77 = skip (the last line of output is the reason), anything else = fail. Its output
# (stdout+stderr, also kept in OUTDIR/cases/NAME.log) becomes TAP "# " lines.
# A case is killed (its whole process group, SIGKILL 10 s later) after the SECONDS of
# its own "# vm-timeout: SECONDS" line, else after SPARKSHIM_VM_CASE_TIMEOUT (default 300);
# one still running 30 s after that has its kernel stacks dumped to the console (sysrq w
# and t: .vm-console on the host). After each case every process left in a non-root
# cgroup is killed, every non-root cgroup removed and the root's cgroup.subtree_control
# emptied, so cases start from the same state.
# SPARKSHIM_VM_CASES: space-separated globs; only cases whose name (file name without
# .sh) or file name matches one run.
# Exit status: 0 when all cases ran (whatever their results), non-zero if the harness
# itself broke.
set -eu

if [ $# -ne 2 ]; then
	echo "usage: guest-main.sh BUILD_DIR OUTDIR" >&2
	exit 2
fi
BUILD_DIR=$1
OUTDIR=$2
SRC_DIR=$(cd "$(dirname "$0")/../.." && pwd -P)
CG=/sys/fs/cgroup
CASE_CG=$CG/vm-case
VMHELPERS=$BUILD_DIR/tests/vm
[ ! -d "$VMHELPERS/helpers" ] || VMHELPERS=$VMHELPERS/helpers
export LC_ALL=C

# The guest's root is the host's: a policy installed there (the Debian package's, which the
# cluster suites install) would be the cases' default policy. The cases assume the built-in
# defaults at the default path, whatever the host has: an empty directory over it.
if [ -d /etc/sparkshim ]; then
	mount -t tmpfs -o mode=0755,size=1m sparkshim-etc /etc/sparkshim
fi

uptime_ms() {
	awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime
}

# Prefer coreutils timeout (distinct status 124, kills the case's whole process group,
# SIGKILL after a grace period); busybox timeout otherwise.
if command -v timeout >/dev/null 2>&1 && timeout --version >/dev/null 2>&1; then
	TIMEOUT="timeout -k 10"
else
	TIMEOUT="busybox timeout"
fi

# A private mount namespace per case, if util-linux unshare can make one.
UNSHARE=
if unshare --mount --propagation private true 2>/dev/null; then
	UNSHARE="unshare --mount --propagation private"
fi

if [ "$(stat -f -c %T $CG 2>/dev/null)" != cgroup2fs ]; then
	echo "Bail out! $CG is not cgroup2 in the guest; is this running under scripts/vm-run?"
	exit 1
fi

# --- collect the cases
filter=${SPARKSHIM_VM_CASES:-}
set --
for f in "$SRC_DIR"/tests/vm/cases/*.sh; do
	[ -f "$f" ] || continue
	name=${f##*/}
	name=${name%.sh}
	if [ -n "$filter" ]; then
		match=0
		set -f
		for g in $filter; do
			# shellcheck disable=SC2254 # $g is a glob on purpose
			case $name in $g) match=1 ;; esac
			# shellcheck disable=SC2254
			case $name.sh in $g) match=1 ;; esac
		done
		set +f
		[ $match = 1 ] || continue
	fi
	set -- "$@" "$f"
done

echo "TAP version 13"
if [ $# -eq 0 ]; then
	if [ -n "$filter" ]; then
		echo "1..0 # SKIP no case matches SPARKSHIM_VM_CASES='$filter'"
	else
		echo "1..0 # SKIP no cases in $SRC_DIR/tests/vm/cases"
	fi
	exit 0
fi
echo "1..$#"
echo "# guest: $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) " MiB" }' /proc/meminfo), up $(cut -d' ' -f1 /proc/uptime) s"

# --- reset the cgroup tree between cases
cg_reset() {
	old_ifs=$IFS
	IFS='
'
	dirs=$(find $CG -mindepth 1 -depth -type d 2>/dev/null || true)
	for d in $dirs; do
		[ "$d" = "$CASE_CG" ] || echo "# harness: removing cgroup ${d#"$CG"} left by the case"
		if [ -e "$d/cgroup.kill" ]; then
			echo 1 >"$d/cgroup.kill" 2>/dev/null || true
		else
			# shellcheck disable=SC2013 # pids and controller names are words
			for p in $(cat "$d/cgroup.procs" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
		fi
	done
	for d in $dirs; do
		n=0
		while grep -q '^populated 1' "$d/cgroup.events" 2>/dev/null && [ $n -lt 50 ]; do
			sleep 0.1
			n=$((n + 1))
		done
		rmdir "$d" 2>/dev/null || echo "# harness: cannot remove cgroup ${d#"$CG"}"
	done
	IFS=$old_ifs
	# shellcheck disable=SC2013 # pids and controller names are words
	for c in $(cat $CG/cgroup.subtree_control); do
		echo "-$c" >$CG/cgroup.subtree_control 2>/dev/null ||
			echo "# harness: cannot disable controller $c in the root cgroup"
	done
}

# --- remove CASE_TMP, even with mounts left below it (when there is no mount namespace)
rm_case_tmp() {
	# shellcheck disable=SC2013 # mount points are words here (no blanks in CASE_TMP)
	for m in $(awk -v p="$1" '$5 == p || index($5, p "/") == 1 { print $5 }' /proc/self/mountinfo | sort -r); do
		echo "# harness: unmounting $m left by the case"
		umount -l "$m" 2>/dev/null || echo "# harness: cannot unmount $m"
	done
	rm -rf "$1" 2>/dev/null || echo "# harness: cannot remove $1"
}

# --- run them
mkdir -p "$OUTDIR/cases"
i=0
failed=0
cg_reset >/dev/null 2>&1 || true
for f in "$@"; do
	i=$((i + 1))
	name=${f##*/}
	name=${name%.sh}
	log=$OUTDIR/cases/$name.log
	case_out=$OUTDIR/cases/$name
	rm -rf "$case_out"
	mkdir -p "$case_out"
	case_tmp=$(mktemp -d "/tmp/vm-case.$name.XXXXXX")
	limit=$(sed -n 's/^# vm-timeout: *\([0-9][0-9]*\) *$/\1/p' "$f" | head -n1)
	limit=${limit:-${SPARKSHIM_VM_CASE_TIMEOUT:-300}}
	mkdir -p "$CASE_CG"

	t0=$(uptime_ms)
	rc=0
	# The console (.vm-console on the host) does not go through the 9p share that this
	# script's output and the case's log do: it says which case a guest that stopped
	# answering was in. A case that outlives its timeout by 30 s did not die of timeout's
	# KILL (its start, or the kernel, is stuck): the stacks of the blocked tasks, then of
	# all, go there too, at a console level that prints them (the guest boots quiet).
	echo "guest-main: $name starts (timeout ${limit} s)" >/dev/console 2>/dev/null || true
	(
		trap 'kill "$!" 2>/dev/null; exit 0' TERM
		sleep $((limit + 30)) &
		wait $! || exit 0
		echo "guest-main: $name still runs $((limit + 30)) s after its start: sysrq w, t" >/dev/console || true
		echo 8 >/proc/sys/kernel/printk || true
		echo w >/proc/sysrq-trigger || true
		echo t >/proc/sysrq-trigger || true
	) </dev/null >/dev/null 2>&1 &
	watchdog=$!
	(
		cd "$case_tmp"
		# shellcheck disable=SC2086,SC2016 # $TIMEOUT splits on purpose; $$ is the inner sh's
		exec env SPARKSHIM="$BUILD_DIR/shim/sparkshim" VMHELPERS="$VMHELPERS" \
			BUILD_DIR="$BUILD_DIR" SRC_DIR="$SRC_DIR" CASE_TMP="$case_tmp" CASE_OUT="$case_out" \
			sh -c 'echo $$ >"$1/cgroup.procs" || exit 126; shift; exec "$@"' sh "$CASE_CG" \
			$UNSHARE $TIMEOUT "$limit" sh "$f"
	) </dev/null >"$log" 2>&1 || rc=$?
	kill "$watchdog" 2>/dev/null || true
	wait "$watchdog" 2>/dev/null || true
	t1=$(uptime_ms)
	echo "guest-main: $name ended (status $rc)" >/dev/console 2>/dev/null || true
	elapsed=$(((t1 - t0) / 1000)).$(((t1 - t0) % 1000 / 100))

	timed_out=0
	if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ $((t1 - t0)) -ge $((limit * 1000 - 500)) ]; then
		timed_out=1
	fi
	if [ $rc -eq 0 ]; then
		echo "ok $i - $name"
	elif [ $rc -eq 77 ] && [ "${CI:-}" != true ]; then
		reason=$(grep -v '^[[:space:]]*$' "$log" | tail -n1 | tr -d '#' || true)
		echo "ok $i - $name # SKIP ${reason:-no reason given}"
	elif [ $rc -eq 77 ]; then
		# meson counts a skipped subtest as nothing: under CI, which must run every case
		# this machine can, a case that skips fails
		reason=$(grep -v '^[[:space:]]*$' "$log" | tail -n1 | tr -d '#' || true)
		echo "not ok $i - $name (skipped under CI=true: ${reason:-no reason given})"
		failed=$((failed + 1))
	else
		# the case's own reason (its last "FAIL: " line, else its last line) in the TAP
		# line, which scripts/test's summary repeats: the tail of a CI log then says why
		reason=$(grep -a '^FAIL: ' "$log" | tail -n1 | cut -c7-)
		[ -n "$reason" ] || reason=$(grep -av '^[[:space:]]*$' "$log" | tail -n1 || true)
		[ "$timed_out" = 0 ] || reason="timed out after ${limit}s; last: $reason"
		echo "not ok $i - $name: $(printf '%s' "${reason:-no output}" | tr -d '#' | cut -c1-200)"
		failed=$((failed + 1))
	fi
	sed 's/^/# /' "$log"
	if [ $timed_out = 1 ]; then
		echo "# harness: $name timed out after ${limit}s and was killed"
	elif [ $rc -ne 0 ] && [ $rc -ne 77 ]; then
		echo "# harness: $name exited with status $rc"
	fi
	echo "# harness: $name took ${elapsed}s"
	cg_reset || echo "# harness: resetting the cgroup tree failed"
	rm_case_tmp "$case_tmp"
done

# The verdict is in the TAP; exit 0 means the run completed (see run-suite).
echo "# $failed of $# failed"
exit 0
