# SPDX-License-Identifier: Apache-2.0
# 85-bpf: the eBPF probes on the guest's kernel (Debian's 6.1; the host runs 6.18): all three
# kinds load and attach, and a memory hog OOM-killed under a 64 MiB memory.max counts one
# OOM kill for its cgroup, with memcg reclaim stalls and on-CPU time measured too. The OOM
# victim is tied to its cgroup twice: by the kernel's own mark_victim shape, and by the
# mark_victim(pid) path (signal_generate; forced through the library's test hook), so both
# code paths run on a real OOM kill. Skips (77) only when the build has no BPF.
# vm-timeout: 300
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

PROBE_DUMP=$BUILD_DIR/bpf/probe-dump
if ! grep -qx '#define SPARKSHIM_HAVE_BPF 1' "$BUILD_DIR/bpf/probe-config.h" 2>/dev/null; then
	echo "built without BPF (see $BUILD_DIR/bpf/probe-config.h)"
	exit 77
fi
[ -x "$PROBE_DUMP" ] || fail "$PROBE_DUMP is missing"
[ -r /sys/kernel/btf/vmlinux ] || fail "the guest kernel $(uname -r) has no BTF"

# jnum FILE KEY: a top-level number from probe-dump's one-line JSON
jnum() {
	grep '^{' "$1" | sed -n "s/.*\"$2\":\([0-9][0-9]*\).*/\1/p" | head -1
}

echo +memory >"$CG/cgroup.subtree_control"

# hog VARIANT: run the hog under probe-dump in a fresh 64 MiB cgroup; results in hog-VARIANT.*
hog() {
	cg=$CG/bpf-oom-$1
	mkdir "$cg"
	echo 64M >"$cg/memory.max"
	[ ! -e "$cg/memory.swap.max" ] || echo 0 >"$cg/memory.swap.max"
	if [ "$1" = pid ]; then
		run_rc rc env SPARKSHIM_PROBE_OOM_VARIANT=pid "$PROBE_DUMP" "$cg" -- "$VMHELPERS/memhog" 400 \
			>"hog-$1.json" 2>"hog-$1.err"
	else
		run_rc rc "$PROBE_DUMP" "$cg" -- "$VMHELPERS/memhog" 400 >"hog-$1.json" 2>"hog-$1.err"
	fi
	cat "hog-$1.err"
	grep '^{' "hog-$1.json" || true
	[ "$rc" = 0 ] || fail "probe-dump exited $rc"
	kernel_kills=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.events")
	rmdir "$cg"
}

hog native
f=hog-native.json
grep -q '"attached":\["cpu","memory","disk"\]' $f || fail "not all probes attached on $(uname -r)"
grep -q '"signal":9' $f || fail "the hog was not SIGKILLed"
kills=$(jnum $f oom_kills)
[ "$kills" = 1 ] || fail "oom_kills $kills, expected 1 (memory.events oom_kill $kernel_kills)"
[ "$(jnum $f reclaim_count)" -gt 0 ] || fail "no memcg reclaim stall measured"
[ "$(jnum $f oncpu_ns)" -gt 0 ] || fail "no on-CPU time for the hog"
how=$(sed -n 's/.*"attribution":"\([a-z]*\)".*/\1/p' $f)
victim=$(grep -o 'mark_victim([a-z,-]*)' $f | head -1)
pass "$(uname -r): cpu, memory and disk attached; 1 OOM kill (memory.events: $kernel_kills) via $victim, attribution '$how'; reclaim $(jnum $f reclaim_count) stalls, $(jnum $f reclaim_ns) ns"

hog pid
f=hog-pid.json
grep -Eq 'mark_victim\((pid|task,as-pid)\) signal_generate' $f || fail "the mark_victim(pid) path did not load"
kills=$(jnum $f oom_kills)
[ "$kills" = 1 ] || fail "mark_victim(pid): oom_kills $kills, expected 1 (memory.events oom_kill $kernel_kills)"
grep -q '"attribution":"signal"' $f || fail "mark_victim(pid): the victim was not found through its SIGKILL"
pass "mark_victim(pid) path: 1 OOM kill, tied to the cgroup through the OOM killer's SIGKILL"

# Disk on 6.1 (no block_io_start): O_DIRECT to a loop device backed by a file in guest RAM,
# once per scheduler, since attribution differs: at block_rq_issue without one, at
# block_rq_insert with mq-deadline.
modprobe loop 2>/dev/null || :
[ -e /dev/loop-control ] || fail "no loop device support in the guest (modprobe loop)"
truncate -s 32M disk.img # burn-dio reads back to the end of the device
dev=$(losetup -f --show disk.img) || fail "losetup failed"
name=${dev##*/}
for sched in none mq-deadline; do
	if ! echo "$sched" >"/sys/block/$name/queue/scheduler" 2>/dev/null; then
		echo "note: $name cannot use scheduler $sched ($(cat "/sys/block/$name/queue/scheduler"))"
		continue
	fi
	cg=$CG/bpf-disk-$sched
	mkdir "$cg"
	run_rc rc "$PROBE_DUMP" "$cg" -- "$BUILD_DIR/tests/bpf/burn-dio" "$dev" 32 >"disk-$sched.json" 2>"disk-$sched.err"
	cat "disk-$sched.err"
	grep '^burn-dio' "disk-$sched.json" || :
	[ "$rc" = 0 ] || fail "probe-dump exited $rc"
	rmdir "$cg"
	f=disk-$sched.json
	want=$((32 * 1024 * 1024))
	rb=$(jnum $f read_bytes)
	wb=$(jnum $f write_bytes)
	rops=$(jnum $f read_ops)
	wops=$(jnum $f write_ops)
	echo "$sched: read $rb bytes in $rops ops, write $wb bytes in $wops ops (want $want each)"
	in_range "$rb" $((want * 95 / 100)) $((want * 105 / 100)) || fail "$sched: read bytes $rb not within 5% of $want"
	in_range "$wb" $((want * 95 / 100)) $((want * 105 / 100)) || fail "$sched: write bytes $wb not within 5% of $want"
	[ "$rops" -gt 0 ] && [ "$wops" -gt 0 ] || fail "$sched: read ops $rops, write ops $wops"
	pass "$(uname -r), loop device, scheduler $sched: O_DIRECT bytes within 5% each way"
done
losetup -d "$dev"

# CPU on 6.1 (no bpf_rdonly_cast: the portable build of the cpu probe): two burners per vCPU
# for 1 s of CPU each; the probe's waits must be the scheduler's own (schedstat, as in
# tests/bpf/test-runq.sh: both read while burn is stopped, over the same window whatever the
# load) and every queue start must have ended as a wait.
cg=$CG/bpf-cpu
mkdir "$cg"
threads=$((2 * $(nproc)))
run_rc rc env BURN_STOP=1 "$PROBE_DUMP" --snapshot-at-stop "$cg" -- "$VMHELPERS/burn" "$threads" 1c >cpu.json 2>cpu.err
cat cpu.err
[ "$rc" = 0 ] || fail "probe-dump exited $rc"
rmdir "$cg"
grep -q '"cpu":"[^"]*portable' cpu.json || fail "the cpu probe did not load as the portable build: $(grep -o '"detail":{[^}]*}' cpu.json)"
waits=$(jnum cpu.json runq_count)
wait_ns=$(jnum cpu.json runq_wait_ns)
starts=$(($(jnum cpu.json wakeups) + $(jnum cpu.json runq_preemptions)))
k_delay=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["schedstat"]["run_delay_ns"])' cpu.json)
k_count=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["schedstat"]["pcount"])' cpu.json)
echo "cpu: $waits waits, $wait_ns ns (scheduler: $k_count waits, $k_delay ns); $starts queue starts; on-CPU $(jnum cpu.json oncpu_ns) ns"
[ "$waits" -gt 0 ] && [ "$waits" = "$starts" ] || fail "cpu: $waits waits for $starts queue starts"
[ "$waits" = "$k_count" ] || fail "cpu: $waits waits counted, the scheduler counted $k_count"
[ -n "$k_delay" ] && in_range "$wait_ns" $((k_delay * 99 / 100)) $((k_delay * 101 / 100)) ||
	fail "cpu: wait $wait_ns ns not within 1% of the scheduler's run_delay $k_delay ns"
pass "$(uname -r), portable cpu probe: $waits run-queue waits = queue starts, wait within 1% of run_delay"
