#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# sparkshim java-home and its java personality, with the real JDK: the home mirrors the JDK,
# a refresh is idempotent and atomic, a non-executor java is the JDK's java with nothing
# added, an executor backend runs as `sparkshim run` does (report, exit status), the
# policy's java.executors "exec" turns wrapping off, and bad homes are refused.
#   $1: sparkshim (the build without test hooks: the only one a home's java may be; the
#   executors' policy comes from java-home --policy), $2: JDK home, $3: sparkshim-test
#   (refused as a home's java)
set -eu
SHIM=$(readlink -f "$1")
JDK=${2:-}
SHIM_TEST=${3:+$(readlink -f "$3")}
. "$(dirname "$0")/lib.sh"
if [ -z "$JDK" ] || [ ! -x "$JDK/bin/javac" ]; then
	echo "SKIP: no JDK with javac (scripts/deps installs openjdk-17-jdk-headless)"
	exit 77
fi
WORK=$(mktemp -d /tmp/sparkshim-java-home.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

# --- the home -----------------------------------------------------------------------
"$SHIM" java-home --jdk "$JDK" "$WORK/jh"
[ "$(readlink "$WORK/jh/bin/java")" = "$(readlink -f "$SHIM")" ] || fail "bin/java is not sparkshim"
real_jdk=$(readlink -f "$JDK")
for e in "$real_jdk"/*; do
	n=$(basename "$e")
	[ "$n" = bin ] && continue
	[ "$(readlink "$WORK/jh/$n")" = "$e" ] || fail "jh/$n does not point at $e"
done
for e in "$real_jdk"/bin/*; do
	n=$(basename "$e")
	[ "$n" = java ] && continue
	[ "$(readlink "$WORK/jh/bin/$n")" = "$e" ] || fail "jh/bin/$n does not point at $e"
done
echo "ok: the home mirrors $real_jdk ($(ls "$WORK/jh/bin" | wc -l) tools in bin), bin/java is sparkshim"

# a refresh gives the same tree and leaves nothing beside it
listing() { (cd "$WORK/jh" && find . -printf '%p %y %l\n' | sort); }
listing >before.txt
"$SHIM" java-home --jdk "$JDK" "$WORK/jh/"
listing >after.txt
cmp -s before.txt after.txt || { diff before.txt after.txt; fail "a refresh changed the home"; }
[ -z "$(find "$WORK" -maxdepth 1 -name '.jh.*')" ] || fail "a refresh left a temporary home"
echo "ok: a refresh is idempotent and leaves no temporary home"

# a refresh never deletes what it did not make
echo keep >"$WORK/jh/notes.txt"
"$SHIM" java-home --jdk "$JDK" "$WORK/jh" 2>err.txt
[ -f "$WORK"/.jh.*/notes.txt ] || fail "the admin's file in the old home was lost"
grep -q "was not removed" err.txt || fail "no warning about the old home kept"
rm -rf "$WORK"/.jh.*
echo "ok: a file the home did not have is kept with the old home, and said"

# --- refusals ------------------------------------------------------------------------
mkdir "$WORK/busy" && echo x >"$WORK/busy/file"
expect 120 "not made by sparkshim java-home" "$SHIM" java-home --jdk "$JDK" "$WORK/busy"
[ "$(ls "$WORK/busy")" = file ] || fail "a foreign directory was changed"
expect 120 "has no release file" "$SHIM" java-home --jdk /usr "$WORK/x"
expect 120 "has no executable bin/java" "$SHIM" java-home --jdk "$WORK" "$WORK/x"
expect 120 "is a java home made by sparkshim java-home" "$SHIM" java-home --jdk "$WORK/jh" "$WORK/x"
expect 120 "give --jdk JDK_DIR and one DIR" "$SHIM" java-home "$WORK/x"
[ ! -e "$WORK/x" ] || fail "a refused java-home left $WORK/x"

# --- the personality: not an executor -------------------------------------------------
mkdir -p src/org/apache/spark/executor classes
cat >src/Tool.java <<'JAVA'
public class Tool {
    public static void main(String[] a) {
        System.out.println("tool " + String.join(" ", a) + " " + System.getProperty("java.home"));
        System.exit(7);
    }
}
JAVA
cat >src/org/apache/spark/executor/CoarseGrainedExecutorBackend.java <<'JAVA'
package org.apache.spark.executor;
public class CoarseGrainedExecutorBackend {
    public static void main(String[] a) {
        System.out.println("executor " + ProcessHandle.current().pid());
        System.exit(3);
    }
}
JAVA
"$JDK/bin/javac" -d classes src/Tool.java src/org/apache/spark/executor/CoarseGrainedExecutorBackend.java
"$JDK/bin/java" -version >v.real 2>&1
"$WORK/jh/bin/java" -version >v.shim 2>&1
cmp -s v.real v.shim || fail "java -version differs through the home"
set +e
"$WORK/jh/bin/java" -cp classes Tool a b >out.txt 2>err.txt
rc=$?
set -e
[ $rc = 7 ] || fail "Tool exited $rc through the home, expected 7"
grep -q "^tool a b $real_jdk\$" out.txt || { cat out.txt err.txt; fail "Tool did not run as the JDK's java"; }
[ ! -s err.txt ] || { cat err.txt; fail "sparkshim said something about a non-executor"; }
echo "ok: java -version and a tool run as the JDK's java, exit status kept, nothing added"

# --- the personality: an executor -----------------------------------------------------
cat >policy.json <<JSON
{ "version": 1, "fail_mode": "open",
  "report": { "path": "$WORK/reports.jsonl" } }
JSON
# the home's executors read the policy java-home was given (the default path without it)
"$SHIM" java-home --jdk "$JDK" --policy policy.json "$WORK/jhp"
[ "$(readlink "$WORK/jhp/.sparkshim-policy")" = "$WORK/policy.json" ] ||
	fail "jhp/.sparkshim-policy does not name $WORK/policy.json"
[ ! -e "$WORK/jh/.sparkshim-policy" ] || fail "a home made without --policy names a policy"
set +e
"$WORK/jhp/bin/java" -Xmx64m -cp classes \
	org.apache.spark.executor.CoarseGrainedExecutorBackend --driver-url spark://d:1 \
	--executor-id 4 --hostname h --cores 1 --app-id app-20261203000000-0001 >out.txt 2>err.txt
rc=$?
set -e
[ $rc = 3 ] || { cat err.txt; fail "the executor exited $rc through the home, expected 3"; }
pid=$(sed -n 's/^executor //p' out.txt)
[ -s reports.jsonl ] || { cat err.txt; fail "no report for the executor"; }
python3 - "$WORK/reports.jsonl" "$pid" "$real_jdk/bin/java" <<'PY' || fail "the executor's report is not as expected"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
final = [l for l in lines if l.get("type") == "final"] or lines[-1:]
r = final[-1]
text = json.dumps(r)
assert "app-20261203000000-0001" in text, "no app id"
assert '"4"' in text or "-4" in text, "no executor id"
assert sys.argv[3] in text, "the JDK's java is not the command"
ident = r["identity"]
assert ident["pid"] == int(sys.argv[2]), "not the executor's own pid"
assert ident["argv"][0] == sys.argv[3] and "--executor-id" in ident["argv"], "no command line"
assert str(r.get("exit_code", r.get("exit", {}))).find("3") >= 0 or '"exit_code": 3' in text, "no exit code 3"
PY
echo "ok: an executor backend ran under sparkshim run: exit 3 kept, report for app-20261203000000-0001 executor 4 (pid $pid)"

cat >policy-exec.json <<JSON
{ "version": 1, "fail_mode": "open", "java": { "executors": "exec" },
  "report": { "path": "$WORK/reports-exec.jsonl" } }
JSON
"$SHIM" java-home --jdk "$JDK" --policy "$WORK/policy-exec.json" "$WORK/jhe"
set +e
"$WORK/jhe/bin/java" -cp classes \
	org.apache.spark.executor.CoarseGrainedExecutorBackend --executor-id 5 --app-id app-x >out.txt 2>err.txt
rc=$?
set -e
[ $rc = 3 ] || fail "java.executors exec: exited $rc, expected 3"
[ ! -e reports-exec.jsonl ] || fail "java.executors exec: the executor was wrapped"
echo "ok: the policy's java.executors \"exec\" runs the executor as the JDK's java"

# --- Spark's launcher, and the JVM's option variables (issue 22, defect 5) -------------
# org.apache.spark.launcher.Main as the certain main class runs unwrapped; but any of the
# variables the JVM reads its options from can add a -javaagent that runs a backend in it.
mkdir -p src/org/apache/spark/launcher
cat >src/org/apache/spark/launcher/Main.java <<'JAVA'
package org.apache.spark.launcher;
public class Main {
    public static void main(String[] a) {
        System.out.println("launcher " + String.join(" ", a));
    }
}
JAVA
cat >src/Agent.java <<'JAVA'
public class Agent {
    public static void premain(String args) {
        org.apache.spark.executor.CoarseGrainedExecutorBackend.main(args.split(","));
    }
}
JAVA
"$JDK/bin/javac" -cp classes -d classes src/org/apache/spark/launcher/Main.java src/Agent.java
printf 'Premain-Class: Agent\n' >manifest.txt
"$JDK/bin/jar" cfm agent.jar manifest.txt -C classes Agent.class
launcher() {
	"$WORK/jhp/bin/java" -Xmx64m -cp classes org.apache.spark.launcher.Main \
		org.apache.spark.executor.CoarseGrainedExecutorBackend --executor-id 6 --app-id app-l
}
rm -f reports.jsonl
set +e
launcher >out.txt 2>err.txt
rc=$?
set -e
[ $rc = 0 ] || { cat err.txt; fail "the launcher exited $rc through the home, expected 0"; }
grep -q '^launcher org.apache.spark.executor.CoarseGrainedExecutorBackend' out.txt ||
	{ cat out.txt err.txt; fail "the launcher did not run"; }
[ ! -e reports.jsonl ] || fail "Spark's launcher was wrapped"
echo "ok: Spark's launcher, the certain main class, runs as the JDK's java"
agent="-javaagent:$WORK/agent.jar=--executor-id,6,--app-id,app-l"
for var in JAVA_TOOL_OPTIONS _JAVA_OPTIONS JDK_JAVA_OPTIONS; do
	rm -f reports.jsonl
	set +e
	env "$var=$agent" "$WORK/jhp/bin/java" -Xmx64m \
		-cp classes org.apache.spark.launcher.Main \
		org.apache.spark.executor.CoarseGrainedExecutorBackend --executor-id 6 \
		--app-id app-l >out.txt 2>err.txt
	rc=$?
	set -e
	[ $rc = 3 ] || { cat out.txt err.txt; fail "$var: the agent's executor exited $rc, expected 3"; }
	grep -q '^executor ' out.txt || { cat out.txt err.txt; fail "$var: the agent did not run the backend"; }
	[ -s reports.jsonl ] || { cat err.txt; fail "$var set: the launcher ran an executor unwrapped"; }
	echo "ok: $var set: Spark's launcher, whose JVM may run an executor, runs under sparkshim run"
done
# an empty variable adds nothing: the launcher stays exempt
rm -f reports.jsonl
JAVA_TOOL_OPTIONS= _JAVA_OPTIONS= JDK_JAVA_OPTIONS= launcher >out.txt 2>err.txt || { cat err.txt; fail "the launcher failed with empty variables"; }
[ ! -e reports.jsonl ] || fail "empty option variables: Spark's launcher was wrapped"
echo "ok: empty option variables leave Spark's launcher exempt"

# a refresh makes the home its command line says: without --policy, the default again
"$SHIM" java-home --jdk "$JDK" "$WORK/jhe"
[ ! -e "$WORK/jhe/.sparkshim-policy" ] || fail "a refresh without --policy kept the policy"
echo "ok: a home names the policy java-home --policy gave it; a refresh without it, none"
expect 121 "nothing.json" "$SHIM" java-home --jdk "$JDK" --policy "$WORK/nothing.json" "$WORK/x"
echo '{ "version": 1, "fail_mode": "sideways" }' >bad-policy.json
expect 121 "fail_mode" "$SHIM" java-home --jdk "$JDK" --policy bad-policy.json "$WORK/x"
[ ! -e "$WORK/x" ] || fail "a refused policy left $WORK/x"

# --- the test build is never a home's java (issue 22, defect 8b) ----------------------
# its hooks read the environment, which in a home is every job's (SPARKSHIM_CGROUP_ROOT)
if [ -n "$SHIM_TEST" ]; then
	expect 120 "sparkshim-test, built with test hooks .* allowed: the installed sparkshim" \
		"$SHIM_TEST" java-home --jdk "$JDK" "$WORK/th"
	[ ! -e "$WORK/th" ] || fail "sparkshim-test java-home made $WORK/th"
	# nor by hand: a home's bin/java linked to sparkshim-test is refused when run
	"$SHIM" java-home --jdk "$JDK" "$WORK/th"
	ln -sf "$(readlink -f "$SHIM_TEST")" "$WORK/th/bin/java"
	expect 127 "refused as a home's java: this program is sparkshim-test" "$WORK/th/bin/java" -version
fi

# --- homes the personality refuses ----------------------------------------------------
mkdir -p lone/bin && ln -s "$(readlink -f "$SHIM")" lone/bin/java
expect 127 "not in a java home made by sparkshim java-home" "$WORK/lone/bin/java" -version
if [ "$(id -u)" = 0 ]; then
	"$SHIM" java-home --jdk "$JDK" "$WORK/open"
	chmod 0777 "$WORK/open"
	expect 127 "refused: a java home root runs must be root's" "$WORK/open/bin/java" -version
	# a directory on the way that others may change: they could swap in another home
	mkdir -m 0755 "$WORK/shared"
	"$SHIM" java-home --jdk "$JDK" "$WORK/shared/jh"
	chmod 0777 "$WORK/shared"
	expect 127 "$WORK/shared: refused: a directory on the way to a java home" "$WORK/shared/jh/bin/java" -version
	expect 120 "writable by group or others without the sticky bit" "$SHIM" java-home --jdk "$JDK" "$WORK/shared/jh2"
	[ ! -e "$WORK/shared/jh2" ] || fail "a refused java-home made $WORK/shared/jh2"
	chmod 1777 "$WORK/shared"
	"$WORK/shared/jh/bin/java" -version 2>/dev/null || fail "a home in a sticky directory was refused"
	# root runs bin/java for every executor: a sparkshim others may change is refused
	mkdir -m 0755 "$WORK/copy"
	cp "$SHIM" "$WORK/copy/sparkshim"
	chmod 0777 "$WORK/copy/sparkshim"
	expect 120 "refused: bin/java would be $WORK/copy/sparkshim" \
		"$WORK/copy/sparkshim" java-home --jdk "$JDK" "$WORK/jc"
	[ ! -e "$WORK/jc" ] || fail "an untrusted sparkshim made $WORK/jc"
	# and as run --policy: root loads no policy others may change
	chmod 0666 policy.json
	expect 121 "policy.json" "$SHIM" java-home --jdk "$JDK" --policy policy.json "$WORK/jc"
	chmod 0644 policy.json
fi
echo "all checks passed"
