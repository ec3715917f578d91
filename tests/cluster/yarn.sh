#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# YARN launches every executor through sparkshim (issue 12, section 2).
#
# A real single-process YARN: Hadoop's MiniYARNCluster (hadoop-client-minicluster, the
# version Spark's hadoop-client-api/runtime have), started by tests/cluster/YarnHarness.java
# on the loopback with one NodeManager, its directories in the test's temporary directory.
# Spark (spark-sql_2.12 + spark-yarn_2.12 from Maven Central, spark.yarn.jars=local:... so
# nothing is uploaded) runs tests/cluster/YarnHarnessJob.java in yarn client mode twice,
# with 2 executors of 1 core and 512m:
#   1. plain:    no JAVA_HOME in the Spark configuration: the NodeManager's JDK;
#   2. wrapped:  spark.executorEnv.JAVA_HOME=DIR and spark.yarn.appMasterEnv.JAVA_HOME=DIR,
#                DIR made by `sparkshim java-home --jdk JDK DIR`: the ApplicationMaster
#                (ExecutorLauncher) starts from the wrapper too, which must exec the real
#                java for it with nothing added. The test's policy is installed at
#                /etc/sparkshim/policy.json for the run (fail_mode open: this host's cgroup
#                v2 has no controllers, so measurement is real and enforcement is reported
#                as not possible) and the previous file restored at exit.
# Checks: the NodeManager's launch_container.sh of every container of run 2 exports
# JAVA_HOME=DIR and runs $JAVA_HOME/bin/java; with the application still running (the
# driver waits for the test), its executor JVMs are children of sparkshim (run 1's of the
# container's shell), and its ApplicationMaster is the real java under the container's
# shell with the arguments and environment names of run 1's AM (nothing added); one final
# report per executor (app id application_..., executor ids 1 and 2), in a file named
# after them, with the pid and the argv the executor JVM itself saw; no report for the
# ApplicationMaster, the driver or run 1; both runs return the same rows.
#
# Usage: yarn.sh SOURCE_ROOT SPARKSHIM JDK_HOME
# (SPARKSHIM is the build tree's; the installed package replaces it when
# tests/cluster/lib.sh can install it.) KEEP_WORK=1 keeps the temporary directory.
set -euo pipefail

SRC=${1:?usage: yarn.sh SOURCE_ROOT SPARKSHIM JDK_HOME}
SPARKSHIM=${2:?}
JDK=${3:-}
SPARK_VERSION=3.5.9
HADOOP_VERSION=3.3.4 # what spark-yarn_2.12:3.5.9's hadoop-client-api/runtime are
# shellcheck source=/dev/null
. "$SRC/tests/cluster/lib.sh"
suite_helpers "yarn-3.5"

[ "$(id -u)" = 0 ] || skip "not root: the test installs its policy at /etc/sparkshim/policy.json"
need_jdk java javac
command -v python3 >/dev/null || skip "python3 is missing"
command -v mvn >/dev/null || skip "mvn is missing (scripts/deps installs maven)"
SPARKSHIM=$(cd "$(dirname "$SPARKSHIM")" && pwd)/$(basename "$SPARKSHIM")

# --- the sparkshim under test ------------------------------------------------------------
# The installed package (tests/cluster/lib.sh's install_package), as every cluster suite.
use_package
SPARKSHIM=/usr/bin/sparkshim
progress "testing the installed package: $SPARKSHIM"
WORK=$(mktemp -d /tmp/sparkshim-yarn.XXXXXX)
chmod 0755 "$WORK"
HARNESS_PID=
DRIVER_PID=
CGROUP_PARENT=sparkshim-test-yarn

# The driver and the MiniYARNCluster are stopped (the cluster stops its containers), any
# process left with its working directory in $WORK (a container) is killed, the policy is
# restored and $WORK goes, whatever happened.
cleanup() {
  local rc=$? pid
  set +e
  if [ -n "$DRIVER_PID" ]; then
    kill -TERM "$DRIVER_PID" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$DRIVER_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$DRIVER_PID" 2>/dev/null
  fi
  if [ -n "$HARNESS_PID" ]; then
    touch "$WORK/yarn/stop"
    for _ in $(seq 150); do kill -0 "$HARNESS_PID" 2>/dev/null || break; sleep 0.2; done
    kill -KILL "$HARNESS_PID" 2>/dev/null
  fi
  cleanup_suite "$WORK" "$CGROUP_PARENT"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the wrapper ----------------------------------------------------------------------------
JH=$WORK/java-home
rc=0
"$SPARKSHIM" java-home --jdk "$JDK" "$JH" >"$WORK/java-home.err" 2>&1 || rc=$?
if [ "$rc" != 0 ]; then
  echo "FAIL: $SPARKSHIM java-home --jdk $JDK $JH exited $rc: $(cat "$WORK/java-home.err")"
  exit 1
fi
[ -x "$JH/bin/java" ] || { echo "FAIL: sparkshim java-home made no $JH/bin/java"; exit 1; }

# --- the jars -----------------------------------------------------------------------------
# fetch_yarn_jars DEST: spark-yarn_2.12 (DEST/spark-yarn: that jar only, its dependencies are
# scripts/spark-jars' spark-sql set) and MiniYARNCluster with what it needs on Java 17
# (DEST/minicluster), cached like scripts/spark-jars (same Maven repository), idempotent.
fetch_yarn_jars() {
  local dest=$1 m2 tmp
  m2=$("$SRC/scripts/cache-dir" sparkshim-spark)/m2 || return 1
  [ -f "$dest/.complete" ] && return 0
  tmp=$(mktemp -d "$WORK/mvn.XXXXXX")
  deps() { # ARTIFACT...: group:artifact:version
    local a
    for a in "$@"; do
      IFS=: read -r g n v <<<"$a"
      printf '<dependency><groupId>%s</groupId><artifactId>%s</artifactId><version>%s</version></dependency>\n' "$g" "$n" "$v"
    done
  }
  pom() { # FILE DEPENDENCIES
    printf '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>sparkshim</groupId><artifactId>yarn-jars</artifactId><version>0</version><packaging>pom</packaging>
<dependencies>%s</dependencies></project>\n' "$2" >"$1"
  }
  pom "$tmp/spark-yarn.xml" "$(deps org.apache.spark:spark-yarn_2.12:$SPARK_VERSION)"
  # MiniYARNCluster's ResourceManager loads log4j 1 (reload4j since Hadoop 3.3.3),
  # BouncyCastle (its proxy CA) and JAXB (its web services), none of which the shaded jars
  # hold nor Java 17 has; Spark's own YARN tests add the same.
  pom "$tmp/minicluster.xml" "$(deps org.apache.hadoop:hadoop-client-minicluster:$HADOOP_VERSION \
    org.apache.hadoop:hadoop-client-runtime:$HADOOP_VERSION ch.qos.reload4j:reload4j:1.2.22 \
    org.slf4j:slf4j-reload4j:1.7.36 org.bouncycastle:bcprov-jdk15on:1.68 \
    org.bouncycastle:bcpkix-jdk15on:1.68 javax.xml.bind:jaxb-api:2.2.11 \
    com.sun.xml.bind:jaxb-impl:2.2.3-1 javax.activation:activation:1.1.1)"
  rm -rf "$dest.partial"
  mkdir -p "$dest.partial"
  if ! mvn -B -q -f "$tmp/spark-yarn.xml" -Dmaven.repo.local="$m2" dependency:copy-dependencies \
    -DexcludeTransitive=true -DoutputDirectory="$dest.partial/spark-yarn" >"$tmp/log" 2>&1 ||
    ! mvn -B -q -f "$tmp/minicluster.xml" -Dmaven.repo.local="$m2" dependency:copy-dependencies \
      -DincludeScope=runtime -DoutputDirectory="$dest.partial/minicluster" >>"$tmp/log" 2>&1; then
    if grep -qiE 'Could not transfer|UnknownHost|Connection (refused|timed out)|Network is unreachable' "$tmp/log"; then
      skip "Maven Central is not reachable: $(grep -iE 'Could not transfer|UnknownHost|Connection' "$tmp/log" | head -n 1)"
    fi
    echo "FAIL: mvn dependency:copy-dependencies failed:"
    tail -n 20 "$tmp/log"
    exit 1
  fi
  rm -rf "$dest"
  mv "$dest.partial" "$dest"
  touch "$dest/.complete"
}

progress "fetching Spark $SPARK_VERSION (scripts/spark-jars), spark-yarn and hadoop-client-minicluster $HADOOP_VERSION"
rc=0
SPARK_JARS=$("$SRC/scripts/spark-jars" 3.5 2>"$WORK/spark-jars.err") || rc=$?
if [ "$rc" = 77 ]; then
  skip "cannot fetch Spark: $(cat "$WORK/spark-jars.err")"
elif [ "$rc" != 0 ]; then
  echo "FAIL: scripts/spark-jars 3.5: $(cat "$WORK/spark-jars.err")"
  exit 1
fi
[ -f "$SPARK_JARS/spark-core_2.12-$SPARK_VERSION.jar" ] ||
  skip "$SPARK_JARS is not Spark $SPARK_VERSION (SPARK_VERSION is set?)"
[ -f "$SPARK_JARS/hadoop-client-runtime-$HADOOP_VERSION.jar" ] || {
  echo "FAIL: $SPARK_JARS has no hadoop-client-runtime-$HADOOP_VERSION.jar: which Hadoop does Spark $SPARK_VERSION use?"
  exit 1
}
JARS=$("$SRC/scripts/cache-dir" sparkshim-yarn)/$SPARK_VERSION-hadoop-$HADOOP_VERSION || exit 1
fetch_yarn_jars "$JARS"
progress "jars: $SPARK_JARS, $JARS ($(du -sh "$JARS" | cut -f1))"

mkdir -p "$WORK/classes" "$WORK/yarn" "$WORK/reports" "$WORK/driver-conf" "$WORK/staging"
chmod 0755 "$WORK/reports"
"$JDK/bin/javac" -nowarn -d "$WORK/classes" -cp "$JARS/minicluster/*:$SPARK_JARS/*:$JARS/spark-yarn/*" \
  "$SRC/tests/cluster/YarnHarness.java" "$SRC/tests/cluster/YarnHarnessJob.java"
mapfile -t JAVA_OPTS < <("$SRC/scripts/spark-java-opts")

# --- the cluster --------------------------------------------------------------------------
cat >"$WORK/yarn/log4j.properties" <<'EOF'
log4j.rootLogger=WARN,stderr
log4j.appender.stderr=org.apache.log4j.ConsoleAppender
log4j.appender.stderr.target=System.err
log4j.appender.stderr.layout=org.apache.log4j.PatternLayout
log4j.appender.stderr.layout.ConversionPattern=%d{HH:mm:ss} %p %c{1}: %m%n
EOF
echo '.level = WARNING' >"$WORK/yarn/logging.properties" # the shaded Jersey's java.util.logging
progress "starting MiniYARNCluster (1 ResourceManager, 1 NodeManager) in $WORK/yarn"
# The NodeManager hands its JAVA_HOME to containers that set none (yarn.nodemanager.env-whitelist).
mkdir -p "$WORK/yarn/tmp" "$WORK/driver-tmp"
(cd "$WORK/yarn" && JAVA_HOME=$JDK exec "$JDK/bin/java" "${JAVA_OPTS[@]}" -Xmx768m \
  -Djava.io.tmpdir="$WORK/yarn/tmp" \
  -Dlog4j.configuration="file:$WORK/yarn/log4j.properties" \
  -Djava.util.logging.config.file="$WORK/yarn/logging.properties" \
  -cp "$JARS/minicluster/*:$WORK/classes" YarnHarness "$WORK/yarn" $$ \
  >"$WORK/yarn/harness.log" 2>&1) &
HARNESS_PID=$!
for ((i = 0; i < 600; i++)); do
  [ -f "$WORK/yarn/ready" ] && break
  kill -0 "$HARNESS_PID" 2>/dev/null || break
  [ $((i % 100)) = 99 ] && progress "still waiting for MiniYARNCluster"
  sleep 0.2
done
if [ ! -f "$WORK/yarn/ready" ]; then
  echo "FAIL: MiniYARNCluster did not start:"
  grep -vE '^\s+at ' "$WORK/yarn/harness.log" | tail -n 20
  exit 1
fi
progress "MiniYARNCluster ready (pid $HARNESS_PID), ResourceManager at $(cat "$WORK/yarn/ready")"

# --- the policy ---------------------------------------------------------------------------

# The java personality reads /etc/sparkshim/policy.json only: the test's own for the run
# (lib.sh install_test_policy, after install_package), the previous one back at exit.
install_test_policy "$CGROUP_PARENT" "$WORK/reports" '{"enabled": false}' "$WORK" || exit 1

# --- the jobs -----------------------------------------------------------------------------
cp "$WORK/yarn/conf/yarn-site.xml" "$WORK/yarn/conf/core-site.xml" "$WORK/driver-conf/"
cat >"$WORK/driver-conf/log4j2.properties" <<'EOF'
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
EOF

# inspect LABEL APP: the live processes of application APP (its containers' working
# directories are in $WORK/yarn), tab-separated: pid, parent pid, container, executable,
# parent's executable, the JAVA_HOME and JAVA_TOOL_OPTIONS of its environment, the names
# in its environment, its command line; and a copy of each container's launch_container.sh
# from the NodeManager's private directory.
inspect() {
  local label=$1 app=$2 pid cwd ppid exe script
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null) || continue
    case "$cwd" in "$WORK"/yarn/*/"$app"/container_*) ;; *) continue ;; esac
    exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || continue
    case "$exe" in */bash) continue ;; esac # the container's launch script
    ppid=$(awk '/^PPid:/ { print $2 }' "/proc/$pid/status" 2>/dev/null) || continue
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$pid" "$ppid" "$(basename "$cwd")" "$exe" \
      "$(readlink "/proc/$ppid/exe")" \
      "$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^JAVA_HOME=//p')" \
      "$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/^JAVA_TOOL_OPTIONS=//p')" \
      "$(tr '\0' '\n' <"/proc/$pid/environ" | sed -n 's/=.*//p' | sort | tr '\n' ' ')" \
      "$(tr '\0' ' ' <"/proc/$pid/cmdline")"
  done >"$WORK/$label.processes" 2>/dev/null
  mkdir -p "$WORK/$label.launch"
  find "$WORK/yarn" -path "*/nmPrivate/$app/container_*/launch_container.sh" |
    while read -r script; do
      cp "$script" "$WORK/$label.launch/$(basename "$(dirname "$script")").sh"
    done
}

# run LABEL [--conf K=V...]: the job, in yarn client mode; sets APP (its application id)
run() {
  local label=$1 rc=0 i conf=() app=
  shift
  while [ $# -gt 0 ]; do conf+=("-D$2"); shift 2; done
  progress "$label: submitting the job to YARN (2 executors, 1 core and 512m each) ${conf[*]}"
  HADOOP_CONF_DIR=$WORK/driver-conf YARN_CONF_DIR=$WORK/driver-conf JAVA_HOME=$JDK \
    timeout 300 "$JDK/bin/java" "${JAVA_OPTS[@]}" -Xmx768m -Djava.io.tmpdir="$WORK/driver-tmp" \
    -cp "$WORK/driver-conf:$SPARK_JARS/*:$JARS/spark-yarn/*:$WORK/classes" \
    -Dspark.master=yarn -Dspark.submit.deployMode=client \
    -Dspark.app.name="sparkshim-yarn-$label" \
    -Dspark.yarn.jars="local:$SPARK_JARS/*,local:$JARS/spark-yarn/*" \
    -Dspark.executor.extraClassPath="$WORK/classes" \
    -Dspark.yarn.stagingDir="file://$WORK/staging" \
    -Dspark.yarn.maxAppAttempts=1 \
    -Dspark.executor.instances=2 -Dspark.executor.cores=1 -Dspark.executor.memory=512m \
    -Dspark.yarn.am.memory=512m -Dspark.driver.memory=768m \
    -Dspark.driver.host=127.0.0.1 -Dspark.driver.bindAddress=127.0.0.1 \
    -Dspark.ui.enabled=false -Dspark.sql.shuffle.partitions=4 \
    -Dspark.local.dir="$WORK/driver-local" \
    "${conf[@]}" YarnHarnessJob "$label" "$WORK" $$ >"$WORK/$label.out" 2>"$WORK/$label.err" &
  DRIVER_PID=$!
  # the driver holds the application while the test looks at its live processes
  for ((i = 0; ; i++)); do
    if [ -f "$WORK/$label.running" ]; then
      app=$(cat "$WORK/$label.running")
      inspect "$label" "$app"
      touch "$WORK/$label.inspected"
      break
    fi
    kill -0 "$DRIVER_PID" 2>/dev/null || break
    if [ $((i % 150)) = 149 ]; then
      progress "$label: running: $(grep -ohE 'application_[0-9]+_[0-9]+' "$WORK/$label.err" | head -n 1) $(grep -o 'executors registered' "$WORK/$label.err" || echo 'waiting for executors')"
    fi
    sleep 0.2
  done
  wait "$DRIVER_PID" || rc=$?
  DRIVER_PID=
  APP=$app
  if [ "$rc" != 0 ] || [ ! -s "$WORK/$label.result" ] || [ -z "$APP" ]; then
    echo "FAIL: $label: the driver exited $rc:"
    grep -vE '^\s+at ' "$WORK/$label.err" | tail -n 25
    # the containers' logs (the NodeManager's log directory holds APP/CONTAINER/stderr)
    for f in $(find "$WORK/yarn" -path '*logDir*/application_*/container_*' -name stderr | sort); do
      echo "--- ${f#"$WORK"/yarn/*/application_}:"
      grep -vE '^\s+at ' "$f" | tail -n 6
    done
    return 1
  fi
  progress "$label: $APP done, $(wc -l <"$WORK/$label.result") result rows, executors $(cut -f1 "$WORK/$label.executors" | tr '\n' ' ')"
}

run plain || exit 1
PLAIN_APP=$APP
run wrapped --conf "spark.executorEnv.JAVA_HOME=$JH" --conf "spark.yarn.appMasterEnv.JAVA_HOME=$JH" || exit 1
WRAPPED_APP=$APP

# The executors end when the application does; their sparkshim writes its final report
# once the JVM is gone. Wait for one per executor.
progress "waiting for the final reports of $WRAPPED_APP's executors"
for _ in $(seq 300); do
  finals=$(cat "$WORK/reports"/*.jsonl 2>/dev/null | grep -c '"kind": *"final"' || true)
  [ "$finals" -ge 2 ] && break
  sleep 0.2
done
sleep 1 # a report that should not be there (a third one, the ApplicationMaster's) gets its chance

# --- checks -------------------------------------------------------------------------------
progress "checking"
python3 - "$WORK" "$JDK" "$JH" "$SPARKSHIM" "$PLAIN_APP" "$WRAPPED_APP" <<'PY' || fail "see above"
import filecmp, glob, json, os, re, sys

work, jdk, jh, shim, plain_app, app = sys.argv[1:7]
real_java = os.path.realpath(jdk + "/bin/java")
shim = os.path.realpath(shim)

def is_shim(path):
    """path is sparkshim: the binary itself or the wrapper's java, if that is a copy of it"""
    path = os.path.realpath(path)
    if path == shim:
        return True
    try:
        return path == os.path.realpath(jh + "/bin/java") and filecmp.cmp(path, shim, shallow=False)
    except OSError:
        return False
failures = 0

def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)

def executor_lines(label):
    """executor id -> (pid, parent pid, parent's executable, JAVA_HOME, java.home, command line),
    as each executor JVM saw itself"""
    out = {}
    for line in open(f"{work}/{label}.executors"):
        f = line.rstrip("\n").split("\t")
        out[f[0]] = (int(f[1]), int(f[2]) if f[2] != "?" else None, f[3], f[4], f[5], f[6].split("\x1f"))
    return out

def processes(label):
    """the live processes of the application's containers, seen from /proc"""
    out = []
    for line in open(f"{work}/{label}.processes"):
        f = line.rstrip("\n").split("\t")
        out.append({"pid": int(f[0]), "ppid": int(f[1]), "container": f[2], "exe": f[3],
                    "pexe": f[4], "java_home": f[5], "jto": f[6], "env": f[7].split(),
                    "cmdline": f[8]})
    return out

def launch_scripts(label):
    """container -> its launch_container.sh (from the NodeManager's private directory)"""
    out = {}
    for p in glob.glob(f"{work}/{label}.launch/container_*.sh"):
        out[os.path.basename(p)[:-3]] = open(p, errors="replace").read()
    return out

def arg(cmdline, flag):
    m = re.search(r"(?:^| )" + re.escape(flag) + r" (\S+)", cmdline)
    return m.group(1) if m else None

BACKEND = "org.apache.spark.executor.YarnCoarseGrainedExecutorBackend"
AM = "org.apache.spark.deploy.yarn.ExecutorLauncher"

# 1. the NodeManager's launch scripts
for label, app_id, home in (("plain", plain_app, None), ("wrapped", app, jh)):
    scripts = launch_scripts(label)
    kinds = {"executor": 0, "am": 0}
    for container, text in sorted(scripts.items()):
        kind = "executor" if BACKEND in text else "am" if AM in text else None
        if kind is None:
            fail(f"{app_id}/{container}: launch_container.sh starts neither an executor nor the AM")
            continue
        kinds[kind] += 1
        m = re.search(r'^export JAVA_HOME="([^"]*)"', text, re.M)
        exported = m.group(1) if m else None
        if home is not None and exported != home:
            fail(f"{app_id}/{container} ({kind}): launch_container.sh exports JAVA_HOME={exported}, want {home}")
        if home is None and exported is not None and os.path.realpath(exported) != os.path.realpath(jdk):
            fail(f"{app_id}/{container} ({kind}): launch_container.sh exports JAVA_HOME={exported}, want the NodeManager's {jdk}")
        if not re.search(r'exec /bin/bash -c "\$JAVA_HOME/bin/java ', text):
            fail(f"{app_id}/{container} ({kind}): launch_container.sh does not run $JAVA_HOME/bin/java")
    if kinds != {"executor": 2, "am": 1}:
        fail(f"{app_id}: launch scripts for {kinds['executor']} executors and {kinds['am']} AM, want 2 and 1")
    print(f"{label} ({app_id}): the NodeManager's launch_container.sh of {kinds['executor']} executors and "
          f"{kinds['am']} AM export JAVA_HOME={home or 'the NodeManager JDK (' + jdk + ')'}")

# 2. the live processes: executors under sparkshim in run 2 only, the AM never
def normalized(cmdline):
    """an AM's arguments without what differs between two applications"""
    cmdline = re.sub(r"application_\d+_\d+", "APP", cmdline)
    cmdline = re.sub(r"container_\d+_\d+_\d+_\d+", "CONTAINER", cmdline)
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", cmdline).split(" ")

am_seen = {}
for label, app_id, wrapped in (("plain", plain_app, False), ("wrapped", app, True)):
    procs = processes(label)
    execs = executor_lines(label)
    by_pid = {p["pid"]: p for p in procs}
    ams = [p for p in procs if AM in p["cmdline"]]
    backends = [p for p in procs if BACKEND in p["cmdline"] and os.path.realpath(p["exe"]) == real_java]
    if len(ams) != 1:
        fail(f"{app_id}: {len(ams)} live ApplicationMaster processes, want 1: {ams}")
    for p in ams:
        am_seen[label] = p
        if os.path.realpath(p["exe"]) != real_java:
            fail(f"{app_id}: the AM (pid {p['pid']}) runs {p['exe']}, want the real {real_java}")
        if os.path.basename(p["pexe"]) != "bash":
            fail(f"{app_id}: the AM (pid {p['pid']}) is a child of {p['pexe']}, not of the container's shell")
        if "-agentpath" in p["cmdline"] or "-javaagent" in p["cmdline"] or p["jto"]:
            fail(f"{app_id}: the AM (pid {p['pid']}) got an agent: JAVA_TOOL_OPTIONS={p['jto']}, {p['cmdline']}")
        if wrapped and p["java_home"] != jh:
            fail(f"{app_id}: the AM's JAVA_HOME is {p['java_home']}, want the wrapper's {jh}")
if len(am_seen) == 2:
    plain_am, am = am_seen["plain"], am_seen["wrapped"]
    # the same arguments and environment as the AM that the NodeManager's JDK started
    if normalized(plain_am["cmdline"])[1:] != normalized(am["cmdline"])[1:]:
        fail(f"the AM's command lines differ:\n  plain:   {plain_am['cmdline']}\n  wrapped: {am['cmdline']}")
    if plain_am["env"] != am["env"]:
        fail(f"the AM's environments differ: {sorted(set(plain_am['env']) ^ set(am['env']))}")
    print(f"AM of {app}: pid {am['pid']} in {am['container']}, JAVA_HOME={am['java_home']} (the wrapper): "
          f"runs {am['exe']} as a child of {am['pexe']}; its command line and environment names are "
          f"those of the AM of {plain_app} (no wrapper): the wrapper exec'd the real java, nothing added")

for label, app_id, wrapped in (("plain", plain_app, False), ("wrapped", app, True)):
    procs = processes(label)
    execs = executor_lines(label)
    by_pid = {p["pid"]: p for p in procs}
    backends = [p for p in procs if BACKEND in p["cmdline"] and os.path.realpath(p["exe"]) == real_java]
    if len(execs) != 2 or sorted(execs) != ["1", "2"]:
        fail(f"{app_id}: the job ran on executors {sorted(execs)}, want 1 and 2")
    for eid, (pid, ppid, pexe, home, java_home, cmdline) in sorted(execs.items()):
        p = by_pid.get(pid)
        if p is None:
            fail(f"{app_id}/{eid}: the executor's pid {pid} is not a live process of the application")
            continue
        if p["cmdline"].strip() != " ".join(cmdline):
            fail(f"{app_id}/{eid}: pid {pid} runs {p['cmdline']}, the executor said {' '.join(cmdline)}")
        if arg(p["cmdline"], "--executor-id") != eid or arg(p["cmdline"], "--app-id") != app_id:
            fail(f"{app_id}/{eid}: pid {pid}'s command line says executor {arg(p['cmdline'], '--executor-id')} of {arg(p['cmdline'], '--app-id')}")
        under_shim = is_shim(pexe) and is_shim(p["pexe"])
        if wrapped and not under_shim:
            fail(f"{app_id}/{eid}: the executor (pid {pid}) is a child of {pexe}, not of sparkshim {shim}")
        if not wrapped and os.path.basename(pexe) != "bash":
            fail(f"{app_id}/{eid}: without the wrapper, the executor (pid {pid}) is a child of {pexe}")
        if wrapped and home != jh:
            fail(f"{app_id}/{eid}: the executor's JAVA_HOME is {home}, want {jh}")
        if os.path.realpath(java_home) != os.path.realpath(jdk):
            fail(f"{app_id}/{eid}: the executor JVM's java.home is {java_home}, want the real {jdk}")
    if len(backends) != 2:
        fail(f"{app_id}: {len(backends)} live executor JVMs, want 2: {backends}")
    print(f"{label} ({app_id}): live executors " + ", ".join(
        f"{eid} pid {v[0]} child of {v[2]}" for eid, v in sorted(execs.items())))

# 3. the reports: one per executor of run 2, nothing else
docs = {}
for path in sorted(glob.glob(f"{work}/reports/*")):
    for n, line in enumerate(open(path), 1):
        try:
            docs.setdefault(path, []).append(json.loads(line))
        except ValueError as e:
            fail(f"{path}:{n}: not JSON: {e}")
templated = not any("{app_id}" in os.path.basename(p) for p in docs)
execs = executor_lines("wrapped")
finals = {}
stray = 0
for path, ds in docs.items():
    for d in ds:
        ident = d["identity"]
        key = (ident["app_id"], ident["executor_id"])
        if key[0] != app or key[1] not in execs:
            stray += 1
            fail(f"{path}: a report for app {key[0]!r} executor {key[1]!r} ({ident['command']}, pid "
                 f"{ident['pid']}): only the executors of {app} ({', '.join(sorted(execs))}) were wrapped")
            continue
        if templated and os.path.basename(path) != f"{key[0]}.{key[1]}.jsonl":
            fail(f"{path}: holds the report of {key[0]}/{key[1]}")
        if d["kind"] == "final":
            if key in finals:
                fail(f"{app}/{key[1]}: more than one final report ({finals[key][0]}, {path})")
            finals[key] = (path, d)
if stray == 0:
    print(f"reports: only from the executors of {app}; none from its AM, the driver or {plain_app}")
if not templated:
    fail("report.path's {app_id}.{executor_id}.jsonl was not expanded: "
         + ", ".join(os.path.basename(p) for p in docs))
print(f"executors launched through sparkshim ({app}):")
for eid, (pid, ppid, pexe, home, java_home, cmdline) in sorted(execs.items()):
    key = (app, eid)
    if key not in finals:
        fail(f"{app}/{eid}: no final report (executor pid {pid})")
        continue
    path, d = finals[key]
    ident = d["identity"]
    print(f"  app {app} executor {eid}: pid {ident['pid']} (parent sparkshim pid {ppid}) command "
          f"{ident['command']} mode {ident['mode']} exit {d['exit']['status'] if d.get('exit') else None} "
          f"enforced {d['enforcement']['enforced']} ({d['enforcement']['reason']}) -> {os.path.basename(path)}")
    if ident["pid"] != pid:
        fail(f"{app}/{eid}: report pid {ident['pid']}, the executor JVM's own pid is {pid}")
    if ident["command"] != cmdline[0] or os.path.realpath(ident["command"]) != real_java:
        fail(f"{app}/{eid}: report command {ident['command']}, the executor's argv[0] is {cmdline[0]}")
    if ident.get("argv") != cmdline or ident.get("argv_truncated"):
        fail(f"{app}/{eid}: report argv {ident.get('argv')} (truncated: {ident.get('argv_truncated')}), "
             f"the executor's command line is {cmdline}")
    if ident["mode"] != "wrap":
        fail(f"{app}/{eid}: mode {ident['mode']}, want wrap")
    if d["enforcement"]["enforced"]:
        fail(f"{app}/{eid}: enforced on a host whose cgroup v2 has no controllers?")
    line = " ".join(cmdline)
    print(f"    argv ({len(cmdline)} arguments, as in the report): {line[:150]}{' ...' if len(line) > 150 else ''}")

# 4. the results
plain = open(f"{work}/plain.result").read().splitlines()
wrapped = open(f"{work}/wrapped.result").read().splitlines()
print(f"result without sparkshim ({plain_app}): {len(plain)} rows, first {plain[:1]}, last {plain[-1:]}")
print(f"result with sparkshim    ({app}): {len(wrapped)} rows, first {wrapped[:1]}, last {wrapped[-1:]}")
if plain != wrapped or len(plain) != 13:
    fail("the results differ (or are not the 13 groups)")
elif failures == 0:
    print("same 13 rows with and without sparkshim")
sys.exit(1 if failures else 0)
PY

if [ "$FAILURES" -ne 0 ]; then
  echo "--- logs: $WORK (KEEP_WORK=1 keeps them)"
  grep -E 'ERROR' "$WORK/yarn/harness.log" | tail -n 10
  exit 1
fi
progress "all checks passed"
