#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bpf-disk: 64 MiB written and read back with O_DIRECT from a watched leaf are counted within
# 5% (bytes), with ops > 0 and one latency sample per op, while 32 MiB of the same from an
# unwatched leaf are not. Twice: attributing at block_io_start (this kernel, >= 6.5), and at
# block_rq_insert/issue as on older kernels (forced with the library's test hook), within
# 15% there: see run() for why.
. "$(dirname "$0")/lib.sh"

mib=64
dir=${SPARKSHIM_BPF_DISK_DIR:-/var/tmp}
fstype=$(stat -f -c %T "$dir")
case $fstype in
tmpfs | ramfs | overlayfs | 9p | nfs*) skip "$dir is on $fstype: O_DIRECT I/O would not reach a block device (set SPARKSHIM_BPF_DISK_DIR)" ;;
esac
fa=$(mktemp "$dir/sparkshim-dio-A.XXXXXX")
fb=$(mktemp "$dir/sparkshim-dio-B.XXXXXX")
trap 'rm -f "$fa" "$fb"; cleanup' EXIT

# run VARIANT: "" (what this kernel has) or "insert"
run() {
	make_leaf "A$1"
	make_leaf "B$1" # not watched
	eval "a=\$A$1 b=\$B$1"
	SPARKSHIM_PROBE_DISK_VARIANT=$1 "$PROBE_DUMP" "$a" -- sh -c "
		sh -c 'echo 0 >$b/cgroup.procs && exec $BURN_DIO $fb 32' &
		$BURN_DIO $fa $mib
		wait" >"$WORK/out$1" 2>"$WORK/err" || { cat "$WORK/err"; fail "probe-dump failed"; }
	cat "$WORK/err"
	grep '^burn-dio' "$WORK/out$1" || true

	get() { field "$WORK/out$1" "$a" "$1"; }
	want=$((mib * 1024 * 1024))
	hooks=$(grep '^{' "$WORK/out$1" | python3 -c 'import json, sys; print(json.loads(sys.stdin.readline())["detail"]["disk"])')
	rb=$(field "$WORK/out$1" "$a" read_bytes)
	wb=$(field "$WORK/out$1" "$a" write_bytes)
	rops=$(field "$WORK/out$1" "$a" read_ops)
	wops=$(field "$WORK/out$1" "$a" write_ops)
	lat=$(field "$WORK/out$1" "$a" disk_lat_hist)
	p99=$(field "$WORK/out$1" "$a" disk_p99_us)
	echo "[$hooks] $fstype on $(df --output=source "$dir" | tail -1): read $rb bytes in $rops ops ($(pct "$rb" "$want")), write $wb bytes in $wops ops ($(pct "$wb" "$want")); latency samples $lat, p99 <= $p99 us"

	# Before 6.5 (the insert variant) a request the device could not take at once is issued
	# later by whoever runs the queue next, another task or kblockd, and is that task's
	# (docs/probes.md): with other I/O on the device, a few requests of either leaf go astray
	# (-4.7% seen with a second copy of this test running). block_io_start has no such gap.
	tol=5
	[ "$1" = insert ] && tol=15
	within "$wb" "$want" $tol || fail "[$hooks] write bytes $wb not within $tol% of $want"
	within "$rb" "$want" $tol || fail "[$hooks] read bytes $rb not within $tol% of $want"
	[ "$rops" -gt 0 ] && [ "$wops" -gt 0 ] || fail "[$hooks] read ops $rops, write ops $wops"
	[ "$lat" = $((rops + wops)) ] || fail "[$hooks] latency histogram total $lat != ops $((rops + wops))"
	lost=$(field "$WORK/out$1" "$a" disk_requests_lost)
	[ "$lost" = 0 ] || fail "[$hooks] $lost requests not followed (no room in their bucket)"
	pass "[$hooks] O_DIRECT bytes within $tol% of $want each way, ops > 0, B's 32 MiB not counted"
}

run ""
run insert
