# SPDX-License-Identifier: Apache-2.0
# Sourced by the agent suite's scripts: $1 the agent (.so, or "" when the build found no JDK
# headers), $2 the JDK home. Sets AGENT, JAVA, JAVAC, WORK (removed on exit) and helpers.
set -euo pipefail

AGENT=${1:-}
JDK=${2:-}
if [ -z "$AGENT" ] || [ -z "$JDK" ]; then
  echo "SKIP: no JDK headers (jvmti.h) were found when configuring: the agent was not built"
  exit 77
fi
JAVA=$JDK/bin/java
JAVAC=$JDK/bin/javac
for tool in "$JAVA" "$JAVAC"; do
  if [ ! -x "$tool" ]; then
    echo "SKIP: $tool is missing (scripts/deps installs openjdk-17-jdk-headless)"
    exit 77
  fi
done
WORK=$(mktemp -d /tmp/sparkshim-agent-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
FAILURES=0

fail() {
  echo "FAIL: $*"
  FAILURES=$((FAILURES + 1))
}

pass() {
  echo "ok: $*"
}

finish() {
  if [ "$FAILURES" -ne 0 ]; then
    echo "$FAILURES check(s) failed"
    exit 1
  fi
  echo "all checks passed"
}

# The value of key=value in a line of words.
field() {
  local line=$1 key=$2
  printf '%s\n' "$line" | tr ' ' '\n' | sed -n "s/^$key=//p" | head -n 1
}

# spark_setup SPARK_JARS_SCRIPT LINE JAVA_SOURCE: fetch (or find cached) the jars of Spark
# LINE, skip (77) when they cannot be fetched, compile JAVA_SOURCE against them into
# $WORK/classes. Sets JARS (the jar directory) and OPENS (the --add-opens options Spark's
# launcher adds on Java 17: JavaModuleOptions of 3.5 and 4.0, united).
spark_setup() {
  local script=$1 line=$2 source=$3 rc=0
  JARS=$("$script" "$line" 2>"$WORK/jars.err") || rc=$?
  if [ "$rc" -eq 77 ]; then
    echo "SKIP: cannot fetch Spark $line: $(cat "$WORK/jars.err")"
    exit 77
  elif [ "$rc" -ne 0 ]; then
    echo "FAIL: scripts/spark-jars $line: $(cat "$WORK/jars.err")"
    exit 1
  fi
  "$JAVAC" -d "$WORK/classes" -cp "$JARS/*" "$source"
  mapfile -t OPENS < <("$(dirname "$script")/spark-java-opts")
}
