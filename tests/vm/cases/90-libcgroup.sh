# SPDX-License-Identifier: Apache-2.0
# 90-libcgroup: the facts docs/libcgroup.md states about libcgroup 2.0.x on cgroup v2,
# checked through its API (helpers/libcgroup-eval.c) and compared with what the kernel
# answers to the same operation done directly. Each "fact Fn" line matches a claim of the
# doc; when one fails, the doc is stale: read the output above it and update both.
# The evidence printed here (API results, strace excerpts, costs) is what the doc quotes.
# vm-timeout: 900
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

EVAL=$VMHELPERS/libcgroup-eval
[ -x "$EVAL" ] || fail "$EVAL is missing (tests/vm/helpers/meson.build builds it)"
version=$(dpkg-query -W -f='${Version}' libcgroup2 2>/dev/null || echo unknown)
echo "libcgroup2 package: $version; kernel $(uname -r)"
case $version in
2.0.*) ;;
*) fail "docs/libcgroup.md describes libcgroup 2.0.x, this is $version: re-evaluate, then update the doc and this case" ;;
esac
command -v setpriv >/dev/null || { echo "setpriv (util-linux) is missing"; exit 77; }
command -v unshare >/dev/null || { echo "unshare (util-linux) is missing"; exit 77; }
STRACE=$(command -v strace || true)
[ -n "$STRACE" ] || echo "NOTE: strace is not installed (apt-get install strace): facts F3b-F3f, F4 and F13b are not checked"
NOBODY="setpriv --reuid 65534 --regid 65534 --clear-groups"

# lcg ARGS...: run libcgroup-eval, keep and show its output; it must close what it opened
lcg() {
	run_rc _rc "$EVAL" "$@" >out.txt 2>&1
	echo "\$ libcgroup-eval $*"
	sed 's/^/    /' out.txt
	[ "$_rc" = 0 ] || fail "libcgroup-eval $* exited $_rc"
	grep -qx 'fds: none' out.txt || fail "F17: libcgroup left a file descriptor open: $(grep '^fds:' out.txt)"
}
# as_nobody ARGS...: lcg as uid/gid 65534
as_nobody() {
	run_rc _rc $NOBODY "$EVAL" "$@" >out.txt 2>&1
	echo "\$ (uid 65534) libcgroup-eval $*"
	sed 's/^/    /' out.txt
	[ "$_rc" = 0 ] || fail "libcgroup-eval $* exited $_rc as uid 65534"
}
# has TEXT FACT: out.txt contains TEXT
has() {
	grep -qF -- "$1" out.txt || fail "$2: expected '$1' in the output above"
}
# strace_lcg FILE ARGS...: lcg under strace (openat, write, mkdir, rmdir, execve) into FILE
strace_lcg() {
	_st=$1
	shift
	"$STRACE" -f -o "$_st" -e trace=openat,write,mkdir,mkdirat,rmdir,execve "$EVAL" "$@" >out.txt 2>&1 ||
		fail "strace libcgroup-eval $* failed"
	echo "\$ strace libcgroup-eval $*"
	sed 's/^/    /' out.txt
	grep -qx 'fds: none' out.txt || fail "F17: libcgroup left a file descriptor open: $(grep '^fds:' out.txt)"
}
count() { # PATTERN FILE
	grep -c -- "$1" "$2" || true
}

cleanup() {
	for p in $(jobs -p); do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

echo
echo "== (a) creating a cgroup and writing values"
[ -z "$(cat $CG/cgroup.subtree_control)" ] || fail "the harness should start with an empty root subtree_control"
lcg create lcg/leaf cpu.max="200000 100000"
has 'create: ECGOTHER last_errno=ENOENT text="No such file or directory"' F1
[ -z "$(cat $CG/cgroup.subtree_control)" ] || fail "F1: libcgroup wrote the root's subtree_control"
[ -d $CG/lcg ] && [ ! -d $CG/lcg/leaf ] || fail "F1: expected $CG/lcg left behind and no $CG/lcg/leaf"
lcg direct-create lcg leaf cpu.max="200000 100000"
has 'direct-create: OK' F1
[ "$(cat $CG/cgroup.subtree_control)" = cpu ] || fail "F1: the direct way should have enabled cpu in the root"
pass "fact F1: for a nested cgroup, cgroup_create_cgroup never enables the controller in the mount root: ECGOTHER/ENOENT when the root lacks it, the first ancestor left behind; the direct walk from the root succeeds"
rmdir $CG/lcg/leaf $CG/lcg
echo "-cpu" >$CG/cgroup.subtree_control

lcg create lcgtop cpu.max="200000 100000"
has 'create: OK' F2
[ "$(cat $CG/cgroup.subtree_control)" = cpu ] || fail "F2: expected +cpu written to the root"
pass "fact F2: for a cgroup directly below the mount, cgroup_create_cgroup does write the mount root's subtree_control"
rmdir $CG/lcgtop

echo "+cpu +memory +io +pids" >$CG/cgroup.subtree_control
values='cpu.max=200000 100000
cpu.weight=59
memory.max=939524096
memory.low=536870912
memory.high=900000000
pids.max=4096
io.weight=default 250'
set --
while IFS= read -r v; do set -- "$@" "$v"; done <<EOF
$values
EOF
if [ -n "$STRACE" ]; then
	strace_lcg create.st create lcg/leaf "$@"
else
	lcg create lcg/leaf "$@"
fi
has 'create: OK' F3
while IFS='=' read -r file value; do
	want=$value
	[ "$file" = memory.high ] && want=$((value / 4096 * 4096))
	got=$(cat "$CG/lcg/leaf/$file")
	[ "$got" = "$want" ] || fail "F3: $file reads '$got' after cgroup_create_cgroup wrote '$value'"
done <<EOF
$values
EOF
[ "$(cat $CG/lcg/cgroup.subtree_control)" = "cpu io memory pids" ] ||
	fail "F3: lcg/cgroup.subtree_control is '$(cat $CG/lcg/cgroup.subtree_control)'"
lcg get lcg/leaf cpu.max cpu.weight memory.max memory.low memory.high pids.max io.weight
for v in 'cpu.max=200000 100000' cpu.weight=59 memory.max=939524096 memory.low=536870912 \
	memory.high=899997696 pids.max=4096 'io.weight=default 250'; do
	has "value: $v" F3
done
pass "fact F3: with the controllers enabled in the root, cgroup_create_cgroup creates lcg/leaf, enables cpu, io, memory, pids in lcg and writes all 7 values correctly; cgroup_get_cgroup reads them back"

if [ -n "$STRACE" ]; then
	echo "strace of that cgroup_create_cgroup (7 values, 4 controllers), cgroup files and /proc only:"
	grep -E '/sys/fs/cgroup|/proc/|^[0-9]+ +write\(3' create.st | sed 's/^[0-9]* */    /'
	n=$(grep -c 'lcg/cgroup.subtree_control", O_RDWR' create.st || true)
	[ "$n" = 4 ] || fail "F3b: expected 4 opens of lcg/cgroup.subtree_control (one per controller), saw $n"
	for c in +cpu +memory +io +pids; do
		grep -q "write(3, \"$c\", " create.st || fail "F3b: no separate write of $c"
	done
	pass "fact F3b: one write per controller ('+cpu', '+memory', '+io', '+pids') to each ancestor's cgroup.subtree_control"
	mounts=$(count '"/proc/mounts"' create.st)
	[ "$mounts" -gt 7 ] || fail "F3c: expected /proc/mounts read more often than there are values, saw $mounts"
	pass "fact F3c: /proc/mounts is read $mounts times for one cgroup_create_cgroup of 7 values (cgroup_init once, then before every mkdir and every value write)"
	grep -q 'mkdir("/sys", 0775)' create.st || fail "F3d: expected mkdir -p from / with mode 0775"
	pass "fact F3d: every controller repeats a mkdir -p from / (mkdir(\"/sys\", 0775), ...): $(count 'mkdir(' create.st) mkdir calls"
	nofollow=$(count 'O_NOFOLLOW' create.st)
	cloexec_missing=$(grep '/sys/fs/cgroup' create.st | grep openat | grep -vc O_CLOEXEC || true)
	rdwr=$(grep 'lcg/leaf/' create.st | grep -c 'O_RDWR|O_CLOEXEC)' || true)
	[ "$nofollow" = 0 ] && [ "$cloexec_missing" = 0 ] && [ "$rdwr" = 7 ] ||
		fail "F3e: O_NOFOLLOW $nofollow times, opens without O_CLOEXEC $cloexec_missing, value files O_RDWR $rdwr (of 7)"
	pass "fact F3e: absolute paths, no O_NOFOLLOW, every open O_CLOEXEC, value files opened O_RDWR (read permission needed to write)"

	"$STRACE" -f -o get.st -e trace=openat "$EVAL" get lcg/leaf cpu.max >/dev/null 2>&1
	opened=$(grep -c 'lcg/leaf/[a-z]' get.st || true)
	[ "$opened" -gt 20 ] || fail "F3f: cgroup_get_cgroup opened $opened files"
	pass "fact F3f: cgroup_get_cgroup opens $opened files of the cgroup (every file of every mounted controller: memory.stat, *.pressure, ...) to read one value"

	strace_lcg again.st create lcg/leaf2 cpu.max="100000 100000"
	grep -A1 'lcg/cgroup.subtree_control", O_RDWR' again.st | sed 's/^[0-9]* */    /'
	grep -q 'write(3, "+cpu", 4) *= 4' again.st || fail "F4: expected '+cpu' written again"
	pass "fact F4: the ancestors' subtree_control is written unconditionally: '+cpu' again into lcg although it lists cpu"
	rmdir $CG/lcg/leaf2
fi

mkdir $CG/lcg/deleg
chown 65534:65534 $CG/lcg/deleg $CG/lcg/deleg/cgroup.procs $CG/lcg/deleg/cgroup.subtree_control \
	$CG/lcg/deleg/cgroup.threads
as_nobody create lcg/deleg/leaf cpu.max="100000 100000"
has 'create: ECGROUPVALUENOTEXIST last_errno=0 text="Cgroup, requested group parameter does not exist"' F5
[ ! -e $CG/lcg/deleg/leaf ] || fail "F5: lcg/deleg/leaf exists"
as_nobody direct-create lcg/deleg leaf cpu.max="100000 100000"
has 'direct-create: OK' F5
[ "$(cat $CG/lcg/deleg/leaf/cpu.max)" = "100000 100000" ] || fail "F5: the direct way did not write cpu.max"
pass "fact F5: in a subtree delegated to uid 65534 (lcg/deleg), cgroup_create_cgroup fails (it writes the root-owned lcg/cgroup.subtree_control although cpu is enabled there); the direct way, which writes only missing controllers, succeeds"
rmdir $CG/lcg/deleg/leaf $CG/lcg/deleg

sleep 600 &
sleeper=$!
echo $sleeper >$CG/lcg/leaf/cgroup.procs
lcg create lcg/leaf cpu.max="100000 100000"
has 'create: OK' F6
[ "$(cat $CG/lcg/leaf/cpu.max)" = "100000 100000" ] || fail "F6: cpu.max not rewritten"
lcg direct-create lcg leaf cpu.max="100000 100000"
has 'direct-create: EEXIST' F6
pass "fact F6: cgroup_create_cgroup on an existing cgroup with a process in it returns 0 and rewrites its values (mkdir EEXIST is ignored); the direct way sees EEXIST"

echo
echo "== (b) error reporting, against the kernel's errno"
mkdir $CG/lcg/busy
echo $sleeper >$CG/lcg/busy/cgroup.procs
lcg create lcg/busy/leaf memory.max=100000000
has 'create: ECGOTHER last_errno=EBUSY text="Device or resource busy"' F7
lcg direct-create lcg/busy leaf memory.max=100000000
has 'direct-create: EBUSY' F7
lcg attach lcg $sleeper -c memory
has 'attach: ECGOTHER last_errno=EBUSY' F7
pass "fact F7: EBUSY (a controller enabled in a cgroup with processes; a process moved into a cgroup with controllers) comes back as ECGOTHER with last_errno EBUSY, as the kernel said"

as_nobody create lcg/eacces cpu.max="100000 100000"
has 'create: ECGROUPVALUENOTEXIST last_errno=0' F8
as_nobody create newtop/eacces cpu.max="100000 100000"
has 'create: ECGROUPNOTALLOWED last_errno=0' F8
as_nobody set lcg/leaf cpu.max="50000 100000"
has 'set: ECGROUPVALUENOTEXIST last_errno=0' F8
as_nobody direct-create lcg eacces cpu.max="100000 100000"
has 'direct-create: EACCES' F8
pass "fact F8: EACCES becomes ECGROUPVALUENOTEXIST ('requested group parameter does not exist') or ECGROUPNOTALLOWED, with last_errno 0: the errno is lost"

unshare -m sh -c 'mount -o remount,bind,ro /sys/fs/cgroup &&
	"$1" create lcg/ro cpu.max="100000 100000"; "$1" create rotop/ro cpu.max="100000 100000";
	"$1" set lcg/leaf cpu.max="50000 100000"; "$1" direct-create lcg ro cpu.max="100000 100000"' sh "$EVAL" >out.txt 2>&1 ||
	fail "the read-only run failed: $(cat out.txt)"
echo "\$ (cgroupfs remounted read-only) libcgroup-eval create lcg/ro; create rotop/ro; set lcg/leaf; direct-create lcg ro"
sed 's/^/    /' out.txt
[ "$(grep -c 'create: ECGROUPVALUENOTEXIST last_errno=0' out.txt)" = 1 ] || fail "F9: create lcg/ro"
has 'create: ECGROUPNOTALLOWED last_errno=0' F9
has 'set: ECGROUPVALUENOTEXIST last_errno=0' F9
has 'direct-create: EROFS' F9
pass "fact F9: on a read-only cgroupfs (EROFS from the kernel), libcgroup answers ECGROUPVALUENOTEXIST or ECGROUPNOTALLOWED with last_errno 0"

lcg create lcg/nosuch nosuch.max=1
has 'create: ECGROUPSUBSYSNOTMOUNTED' F10
lcg create lcg/rdma rdma.max="mlx4_0 hca_handle=2"
has 'create: ECGOTHER last_errno=ENOENT' F10
pass "fact F10: an unknown controller is ECGROUPSUBSYSNOTMOUNTED; a controller the kernel has but the root does not enable is ECGOTHER/ENOENT, naming neither the controller nor the file"

lcg delete lcg/busy -c memory -f empty-only
has 'delete: OK' F11
[ -d $CG/lcg/busy ] && grep -qx "0::/lcg/busy" /proc/$sleeper/cgroup || fail "F11: lcg/busy should still exist with the process"
lcg delete lcg/busy -c memory
has 'delete: ECGOTHER last_errno=EBUSY' F11
lcg delete lcg/busy -c memory -f ignore-migration
has 'delete: ECGOTHER last_errno=EBUSY' F11
mkdir $CG/lcg/empty
lcg delete lcg/empty -c memory -f empty-only
has 'delete: OK' F11
[ ! -e $CG/lcg/empty ] || fail "F11: lcg/empty not removed"
pass "fact F11: cgroup_delete_cgroup_ext(CGFLAG_DELETE_EMPTY_ONLY) on a populated cgroup returns 0 and leaves it in place (ECGNONEMPTY is dropped); the default (move the tasks to the parent) and IGNORE_MIGRATION give ECGOTHER/EBUSY"

echo
echo "== (c) starting a process in a cgroup, and the init-mode bootstrap"
mkdir -p $CG/lcg/e1/e2
lcg attach lcg/e1/e2 $sleeper -c cpu
has 'attach: ECGROUPNOTMOUNTED last_errno=0 text="Cgroup is not mounted"' F12
grep -qx "0::/lcg/busy" /proc/$sleeper/cgroup || fail "F12: the process moved"
lcg attach lcg/e1/e2 $sleeper
has 'attach: OK' F12
grep -qx "0::/lcg/busy" /proc/$sleeper/cgroup || fail "F12: the process moved"
lcg attach lcg/e1/e2 $sleeper -c cgroup
has 'attach: ECGROUPNOTEXIST' F12
echo $sleeper >$CG/lcg/e1/e2/cgroup.procs || fail "F12: the kernel refused the move"
grep -qx "0::/lcg/e1/e2" /proc/$sleeper/cgroup || fail "F12: the kernel did not move the process"
pass "fact F12: into a cgroup whose parent enables no controller, cgroup_attach_task_pid fails with ECGROUPNOTMOUNTED ('Cgroup is not mounted') for a real controller, ECGROUPNOTEXIST for the 'cgroup' pseudo-controller, and returns 0 without moving anything when given no controller; the kernel takes the same move"

hits=$(cat /usr/include/libcgroup/*.h | grep -ci 'clone' || true)
[ "$hits" = 0 ] || fail "F13: the libcgroup headers mention clone $hits times"
pass "fact F13: libcgroup's API has no way to start a process in a cgroup (no clone3/CLONE_INTO_CGROUP; nothing named clone in its headers)"
if [ -n "$STRACE" ] && command -v cgexec >/dev/null; then
	"$STRACE" -f -o cgexec.st -e trace=openat,write,execve cgexec -g cpu:lcg/leaf /bin/true ||
		fail "F13b: cgexec -g cpu:lcg/leaf /bin/true failed"
	echo "\$ strace cgexec -g cpu:lcg/leaf /bin/true (cgroup files and execve):"
	grep -nE 'cgroup\.|execve' cgexec.st | sed 's/^/    /'
	procs=$(grep -n 'lcg/leaf/cgroup.procs' cgexec.st | head -n1 | cut -d: -f1)
	run=$(grep -n 'execve("/bin/true"' cgexec.st | head -n1 | cut -d: -f1)
	[ -n "$procs" ] && [ -n "$run" ] && [ "$procs" -lt "$run" ] ||
		fail "F13b: expected cgexec to write cgroup.procs before it execs the command"
	pass "fact F13b: cgexec writes its own pid into the cgroup's cgroup.procs, then execs the command: the process starts outside and is moved"
fi

# init mode: a namespace whose root cgroup (pod) holds the process, as in 41-init-mode
echo "+cpu +memory" >$CG/cgroup.subtree_control
for mode in api direct-first; do
	mkdir $CG/pod-$mode
	sh -c 'echo $$ >"$1/cgroup.procs" && exec unshare --cgroup --mount sh -c "umount -l /sys/fs/cgroup && mount -t cgroup2 none /sys/fs/cgroup && exec \"\$0\" bootstrap $2" "$3"' \
		sh "$CG/pod-$mode" "$mode" "$EVAL" >out.txt 2>&1 || fail "bootstrap $mode: $(cat out.txt)"
	echo "\$ (PID in the root of its cgroup namespace) libcgroup-eval bootstrap $mode"
	sed 's/^/    /' out.txt
	cp out.txt bootstrap-$mode.txt
done
cp bootstrap-api.txt out.txt
has 'create-init-no-controller: OK' F14
has 'init-type: (missing)' F14
has 'create-init-cpu: OK' F14
has 'init-type: domain invalid' F14
has 'attach-cpu: ECGOTHER last_errno=0 text="Success"' F14
has 'direct-attach: EOPNOTSUPP' F14
has 'enable-root-controllers: ECGOTHER last_errno=EOPNOTSUPP' F14
has 'create-executor: ECGOTHER last_errno=EOPNOTSUPP' F14
has 'executor-cpu.max: 50000 100000' F14
has 'executor-memory.max: (missing)' F14
pass "fact F14: init mode through the API alone fails: creating 'init' without a controller is a no-op returning 0; with cpu it first writes +cpu into the namespace root that still holds the process (the kernel allows it for the threaded cpu controller), which turns 'init' into 'domain invalid'; every later step fails, and 'executor' is left with cpu.max but no memory.max"
cp bootstrap-direct-first.txt out.txt
has 'attach-no-controller: OK' F15
has 'after-attach-no-controller: 0::/' F15
has 'attach-cpu: ECGROUPNOTMOUNTED' F15
has 'attach-cgroup-pseudo-controller: ECGROUPNOTEXIST' F15
has 'direct-attach: OK' F15
has 'after-direct-attach: 0::/init' F15
has 'enable-root-controllers: OK' F15
has 'root-subtree_control: cpu memory' F15
has 'create-executor: OK' F15
has 'executor-cpu.max: 50000 100000' F15
has 'executor-memory.max: 268435456' F15
pass "fact F15: once 'init' is made and the process moved directly, the API can enable controllers in the namespace root (cgroup_modify_cgroup, 'cgroup' pseudo-controller) and create 'executor' with its values"

mkdir -p "$CASE_TMP/outside"
: >"$CASE_TMP/outside/cpu.max"
lcg set "../../..$CASE_TMP/outside" cpu.max=1
has 'set: OK' F16
[ "$(cat "$CASE_TMP/outside/cpu.max")" = 1 ] || fail "F16: the file outside the cgroup mount was not written"
pass "fact F16: cgroup names are joined to the mount path as strings: '../../..$CASE_TMP/outside' made cgroup_modify_cgroup write a regular file outside cgroupfs (callers must validate names)"

unshare -m sh -c 'mount -t tmpfs none /proc && exec "$1" init' sh "$EVAL" >stdout.txt 2>stderr.txt || true
echo "\$ (no /proc/cgroups) libcgroup-eval init"
sed 's/^/    stdout: /' stdout.txt
sed 's/^/    stderr: /' stderr.txt
grep -q '^Error: cannot open /proc/cgroups' stdout.txt || fail "F18: expected libcgroup's error on stdout"
! grep -q 'cannot open /proc/cgroups' stderr.txt || fail "F18: libcgroup's error went to stderr"
pass "fact F18: libcgroup's default logger prints its errors on stdout (the executor's stdout, in a shim) unless cgroup_set_logger() replaces it"

echo
echo "== (d) cost, interleaved rounds, medians"
lcg init
lcg bench 100 lcg-bench
ratio() { # VARIANT-PREFIX: its ratio to direct + read-back
	awk -v v="bench: $1" 'index($0, v) == 1 { r = $NF; sub(/x$/, "", r); print r }' out.txt
}
create_ratio=$(ratio "libcgroup create + delete")
get_ratio=$(ratio "libcgroup create + cgroup_get_cgroup")
in_range "${create_ratio:-0}" 1.5 1000 && in_range "${get_ratio:-0}" 2 1000 ||
	fail "F19: libcgroup create+delete at ${create_ratio}x and with read-back at ${get_ratio}x the direct path; the doc says clearly slower"
pass "fact F19: libcgroup's create + delete costs ${create_ratio}x the direct path (mkdirat, writes with read-back, rmdir), ${get_ratio}x with cgroup_get_cgroup read-back"

repeated=$(awk '/^bench: cgroup_init alone/ { print $(NF - 2) }' out.txt)
i=0
while [ $i -lt 15 ]; do
	"$EVAL" init | sed -n 's/^init-time-us: //p'
	i=$((i + 1))
done | sort -n >init-times.txt
first=$(sed -n 8p init-times.txt)
echo "cgroup_init in a fresh process (once per launch in a shim), 15 processes: median $first us (min $(head -n1 init-times.txt), max $(tail -n1 init-times.txt)); repeated in one process: median $repeated us"
[ -n "$first" ] && [ -n "$repeated" ] && [ "$first" -gt $((repeated * 2)) ] ||
	fail "F20: the first cgroup_init of a process ($first us) should cost well over the repeated one ($repeated us)"
lib=$(ldd "$EVAL" | awk '/libcgroup\.so/ { print $3 }')
if command -v readelf >/dev/null && [ -n "$lib" ]; then
	size=$(readelf -sW "$lib" | awk '$8 ~ /^cg_mount_table(@|$)/ { print $3; exit }')
	echo "$lib: cg_mount_table is $size bytes"
	[ -n "$size" ] && [ "$(printf '%d' "$size")" -ge 500000 ] ||
		fail "F20: expected cg_mount_table, the table cgroup_init zeroes, to be >= 500000 bytes, got '$size'"
else
	echo "NOTE: readelf (binutils) or $lib missing: the table size of F20 is not checked"
fi
pass "fact F20: the first cgroup_init of a process costs ${first} us against ${repeated} us repeated: it zeroes the static cg_mount_table (${size:-?} bytes)"
# The doc's figures with 500 more mounts take 70 s of this case under TCG (more on a loaded
# host): the suite runs a short instance (it only prints), SPARKSHIM_VM_EVIDENCE=1 the doc's.
if [ "${SPARKSHIM_VM_EVIDENCE:-0}" = 1 ]; then
	mounts=500 rounds=30
else
	mounts=50 rounds=5
fi
unshare -m sh -c 'i=0; while [ $i -lt "$3" ]; do mkdir -p "$2/m/$i" && mount -t tmpfs t "$2/m/$i" || exit 1; i=$((i + 1)); done
	echo "/proc/mounts: $(wc -l </proc/mounts) lines"; "$1" init | grep time; "$1" bench "$4" lcg-bench' sh "$EVAL" "$CASE_TMP" "$mounts" "$rounds" >out.txt 2>&1 ||
	fail "the run with $mounts mounts failed: $(cat out.txt)"
echo "\$ ($mounts more mounts) libcgroup-eval init; libcgroup-eval bench $rounds lcg-bench"
sed 's/^/    /' out.txt

kill $sleeper 2>/dev/null || true
pass "fact F17: every libcgroup-eval run above ended with no descriptor left open (checked in lcg)"
