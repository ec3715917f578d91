# SPDX-License-Identifier: Apache-2.0
# 00-smoke: the VM harness itself -- root, a pure cgroup v2 hierarchy with the cpu,
# memory, io and pids controllers, cpu.max really throttles, and CASE_OUT (the out
# share) is writable. Needs nothing from the build.
# vm-timeout: 120
set -eu

fail() {
	echo "FAIL: $*"
	exit 1
}
uptime_us() { awk '{ printf "%d\n", $1 * 1000000 }' /proc/uptime; }

CG=/sys/fs/cgroup
cg=$CG/vm-smoke
busy=

cleanup() {
	if [ -n "$busy" ]; then
		kill "$busy" 2>/dev/null || true
		wait "$busy" 2>/dev/null || true
	fi
	rmdir "$cg" 2>/dev/null || true
}
trap cleanup EXIT

uid=$(id -u)
[ "$uid" = 0 ] || fail "not running as root in the guest (uid $uid)"
echo "root: ok"

fstype=$(stat -f -c %T $CG)
[ "$fstype" = cgroup2fs ] || fail "$CG is $fstype, not cgroup2fs"
echo "$CG: cgroup2fs ($(grep " $CG " /proc/mounts | cut -d' ' -f4))"

controllers=$(cat $CG/cgroup.controllers)
echo "cgroup.controllers: $controllers"
for c in cpu memory io pids; do
	case " $controllers " in
	*" $c "*) ;;
	*) fail "controller $c missing from $CG/cgroup.controllers ($controllers)" ;;
	esac
done

echo "+cpu +memory +io +pids" >$CG/cgroup.subtree_control ||
	fail "cannot enable +cpu +memory +io +pids in $CG/cgroup.subtree_control"
echo "root cgroup.subtree_control: $(cat $CG/cgroup.subtree_control)"
mkdir "$cg" || fail "cannot create $cg"
for f in cpu.max memory.max io.max pids.max; do
	[ -e "$cg/$f" ] || fail "$cg/$f missing"
done
echo "50000 100000" >"$cg/cpu.max" || fail "cannot write $cg/cpu.max"
[ "$(cat "$cg/cpu.max")" = "50000 100000" ] || fail "cpu.max reads back '$(cat "$cg/cpu.max")'"

# A busy loop that joins the cgroup before it starts spinning.
t0=$(uptime_us)
sh -c 'echo $$ >"$1/cgroup.procs" && exec sh -c "while :; do :; done"' sh "$cg" &
busy=$!
sleep 2
grep -qx "$busy" "$cg/cgroup.procs" || fail "the busy loop (pid $busy) is not in $cg"
kill "$busy"
wait "$busy" 2>/dev/null || true
busy=
t1=$(uptime_us)

cat "$cg/cpu.stat"
stat_of() { awk -v k="$1" '$1 == k { print $2 }' "$cg/cpu.stat"; }
nr_throttled=$(stat_of nr_throttled)
throttled_usec=$(stat_of throttled_usec)
usage_usec=$(stat_of usage_usec)
wall_usec=$((t1 - t0))
echo "busy loop: usage ${usage_usec}us of ${wall_usec}us wall ($((usage_usec * 100 / wall_usec))%)"
[ "${nr_throttled:-0}" -gt 0 ] || fail "cpu.max 50000 100000 did not throttle: nr_throttled=${nr_throttled:-?}"
[ "${throttled_usec:-0}" -gt 0 ] || fail "throttled_usec=${throttled_usec:-?}"
# 50% quota: allow generous slack for TCG timing, but a clearly unthrottled loop fails.
[ "$usage_usec" -lt $((wall_usec * 80 / 100)) ] ||
	fail "the busy loop used ${usage_usec}us of ${wall_usec}us, more than the 50% cpu.max allows"
rmdir "$cg" || fail "cannot remove $cg"

[ -n "${CASE_OUT:-}" ] || fail "CASE_OUT is not set"
echo "smoke $$" >"$CASE_OUT/smoke-marker" || fail "cannot write to CASE_OUT=$CASE_OUT"
sync
[ "$(cat "$CASE_OUT/smoke-marker")" = "smoke $$" ] || fail "CASE_OUT=$CASE_OUT does not read back"
rm "$CASE_OUT/smoke-marker"
echo "out share $CASE_OUT: writable ($(findmnt -n -o FSTYPE,OPTIONS -T "$CASE_OUT" 2>/dev/null | tr -s ' ' || echo '?'))"
echo "smoke: ok"
