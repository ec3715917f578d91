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
