# SPDX-License-Identifier: Apache-2.0
# 86-agent-cgroup: the JVMTI agent's cgroup v2 pressure source, on a real memory controller
# (the host has none). A small JVM (tests/vm/payloads/agent/AnonGrow.java, no Spark: Spark
# is far too slow under TCG) runs in a fresh leaf with the agent given cgroup=<leaf> and
# threshold=256m, next to a perl process of the same leaf that holds 64+ MiB, and grows its
# anonymous memory by 256 MiB of direct ByteBuffers (malloc'd, zeroed, outside the Java
# heap), holding them while the case reads the leaf's memory.stat itself and then for a
# second more. The agent's statistics must show the source "cgroup" with the leaf's path,
# exactly one crossing, still under pressure at exit, and a peak anon that is the leaf's:
# close to the case's own reading of memory.stat anon, at most memory.peak, and above the
# JVM's own RssAnon by what the perl process holds (which /proc/self/status would miss).
# The class is compiled on the host at build time (tests/agent/pressure/meson.build; in the
# guest, ~15 s, when only `meson test` ran); the JDK comes from the host's / (read-only 9p).
# Skips (77) only when the build has no agent.
# vm-timeout: 240
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

AGENT=$BUILD_DIR/jvmagent/libsparkshim-agent.so
PAYLOAD=$BUILD_DIR/tests/agent/pressure
MB=256
THRESHOLD_MB=256
leaf=$CG/agent-anon
stats=$CASE_TMP/agent.jsonl

# anongrow.env is written when configuring finds the JDK the agent is built with
if [ ! -r "$PAYLOAD/anongrow.env" ]; then
	echo "the build has no JVMTI agent: no JDK headers were found when configuring $BUILD_DIR"
	exit 77
fi
[ -e "$AGENT" ] || fail "$AGENT is not built (ninja -C $BUILD_DIR)"
. "$PAYLOAD/anongrow.env" # JAVA=<the JDK the agent was built against>/bin/java
[ -x "$JAVA" ] || fail "$JAVA (from $PAYLOAD/anongrow.env) is not executable in the guest"
CLASSES=$PAYLOAD
if [ ! -r "$PAYLOAD/AnonGrow.class" ]; then
	# built by `ninja`, not by `meson test --suite vm` alone: compile here (~15 s under TCG)
	echo "note: $PAYLOAD/AnonGrow.class is not built; compiling it in the guest"
	CLASSES=$CASE_TMP/classes
	"${JAVA%/java}/javac" -J-XX:+UseSerialGC -J-XX:-UsePerfData -d "$CLASSES" \
		"$SRC_DIR/tests/vm/payloads/agent/AnonGrow.java" || fail "javac of AnonGrow.java failed"
fi

# anon BYTES of a memory.stat
stat_anon() {
	awk '$1 == "anon" { print $2 }' "$1/memory.stat"
}
# jfield KEY: a number or string member of the stats' "pressure" record
jfield() {
	grep '"record":"pressure"' "$stats" | sed -n "s/.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p"
}

echo +memory >"$CG/cgroup.subtree_control"
mkdir "$leaf"
[ -r "$leaf/memory.stat" ] || fail "$leaf has no memory.stat after +memory"

# The neighbour: RssAnon of at least 64 MiB (perl keeps the string and its temporary).
sh -c 'echo $$ >"$1/cgroup.procs" && exec perl -e '"'"'
	my $s = "x" x (64 << 20);
	open(my $f, ">", $ARGV[0]) or die "$ARGV[0]: $!";
	close($f);
	select(undef, undef, undef, 0.1) until -e $ARGV[1];'"'"' "$2" "$3"' sh "$leaf" \
	"$CASE_TMP/hog-ready" "$CASE_TMP/release" &
hog=$!
n=0
until [ -e "$CASE_TMP/hog-ready" ]; do
	kill -0 "$hog" 2>/dev/null || fail "the perl neighbour exited early"
	n=$((n + 1))
	[ $n -lt 300 ] || fail "the perl neighbour did not allocate within 30 s"
	sleep 0.1
done
hog_rss=$(awk '$1 == "RssAnon:" { print $2 * 1024 }' "/proc/$hog/status")
[ "$hog_rss" -ge $((64 << 20)) ] || fail "the perl neighbour holds $hog_rss bytes, expected 64 MiB or more"

# The fastest way to run a few lines of Java under TCG: the interpreter only (no JIT
# threads compiling), the serial GC and a small heap (the buffers are off the heap).
t0=$(uptime_us)
sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$leaf" \
	"$JAVA" -Xint -XX:+UseSerialGC -Xmx32m -XX:MaxDirectMemorySize=512m -XX:-UsePerfData \
	"-agentpath:$AGENT=cgroup=$leaf,threshold=${THRESHOLD_MB}m,stats=$stats,stats-interval=0,log=info" \
	-cp "$CLASSES" AnonGrow "$MB" 16 "$CASE_TMP/ready" "$CASE_TMP/release" \
	>"$CASE_TMP/java.out" 2>"$CASE_TMP/java.err" &
java=$!
n=0
while [ ! -e "$CASE_TMP/ready" ]; do
	if ! kill -0 "$java" 2>/dev/null; then
		cat "$CASE_TMP/java.out" "$CASE_TMP/java.err"
		fail "the JVM exited before it held $MB MiB"
	fi
	n=$((n + 1))
	[ $n -lt 1200 ] || fail "the JVM did not reach $MB MiB within 120 s"
	sleep 0.1
done
t1=$(uptime_us)
grep -qx "$java" "$leaf/cgroup.procs" || fail "the JVM (pid $java) is not in $leaf"
held_anon=$(stat_anon "$leaf")
# the agent samples every 100 ms; give it a second of guest time at the top
sleep 1
touch "$CASE_TMP/release"
run_rc rc wait "$java"
wait "$hog" || :
t2=$(uptime_us)
cat "$CASE_TMP/java.out"
grep '^sparkshim-agent' "$CASE_TMP/java.err" || :
[ "$rc" = 0 ] || { cat "$CASE_TMP/java.err"; fail "the JVM exited with status $rc"; }
leaf_peak=$(cat "$leaf/memory.peak" 2>/dev/null || echo 0)
rmdir "$leaf"
cp "$stats" "$CASE_OUT/" 2>/dev/null || :
echo "JVM start to $MB MiB held: $(((t1 - t0) / 1000)) ms; whole run $(((t2 - t0) / 1000)) ms (guest, TCG)"
grep '"record":"pressure"' "$stats" || fail "no pressure record in $stats: $(cat "$stats")"

source=$(jfield source)
path=$(jfield path)
threshold=$(jfield threshold_bytes)
crossings=$(jfield crossings)
under=$(jfield under_pressure)
errors=$(jfield read_errors)
peak=$(jfield peak_anon_bytes)
rss=$(sed -n 's/.*rss_anon=\([0-9]*\).*/\1/p' "$CASE_TMP/java.out")
held=$((MB << 20))
echo "agent: source $source ($path), threshold $threshold, crossings $crossings, under_pressure $under, peak_anon $((peak >> 20)) MiB;" \
	"leaf memory.stat anon at the top $((held_anon >> 20)) MiB, memory.peak $((leaf_peak >> 20)) MiB; RssAnon of the JVM $((rss >> 20)) MiB, of the perl neighbour $((hog_rss >> 20)) MiB"

[ "$source" = cgroup ] || fail "pressure source '$source', expected cgroup (memory.stat of $leaf)"
[ "$path" = "$leaf" ] || fail "pressure path '$path', expected $leaf"
[ "$threshold" = $((THRESHOLD_MB << 20)) ] || fail "threshold_bytes $threshold, expected $((THRESHOLD_MB << 20))"
[ "$crossings" = 1 ] || fail "crossings $crossings, expected 1 (anon grew once past ${THRESHOLD_MB} MiB)"
[ "$under" = true ] || fail "under_pressure $under at exit, expected true (the buffers were still held)"
[ "$errors" = 0 ] || fail "read_errors $errors"
[ "$peak" -ge $((rss + hog_rss * 9 / 10)) ] ||
	fail "peak_anon $peak below the JVM's RssAnon $rss plus 90% of the neighbour's $hog_rss: not the leaf's anon"
[ "$peak" -le $((held + hog_rss + (192 << 20))) ] ||
	fail "peak_anon $peak: more than 192 MiB above the $held + $hog_rss bytes held"
[ "$leaf_peak" = 0 ] || [ "$peak" -le "$leaf_peak" ] || fail "peak_anon $peak above the leaf's memory.peak $leaf_peak"
in_range "$peak" "$((held_anon * 95 / 100))" "$((held_anon * 110 / 100))" ||
	fail "peak_anon $peak not within -5%/+10% of memory.stat anon $held_anon read at the top"
pass "the agent read memory.stat of the leaf: 1 crossing of ${THRESHOLD_MB} MiB, peak anon $((peak >> 20)) MiB = JVM $((rss >> 20)) MiB + neighbour $((hog_rss >> 20)) MiB"
