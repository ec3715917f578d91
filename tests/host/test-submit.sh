#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The java personality at spark-submit (issue 23; sparkshim(1), PUBLISHED SETTINGS AT SUBMIT):
# a java home's `java ... org.apache.spark.deploy.SparkSubmit ARGS`, run as a user who is not
# root, gets the job's published settings as --conf arguments after the class, as the home's
# policy (tuner.apply) says; anything wrong runs the command unchanged with exactly one
# warning line. The home's JDK is a stand-in whose bin/java prints the arguments it got, so
# that each case sees the command line Spark would have seen. Then, when a Spark distribution
# is cached (scripts/spark-dist), one real spark-submit through a home of the real JDK: the
# event log's "Spark Properties" hold what was added.
#   $1: sparkshim (the build without test hooks: the only one a home's java may be),
#   $2: JDK home (for the real Spark run; optional)
set -eu
SHIM=$(readlink -f "$1")
JDK=${2:-}
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root to make root-owned homes, policies and published files"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) is missing"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 is missing"; exit 77; }
USER_UID=65534

WORK=$(mktemp -d /tmp/sparkshim-submit.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# the user must reach everything here (the build tree may be below a directory it cannot
# enter: the homes' java is a copy of sparkshim)
chmod 0755 "$WORK"
cd "$WORK"
cp "$SHIM" "$WORK/sparkshim"
chmod 0755 "$WORK/sparkshim"

# --- a stand-in JDK, the policies, the homes ------------------------------------------
mkdir -p jdk/bin
: >jdk/release
cat >jdk/bin/java <<'SH'
#!/bin/sh
for a in "$@"; do printf '%s\n' "$a"; done
SH
chmod 0755 jdk/bin/java
mkdir -m 0755 pub "pub/$USER_UID"
for mode in off show safe explore; do
	cat >"policy-$mode.json" <<JSON
{ "version": 1, "tuner": { "apply": "$mode", "service": { "publish_dir": "$WORK/pub" } } }
JSON
	chmod 0644 "policy-$mode.json"
	"$WORK/sparkshim" java-home --jdk "$WORK/jdk" --policy "$WORK/policy-$mode.json" "$WORK/$mode"
done
mkdir -m 0755 user
chown "$USER_UID" user

NOW=$(date +%s)
FAR=$((NOW + 86400))
NEXT=next-0123456789abcdef
SAFE=safe-fedcba9876543210
# publish JOB [STATE [EXPIRES [OWNER [NEXT_CONF [SAFE_CONF]]]]]: pub/<uid>/<JOB>.json, root's
# and 0644 (JOB of [A-Za-z0-9_-] only: its file name is itself)
publish() {
	_job=$1 _state=${2:-explore} _expires=${3:-$FAR} _owner=${4:-$USER_UID}
	_next=${5:-'{"spark.executor.memory":"1536m","spark.executor.cores":"2"}'}
	_safe=${6:-'{"spark.executor.memory":"2048m"}'}
	cat >"pub/$USER_UID/$_job.json" <<JSON
{"schema":"sparkshim.published/v1","owner_uid":$_owner,"job":"$_job","created":$NOW,
 "expires":$_expires,"state":"$_state","reason":"a reason",
 "next":{"id":"$NEXT","conf":$_next},
 "safe":{"id":"$SAFE","conf":$_safe}}
JSON
	chmod 0644 "pub/$USER_UID/$_job.json"
}

# submit HOME ARGS...: HOME/bin/java -cp x org.apache.spark.deploy.SparkSubmit ARGS as the
# user (HOME=$WORK/user); what the JDK's java got in got.txt, one argument a line; stderr in
# err.txt; the command line it would have got unchanged in want.txt
submit() {
	_home=$1
	shift
	printf '%s\n' -cp x org.apache.spark.deploy.SparkSubmit "$@" >want.txt
	setpriv --reuid="$USER_UID" --regid="$USER_UID" --clear-groups env HOME="$WORK/user" \
		"$WORK/$_home/bin/java" -cp x org.apache.spark.deploy.SparkSubmit "$@" >got.txt 2>err.txt ||
		{ cat err.txt; fail "$_home: the JDK's java failed"; }
}
# unchanged_silent WHAT: the command line as given, nothing said
unchanged_silent() {
	cmp -s want.txt got.txt || { diff want.txt got.txt; fail "$1: the command line changed"; }
	[ ! -s err.txt ] || { cat err.txt; fail "$1: sparkshim said something"; }
	echo "ok: $1: unchanged, nothing said"
}
# unchanged_warned WHAT PATTERN: the command line as given, exactly one warning line
unchanged_warned() {
	cmp -s want.txt got.txt || { diff want.txt got.txt; fail "$1: the command line changed"; }
	[ "$(wc -l <err.txt)" = 1 ] && grep -q '^sparkshim\[[0-9]*\]: warning: ' err.txt ||
		{ cat err.txt; fail "$1: not exactly one warning line"; }
	grep -q -- "$2" err.txt || { cat err.txt; fail "$1: the warning lacks '$2'"; }
	echo "ok: $1: unchanged, one warning: $(cat err.txt)"
}
# added WHAT ARGS...: the command line got ARGS right after the class, and one info line
added() {
	_what=$1
	shift
	{
		printf '%s\n' -cp x org.apache.spark.deploy.SparkSubmit "$@"
		sed -n '4,$p' want.txt
	} >expected.txt
	cmp -s expected.txt got.txt || { diff expected.txt got.txt; fail "$_what: not the command line expected"; }
	[ "$(wc -l <err.txt)" = 1 ] && grep -q '^sparkshim\[[0-9]*\]: info: ' err.txt ||
		{ cat err.txt; fail "$_what: not exactly one info line"; }
	echo "ok: $_what: $(cat err.txt)"
}

publish J
APP="--class org.example.Etl etl.jar --conf spark.app.arg=1"

# --- the modes ---------------------------------------------------------------------------
# shellcheck disable=SC2086
submit off --name J $APP
unchanged_silent "tuner.apply off"
submit off $APP
unchanged_silent "tuner.apply off, a job without a name"

submit show --name J $APP
cmp -s want.txt got.txt || { diff want.txt got.txt; fail "show: the command line changed"; }
[ "$(wc -l <err.txt)" = 1 ] || { cat err.txt; fail "show: not one line"; }
grep -q "info: job 'J': tuner.apply show: would apply next configuration $NEXT (state explore: a reason): --conf spark.executor.memory=1536m --conf spark.executor.cores=2\$" err.txt ||
	{ cat err.txt; fail "show: not the line expected"; }
echo "ok: tuner.apply show: nothing added, one line: $(cat err.txt)"

submit safe --name J $APP
added "tuner.apply safe" --conf spark.executor.memory=2048m --conf spark.sparkshim.job=J \
	--conf "spark.sparkshim.config=$SAFE"
grep -q "applied safe configuration $SAFE (tuner.apply safe): spark.executor.memory=2048m" err.txt ||
	fail "safe: the line does not say what was applied"

submit explore --name J $APP
added "tuner.apply explore" --conf spark.executor.memory=1536m --conf spark.executor.cores=2 \
	--conf spark.sparkshim.job=J --conf "spark.sparkshim.config=$NEXT"
[ "$(cat user/.local/state/sparkshim/launched)" = "$NEXT" ] || fail "explore: $NEXT not recorded"
[ "$(stat -c '%a %u' user/.local/state/sparkshim user/.local/state/sparkshim/launched)" = "700 $USER_UID
600 $USER_UID" ] || fail "the user's state is not the user's own, 0700 and 0600"
# a retry of that configuration (the user submits it again): the safe one
submit explore --name J $APP
added "explore, a retry of next" --conf spark.executor.memory=2048m --conf spark.sparkshim.job=J \
	--conf "spark.sparkshim.config=$SAFE"
grep -q "(retry of $NEXT)" err.txt || fail "a retry is not said"
# the record keeps the newest 64 launches
rm -f user/.local/state/sparkshim/launched
for i in $(seq 1 70); do printf 'next-%016x\n' "$i"; done >user/.local/state/sparkshim/launched
chown "$USER_UID" user/.local/state/sparkshim/launched
submit explore --name J $APP
grep -q "applied next configuration $NEXT" err.txt || { cat err.txt; fail "explore: next not applied"; }
[ "$(wc -l <user/.local/state/sparkshim/launched)" = 64 ] && [ "$(tail -n 1 user/.local/state/sparkshim/launched)" = "$NEXT" ] &&
	[ "$(head -n 1 user/.local/state/sparkshim/launched)" = "next-0000000000000008" ] ||
	fail "the record of launches does not keep the newest 64"
echo "ok: the record of launches keeps the newest 64"
rm -rf user/.local
# a record whose tail a crash zero-filled: the submit still runs, the record begins again
mkdir -p user/.local/state/sparkshim
{ head -c 4096 /dev/zero; for i in $(seq 1 66); do printf 'next-%016x\n' "$i"; done; } >user/.local/state/sparkshim/launched
chown -R "$USER_UID" user/.local
submit explore --name J $APP
grep -q "applied next configuration $NEXT" err.txt || { cat err.txt; fail "a zero-filled record: next not applied"; }
[ "$(cat user/.local/state/sparkshim/launched)" = "$NEXT" ] || fail "a zero-filled record was not begun again"
echo "ok: a record with a zero-filled tail: the submit runs, the record begins again"
# a configuration the service has seen run (its "ran") is no retry: a stable next stays next
sed -i "s/\"state\":\"explore\"/\"ran\":[\"$NEXT\"],\"state\":\"explore\"/" "pub/$USER_UID/J.json"
submit explore --name J $APP
grep -q "applied next configuration $NEXT" err.txt || { cat err.txt; fail "a configuration seen run was taken for a retry"; }
echo "ok: a launch of a configuration the service saw run is no retry"
publish J
rm -rf user/.local
# what Spark takes for the same settings: a deprecated name, the launcher's environment
publish J explore "$FAR" "$USER_UID" '{"spark.executor.memory":"1536m","spark.executor.memoryOverhead":"512m"}'
submit explore --name J $APP
grep -q "spark.executor.memoryOverhead=512m" got.txt || fail "the overhead is not added without the deprecated name"
rm -rf user/.local
submit explore --name J --conf spark.yarn.executor.memoryOverhead=4096m $APP
! grep -q "spark.executor.memoryOverhead=" got.txt ||
	fail "spark.yarn.executor.memoryOverhead did not count as the user's: $(cat got.txt)"
publish J
rm -rf user/.local
printf '%s\n' -cp x org.apache.spark.deploy.SparkSubmit --name J $APP >want.txt
setpriv --reuid="$USER_UID" --regid="$USER_UID" --clear-groups env HOME="$WORK/user" SPARK_EXECUTOR_MEMORY=3g \
	"$WORK/explore/bin/java" -cp x org.apache.spark.deploy.SparkSubmit --name J $APP >got.txt 2>err.txt ||
	fail "SPARK_EXECUTOR_MEMORY: the JDK's java failed"
! grep -q "spark.executor.memory=" got.txt || fail "SPARK_EXECUTOR_MEMORY did not count as the user's: $(cat got.txt)"
grep -q "yours kept: spark.executor.memory" err.txt || fail "SPARK_EXECUTOR_MEMORY: not listed as kept: $(cat err.txt)"
echo "ok: spark.yarn.executor.memoryOverhead and SPARK_EXECUTOR_MEMORY count as the user's"
rm -rf user/.local

# --- what the user set wins ----------------------------------------------------------
submit explore --name J --conf spark.executor.memory=8g $APP
added "the user's --conf" --conf spark.executor.cores=2 --conf spark.sparkshim.job=J \
	--conf "spark.sparkshim.config=$NEXT"
grep -q "yours kept: spark.executor.memory" err.txt || fail "a kept key is not listed"
rm -rf user/.local # no retry
submit explore --name J --executor-cores=4 -c spark.sparkshim.job=J $APP
added "the user's --executor-cores and spark.sparkshim.job" --conf spark.executor.memory=1536m \
	--conf "spark.sparkshim.config=$NEXT"
printf 'spark.executor.memory  3g\nspark.app.name=J\n' >user.properties
chmod 0644 user.properties
rm -rf user/.local
submit explore --properties-file "$WORK/user.properties" $APP
added "a key of the user's --properties-file; the name from it" --conf spark.executor.cores=2 \
	--conf spark.sparkshim.job=J --conf "spark.sparkshim.config=$NEXT"
# an application argument after the jar is the application's
rm -rf user/.local
submit explore --name J --class org.example.Etl etl.jar --conf spark.executor.memory=9g
added "an application's own --conf" --conf spark.executor.memory=1536m --conf spark.executor.cores=2 \
	--conf spark.sparkshim.job=J --conf "spark.sparkshim.config=$NEXT"
rm -rf user/.local

# --- fallback, held: the safe configuration ----------------------------------------------
for state in fallback held; do
	publish "J$state" "$state"
	submit explore --name "J$state" $APP
	added "state $state" --conf spark.executor.memory=2048m --conf "spark.sparkshim.job=J$state" \
		--conf "spark.sparkshim.config=$SAFE"
	grep -q "(state $state: a reason)" err.txt || fail "$state: the state is not said"
done
[ ! -e user/.local/state/sparkshim/launched ] || fail "a safe configuration was recorded as launched"
# nothing safe published: nothing added, one line why
publish Jnosafe held "$FAR" "$USER_UID" '{"spark.executor.cores":"2"}' null
sed -i 's/"safe":{"id":"[^"]*","conf":null}/"safe":null/' "pub/$USER_UID/Jnosafe.json"
submit explore --name Jnosafe $APP
{
	printf '%s\n' -cp x org.apache.spark.deploy.SparkSubmit --conf spark.sparkshim.job=Jnosafe
	sed -n '4,$p' want.txt
} >expected.txt
cmp -s expected.txt got.txt || { diff expected.txt got.txt; fail "held without a safe configuration: more than the job's name added"; }
grep -q "info: job 'Jnosafe': applied nothing (state held: a reason; no safe configuration published)" err.txt ||
	{ cat err.txt; fail "held without a safe configuration: not said"; }
echo "ok: held without a safe configuration: only the job's name added, $(cat err.txt)"

# --- refusals: unchanged, one warning ---------------------------------------------------
publish Jexpired explore $((NOW - 10))
submit explore --name Jexpired $APP
unchanged_warned "an expired file" "refused: expired"
publish Jowner explore "$FAR" 1000
submit explore --name Jowner $APP
unchanged_warned "another user's owner_uid" "\"owner_uid\" is not $USER_UID"
publish Jgroup
chmod 0664 "pub/$USER_UID/Jgroup.json"
submit explore --name Jgroup $APP
unchanged_warned "a group-writable file" "Jgroup.json: owned by uid 0 with mode 0664"
publish Jtheirs
chown "$USER_UID" "pub/$USER_UID/Jtheirs.json"
submit explore --name Jtheirs $APP
unchanged_warned "a file not root's" "Jtheirs.json: owned by uid $USER_UID"
publish Jbad explore "$FAR" "$USER_UID" '{"spark.executor.cores":"2","spark.executor.memory":"1g; rm"}'
submit explore --name Jbad $APP
unchanged_warned "a bad value (the whole file)" "spark.executor.memory '1g; rm' is not a value"
publish Jkey explore "$FAR" "$USER_UID" '{"spark.executor.cores":"2","spark.executor.extraJavaOptions":"-Dx=1"}'
submit explore --name Jkey $APP
unchanged_warned "a key not allowed (the whole file)" "spark.executor.extraJavaOptions '-Dx=1' is not a setting"
publish Jid
sed -i "s/$NEXT/next-0123456789ABCDEF/" "pub/$USER_UID/Jid.json"
submit explore --name Jid $APP
unchanged_warned "an id not of 16 lowercase hex digits" "next id 'next-0123456789ABCDEF'"
publish Jother
sed -i 's/"job":"Jother"/"job":"J"/' "pub/$USER_UID/Jother.json"
submit explore --name Jother $APP
unchanged_warned "another job's settings" '"job" is not this job'
ln -s J.json "pub/$USER_UID/Jlink.json"
submit explore --name Jlink $APP
unchanged_warned "a symbolic link" "Jlink.json: a symbolic link"
chmod 0775 "pub/$USER_UID"
submit explore --name J $APP
unchanged_warned "a group-writable user directory" "pub/$USER_UID: owned by uid 0 with mode 0775"
chmod 0755 "pub/$USER_UID"
chmod 0644 policy-explore.json
cp policy-explore.json policy-open.json
"$WORK/sparkshim" java-home --jdk "$WORK/jdk" --policy "$WORK/policy-open.json" "$WORK/open"
chmod 0666 policy-open.json
submit open --name J $APP
unchanged_warned "a policy others may change" "policy $WORK/policy-open.json: owned by uid 0 and mode 0666"

# --- nothing to do: unchanged, silent ---------------------------------------------------
submit explore --name J --conf spark.sparkshim.tune=OFF $APP
unchanged_silent "spark.sparkshim.tune=off"
submit explore --name J --conf "spark.sparkshim.config=$NEXT" $APP
unchanged_silent "settings already applied"
printf 'spark.app.name=J\nspark.sparkshim.config=%s\n' "$NEXT" >driver.properties
chmod 0644 driver.properties
submit explore --deploy-mode client --properties-file "$WORK/driver.properties" --class org.example.Etl spark-internal
unchanged_silent "the driver pod's spark-submit (settings in its properties file)"
# nothing published yet: only the name it was submitted by, so that its run is stored under
# it (and the settings published from it find the next submit), silently
submit explore --name Jnone $APP
{
	printf '%s\n' -cp x org.apache.spark.deploy.SparkSubmit --conf spark.sparkshim.job=Jnone
	sed -n '4,$p' want.txt
} >expected.txt
cmp -s expected.txt got.txt || { diff expected.txt got.txt; fail "nothing published: not only the job's name added"; }
[ ! -s err.txt ] || { cat err.txt; fail "nothing published: sparkshim said something"; }
echo "ok: a job with nothing published: only --conf spark.sparkshim.job=Jnone, nothing said"
submit show --name Jnone $APP
unchanged_silent "a job with nothing published, tuner.apply show"
submit explore --kill driver-1 --master spark://m:7077
unchanged_silent "--kill"
submit explore --version
unchanged_silent "--version"
setpriv --reuid="$USER_UID" --regid="$USER_UID" --clear-groups env HOME="$WORK/user" \
	"$WORK/explore/bin/java" -cp x org.example.Main --name J --conf a=b >got.txt 2>err.txt
printf '%s\n' -cp x org.example.Main --name J --conf a=b >want.txt
unchanged_silent "a class that is not SparkSubmit"

# --- what Spark would not read: unchanged, one warning ---------------------------------
# no --name: the name Spark gives the application, its main class
submit explore $APP
{
	printf '%s\n' -cp x org.apache.spark.deploy.SparkSubmit --conf spark.sparkshim.job=org.example.Etl
	sed -n '4,$p' want.txt
} >expected.txt
cmp -s expected.txt got.txt || { diff expected.txt got.txt; fail "no --name: not named after its class"; }
[ ! -s err.txt ] || { cat err.txt; fail "no --name: sparkshim said something"; }
echo "ok: no --name: the job is its main class, as Spark names the application"
submit explore --name J --bogus 1 $APP
unchanged_warned "an unknown option" "unknown option '--bogus'"
submit explore --name J --conf
unchanged_warned "a missing value" "--conf without its value"
submit explore --name J --properties-file "$WORK/none.properties" $APP
unchanged_warned "a properties file that cannot be read" "none.properties: No such file"

# a job name with a control character is shown with '?'
TAB=$(printf '\t')
cp "pub/$USER_UID/J.json" "pub/$USER_UID/Tab%09Job.json"
sed -i "s/\"job\":\"J\"/\"job\":\"Tab\\\\tJob\"/" "pub/$USER_UID/Tab%09Job.json"
submit safe --name "Tab${TAB}Job" $APP
added "a name with a tab" --conf spark.executor.memory=2048m --conf "spark.sparkshim.job=Tab${TAB}Job" \
	--conf "spark.sparkshim.config=$SAFE"
grep -q "job 'Tab?Job'" err.txt || fail "a control character of a name is not shown as '?'"

# --- a real spark-submit -----------------------------------------------------------------
dist=
for v in 3.5.9 4.0.4; do
	d=$("$(dirname "$0")/../../scripts/cache-dir" sparkshim-spark-dist)/$v || exit 1
	if [ -f "$d/.complete" ]; then
		dist=$d
		break
	fi
done
if [ -z "$JDK" ] || [ ! -x "$JDK/bin/javac" ]; then
	echo "note: no JDK with javac: the real spark-submit is not run"
elif [ -z "$dist" ]; then
	echo "note: no Spark distribution cached (scripts/spark-dist 3.5 fetches one): the real spark-submit is not run"
else
	mkdir -p src classes
	cat >src/SubmitJob.java <<'JAVA'
import java.util.Arrays;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

public class SubmitJob {
    public static void main(String[] args) {
        JavaSparkContext sc = new JavaSparkContext(new SparkConf());
        long n = sc.parallelize(Arrays.asList(1, 2, 3, 4), 2).count();
        System.out.println("count " + n + " executor.memory "
            + sc.getConf().get("spark.executor.memory", "unset"));
        sc.stop();
    }
}
JAVA
	"$JDK/bin/javac" -d classes -cp "$dist/jars/*" src/SubmitJob.java
	(cd classes && "$JDK/bin/jar" cf ../job.jar SubmitJob.class)
	cat >policy-real.json <<JSON
{ "version": 1, "tuner": { "apply": "explore", "service": { "publish_dir": "$WORK/pub" } } }
JSON
	chmod 0644 policy-real.json
	"$WORK/sparkshim" java-home --jdk "$JDK" --policy "$WORK/policy-real.json" "$WORK/real"
	publish Jreal
	mkdir -m 0777 events local conf
	rm -rf user/.local
	set +e
	setpriv --reuid="$USER_UID" --regid="$USER_UID" --clear-groups env HOME="$WORK/user" \
		JAVA_HOME="$WORK/real" SPARK_HOME="$dist" SPARK_SCALA_VERSION="$(cat "$dist/.scala")" \
		SPARK_CONF_DIR="$WORK/conf" SPARK_LOCAL_IP=127.0.0.1 SPARK_LOCAL_DIRS="$WORK/local" \
		"$dist/bin/spark-submit" --master 'local[1]' --name Jreal --class SubmitJob \
		--conf spark.eventLog.enabled=true --conf "spark.eventLog.dir=file://$WORK/events" \
		--conf spark.eventLog.rolling.enabled=false --conf spark.eventLog.compress=false \
		--conf spark.ui.enabled=false "$WORK/job.jar" >spark.out 2>spark.err
	rc=$?
	set -e
	[ $rc = 0 ] || { tail -n 30 spark.err; fail "spark-submit through the home exited $rc"; }
	grep -q '^count 4 executor.memory 1536m$' spark.out || { cat spark.out; tail -n 30 spark.err; fail "the job did not run with the added settings"; }
	[ "$(grep -c '^sparkshim\[' spark.err)" = 1 ] &&
		grep -q "info: job 'Jreal': applied next configuration $NEXT" spark.err ||
		{ grep sparkshim spark.err; fail "spark-submit: not one line saying what was applied"; }
	python3 - "$WORK/events" "$NEXT" <<'PY' || fail "the event log's Spark Properties lack the added settings"
import json, os, sys
logs = [os.path.join(sys.argv[1], f) for f in os.listdir(sys.argv[1])]
assert len(logs) == 1, logs
props = None
for line in open(logs[0]):
    e = json.loads(line)
    if e.get("Event") == "SparkListenerEnvironmentUpdate":
        props = dict(e["Spark Properties"])
assert props, "no environment update"
want = {"spark.executor.memory": "1536m", "spark.executor.cores": "2",
        "spark.sparkshim.config": sys.argv[2], "spark.sparkshim.job": "Jreal",
        "spark.app.name": "Jreal"}
for k, v in want.items():
    assert props.get(k) == v, (k, props.get(k))
PY
	echo "ok: a real spark-submit ($(basename "$dist")) through a home of the real JDK: the event log's Spark Properties hold the added settings"
fi
echo "all checks passed"
