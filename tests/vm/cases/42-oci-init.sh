# SPDX-License-Identifier: Apache-2.0
# 42-oci-init: `sparkshim run --init` as PID 1 of real OCI containers, with Debian's crun
# and runc: own pid, mount and cgroup namespaces, cgroup2 mounted read-write, containerd's
# default capabilities (no CAP_SYS_ADMIN), below /kubepods/burstable/pod-x/c. For each
# runtime: the plan is enforced (2 busy threads held to the 600m limit), `kill TERM` to
# PID 1 reaches the executor and its status is the container's, nothing is left after the
# delete; a read-only cgroup mount and a missing cgroup namespace are refused (123) with
# the right reason and without touching the guest's hierarchy.
# vm-timeout: 360
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

for rt in crun runc python3; do
	command -v "$rt" >/dev/null || { echo "$rt is missing (apt-get install crun runc python3)"; exit 77; }
done
BURN=$VMHELPERS/burn
[ -x "$BURN" ] || fail "$BURN is missing (meson compile)"

POD=kubepods/burstable/pod-x
CGPATH=/$POD/c       # linux.cgroupsPath
CCG=$CG$CGPATH       # the container's cgroup, as the guest sees it
QUOTA=60000          # 300m x overcommit 2 (the built-in policy) = 600m of a 100 ms period
failures=0

flunk() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# The rootfs: the guest's read-only system (9p), with its submounts (/etc/sparkshim's empty
# tmpfs from guest-main.sh: the built-in policy). Private to this case's mount namespace.
mkdir rootfs
mount --rbind / rootfs

# config BUNDLE CGROUPNS(yes|no) CGROUPMOUNT(rw|ro) ARGS...: an OCI config.json as
# containerd writes one for an unprivileged pod with a writable (or read-only) cgroup.
config() {
	mkdir -p "$1"
	python3 - "$@" <<'EOF'
import json, os, sys
bundle, cgroupns, cgmount, root, cgpath = sys.argv[1:6]
caps = ["CAP_" + c for c in ("CHOWN DAC_OVERRIDE FSETID FOWNER MKNOD NET_RAW SETGID SETUID "
                             "SETFCAP SETPCAP NET_BIND_SERVICE SYS_CHROOT KILL AUDIT_WRITE").split()]
namespaces = ["pid", "network", "ipc", "uts", "mount"] + (["cgroup"] if cgroupns == "yes" else [])
def mount(dest, type, options, source=None):
    return {"destination": dest, "type": type, "source": source or type, "options": options}
config = {
    "ociVersion": "1.0.2",
    "process": {
        "terminal": False,
        "user": {"uid": 0, "gid": 0},
        "args": sys.argv[6:],
        "env": ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"],
        "cwd": "/",
        "capabilities": {k: caps for k in ("bounding", "effective", "permitted")},
        "noNewPrivileges": True,
    },
    "root": {"path": root, "readonly": True},
    "hostname": "pod-x",
    "mounts": [
        mount("/proc", "proc", ["nosuid", "noexec", "nodev"]),
        mount("/dev", "tmpfs", ["nosuid", "strictatime", "mode=755", "size=65536k"]),
        mount("/dev/pts", "devpts", ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]),
        mount("/dev/shm", "tmpfs", ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"], "shm"),
        mount("/dev/mqueue", "mqueue", ["nosuid", "noexec", "nodev"]),
        mount("/sys", "sysfs", ["nosuid", "noexec", "nodev", "ro"]),
        mount("/sys/fs/cgroup", "cgroup", ["nosuid", "noexec", "nodev", "relatime", cgmount]),
        mount("/tmp", "tmpfs", ["nosuid", "nodev", "mode=1777"]),
    ] + [
        # the build and source trees (sparkshim, the burner) may be below /tmp (a clone there)
        mount(d, "bind", ["rbind", "ro"], d) for d in dict.fromkeys(
            os.path.realpath(os.environ[v]) for v in ("BUILD_DIR", "SRC_DIR"))
    ],
    "linux": {
        "cgroupsPath": cgpath,
        "resources": {"devices": [{"allow": False, "access": "rwm"}]},
        "namespaces": [{"type": t} for t in namespaces],
        "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
        "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
    },
}
with open(bundle + "/config.json", "w") as f:
    json.dump(config, f, indent=1)
EOF
}

# bundle NAME CGROUPNS CGROUPMOUNT PAYLOAD-SCRIPT: sparkshim as PID 1, running the payload
bundle() {
	config "$1" "$2" "$3" "$PWD/rootfs" "$CGPATH" "$SPARKSHIM" run --init -vv --millicores 300 \
		--cores 2 --memory 64m -- sh -c "$4" payload "$BURN"
}

# The executor: report its cgroup, burn 2 threads; on TERM stop the burner and exit 7.
bundle enforce yes rw 'cat /proc/self/cgroup; trap "kill \$b; wait \$b; exit 7" TERM; "$1" 2 600 & b=$!; wait $b; exit 99'
bundle rocg yes ro 'echo payload ran'
bundle nocgns no rw 'echo payload ran; cat /proc/self/cgroup; grep cgroup /proc/self/mountinfo'

# start RT ID BUNDLE: `RT run` in the background, its output in ID.out/ID.err; $run_pid
start() {
	keep=
	[ "$1" = runc ] && keep=--keep # crun 1.8.1's run has no --keep: it deletes on exit
	"$1" --root "$PWD/state-$1" run $keep --bundle "$3" "$2" >"$2.out" 2>"$2.err" </dev/null &
	run_pid=$!
}

# finish SECONDS: wait for `run`; its status (the container's) in $status, 999 on timeout
finish() {
	n=0
	while kill -0 "$run_pid" 2>/dev/null && [ $n -lt $(($1 * 10)) ]; do
		sleep 0.1
		n=$((n + 1))
	done
	if kill -0 "$run_pid" 2>/dev/null; then
		status=999
		return
	fi
	run_rc status wait "$run_pid"
}

# delete RT ID: `RT delete -f`; crun's run removed the container already
delete() {
	"$1" --root "$PWD/state-$1" delete -f "$2" >/dev/null 2>&1 || true
}

# The guest's hierarchy, the container's cgroup excepted: directories, the root's
# subtree_control and its user-space processes (kernel threads come and go).
snapshot() {
	find "$CG" -type d | grep -v "^$CCG\(/\|\$\)" | sort
	echo "subtree_control: $(cat "$CG/cgroup.subtree_control")"
	for p in $(cat "$CG/cgroup.procs"); do
		[ -s "/proc/$p/cmdline" ] && echo "process $p: $(tr '\0' ' ' <"/proc/$p/cmdline")"
	done
	true
}

# no_leftovers RT ID: nothing of the container remains
no_leftovers() {
	[ ! -e "$CCG" ] || flunk "$1: $CCG is left after the delete: $(find "$CCG" -type d | tr '\n' ' ')"
	left=$(grep -l "^0::$CGPATH\(/\|\$\)" /proc/[0-9]*/cgroup 2>/dev/null || true)
	[ -z "$left" ] || flunk "$1: processes left in $CGPATH: $left"
	! "$1" --root "$PWD/state-$1" list 2>/dev/null | grep -q "^$2 " || flunk "$1: container $2 still listed"
}

cpu_stat() { # KEY
	awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$CCG/executor/cpu.stat" 2>/dev/null || echo 0
}

executor_procs() {
	cat "$CCG/executor/cgroup.procs" 2>/dev/null | wc -l
}

cleanup() {
	for rt in crun runc; do
		for id in enforce rocg nocgns; do delete "$rt" "$rt-$id"; done
	done
	for d in "$CCG" "$CG/$POD" "$CG/kubepods/burstable" "$CG/kubepods"; do rmdir "$d" 2>/dev/null || true; done
	umount -l rootfs 2>/dev/null || true
}
trap cleanup EXIT

for rt in crun runc; do
	t0=$(uptime_us)
	id=$rt-enforce
	echo "--- $rt $($rt --version | head -n1): enforcement, TERM, cleanup"
	start "$rt" "$id" enforce
	n=0
	while [ "$(executor_procs)" -lt 2 ] && [ $n -lt 1200 ]; do
		kill -0 "$run_pid" 2>/dev/null || break
		sleep 0.1
		n=$((n + 1))
	done
	if [ "$(executor_procs)" -lt 2 ]; then
		flunk "$rt: the executor never started in $CCG/executor"
		"$rt" --root "$PWD/state-$rt" kill "$id" KILL 2>/dev/null || true
		finish 30
		cat "$id.err" "$id.out"
		delete "$rt" "$id"
		continue
	fi
	echo "started after $((($(uptime_us) - t0) / 1000)) ms"
	init_pid=$(cat "$CCG/init/cgroup.procs" 2>/dev/null || true)
	nspid=$(awk '$1 == "NSpid:" { print $NF }' "/proc/$init_pid/status" 2>/dev/null || true)
	[ "$nspid" = 1 ] && tr '\0' ' ' <"/proc/$init_pid/cmdline" | grep -q sparkshim ||
		flunk "$rt: $CCG/init holds '$init_pid' (container pid '$nspid'), not sparkshim as PID 1"
	[ "$(cat "$CCG/executor/cpu.max")" = "$QUOTA 100000" ] ||
		flunk "$rt: executor cpu.max is '$(cat "$CCG/executor/cpu.max")', expected '$QUOTA 100000'"
	[ "$(cat "$CCG/executor/memory.max")" = $(((64 + 384) * 1048576)) ] ||
		flunk "$rt: executor memory.max is '$(cat "$CCG/executor/memory.max")'"
	grep -qw cpu "$CCG/cgroup.subtree_control" ||
		flunk "$rt: cpu not enabled in the container's cgroup ($(cat "$CCG/cgroup.subtree_control"))"

	# The limit over a window: usage within the quota of the periods counted, and the
	# threads throttled when they reach it. Slack: 10%, plus 4 periods' quota for the window's edges and for
	# the overrun the burner accrues while a vCPU stalls on the host (repaid in the
	# following periods). Both hold however slow the guest runs: load only lowers usage.
	sleep 1
	u0=$(cpu_stat usage_usec) p0=$(cpu_stat nr_periods) th0=$(cpu_stat nr_throttled) w0=$(uptime_us)
	sleep 8
	u1=$(cpu_stat usage_usec) p1=$(cpu_stat nr_periods) th1=$(cpu_stat nr_throttled) w1=$(uptime_us)
	du=$((u1 - u0)) dp=$((p1 - p0)) dth=$((th1 - th0)) dw=$((w1 - w0))
	echo "$rt: usage $du us over $dw us ($(awk -v u=$du -v w=$dw 'BEGIN { printf "%.3f", u / w }') x wall)," \
		"$dp periods, $dth throttled; usage / (periods x quota) =" \
		"$(awk -v u=$du -v a=$((dp * QUOTA)) 'BEGIN { printf "%.3f", a ? u / a : 0 }')"
	[ "$dp" -gt 0 ] || flunk "$rt: no cpu periods in the window"
	# throttling shows once the threads reach the quota; on a host loaded enough that the
	# guest's vCPUs get less than 600m, nothing is throttled, and the bound above is the check
	if [ $((du * 10)) -ge $((dp * QUOTA * 9)) ]; then
		[ "$dth" -gt 0 ] || flunk "$rt: 2 busy threads at the quota were never throttled at 600m"
	else
		echo "$rt: the guest's vCPUs got less than the quota (a loaded host): throttling not looked at"
	fi
	[ "$du" -le $(((dp + 4) * QUOTA * 11 / 10)) ] ||
		flunk "$rt: usage $du us above the $((dp * QUOTA)) us allowed in $dp periods"

	# Where `RT exec` lands (it enters the guest's initramfs mount namespace here, see
	# TESTBED.md, but its cgroup is the container's): informational
	run_rc rc timeout 60 "$rt" --root "$PWD/state-$rt" exec "$id" sh -c 'cat /proc/self/cgroup' >exec.out 2>&1
	echo "note: $rt exec: status $rc, $(tr '\n' ' ' <exec.out)"

	# TERM to PID 1: forwarded, the executor's status passed through
	"$rt" --root "$PWD/state-$rt" kill "$id" TERM || flunk "$rt kill $id TERM failed"
	finish 60
	cat "$id.err" "$id.out"
	[ "$status" = 7 ] || flunk "$rt: the container exited $status after TERM, expected the executor's 7"
	grep -qx '0::/executor' "$id.out" || flunk "$rt: the executor was not in /executor of the container"
	grep -q "cannot mark /sys/fs/cgroup/executor" "$id.err" &&
		echo "note: $rt: the owner mark needs CAP_SYS_ADMIN: $(grep -o 'cannot mark.*' "$id.err")"
	if [ "$rt" = runc ]; then
		# kept (--keep) until the delete: sparkshim removed its executor leaf itself
		[ ! -e "$CCG/executor" ] || flunk "$rt: $CCG/executor left by sparkshim"
		[ -d "$CCG/init" ] || flunk "$rt: no $CCG/init before the delete"
	fi
	delete "$rt" "$id"
	no_leftovers "$rt" "$id"
	[ ! -e "$CG/init" ] && [ ! -e "$CG/executor" ] || flunk "$rt: /init or /executor made in the guest's root"

	# cgroup2 read-only inside the container: refused, for that reason
	echo "--- $rt: cgroup2 mounted read-only"
	id=$rt-rocg
	start "$rt" "$id" rocg
	finish 120
	cat "$id.err" "$id.out"
	[ "$status" = 123 ] || flunk "$rt: read-only cgroup2: the container exited $status, expected 123"
	grep -q 'error:.*Read-only file system' "$id.err" || flunk "$rt: read-only cgroup2: no error naming it"
	! grep -q 'payload ran' "$id.out" || flunk "$rt: read-only cgroup2: the executor ran"
	if [ "$rt" = runc ]; then
		[ -z "$(children_of "$CCG")" ] || flunk "$rt: read-only cgroup2: made $(children_of "$CCG" | tr '\n' ' ')"
	fi
	delete "$rt" "$id"
	no_leftovers "$rt" "$id"

	# no cgroup namespace: refused before any write, the guest's hierarchy unchanged
	echo "--- $rt: no cgroup namespace"
	id=$rt-nocgns
	snapshot >"$rt-before.txt"
	start "$rt" "$id" nocgns
	finish 120
	cat "$id.err" "$id.out"
	[ "$status" = 123 ] || flunk "$rt: no cgroup namespace: the container exited $status, expected 123"
	grep -qi 'error:.*cgroup namespace' "$id.err" || flunk "$rt: no cgroup namespace: no error naming it"
	! grep -q 'payload ran' "$id.out" || flunk "$rt: no cgroup namespace: the executor ran"
	if [ "$rt" = runc ]; then
		[ -z "$(children_of "$CCG")" ] || flunk "$rt: no cgroup namespace: made $(children_of "$CCG" | tr '\n' ' ')"
	fi
	delete "$rt" "$id"
	snapshot >"$rt-after.txt"
	diff "$rt-before.txt" "$rt-after.txt" || flunk "$rt: no cgroup namespace: the guest's hierarchy changed"
	no_leftovers "$rt" "$id"
	for d in "$CG/executor" "$CG/init"; do rmdir "$d" 2>/dev/null || true; done

	echo "$rt: took $((($(uptime_us) - t0) / 1000000)) s"
done

[ "$failures" = 0 ] || fail "$failures check(s) failed"
pass "crun and runc: enforced, TERM passed through, cleaned up; read-only cgroup2 and no cgroup namespace refused"
