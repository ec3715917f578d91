#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A real Spark History Server (scripts/spark-dist's 3.5, its own log directory, loopback) as
# a source of `sparkshim tune-service` (tuner.service.history_servers, issue 23): the
# service lists the completed applications over the REST API, fetches each attempt's logs
# as the server zips them (/api/v1/applications/<id>/logs), and stores the runs as the
# policy's owner's:
#   - owner 4242: both logs (plain and zstd) read, the runs uid 4242's, the job published
#     in 4242's directory; a second pass reads nothing (a checkpoint per attempt);
#   - a log added later: only it is read by the next pass; a rolling log (the server's zip
#     of its directory) is read as one;
#   - owner "spark_user": an attempt whose sparkUser is root is skipped (never root's),
#     one whose sparkUser is nobody is uid 65534's;
#   - a server that is down: the pass warns and exits 0; the next one tries again.
#
# Usage: history-server.sh SPARKSHIM_TUNER SOURCE_ROOT JDK_HOME
set -euo pipefail
TUNER=$(cd "$(dirname "${1:?usage: history-server.sh SPARKSHIM_TUNER SOURCE_ROOT JDK_HOME}")" && pwd)/$(basename "$1")
SRC=${2:?}
JDK=${3:-}
FIX=$SRC/tests/unit/fixtures/eventlog
T0=$(date +%s)
progress() { echo "[history-server +$(($(date +%s) - T0))s] $*"; }
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
[ "$(id -u)" = 0 ] || skip "not root: the service runs as root"
[ -n "$JDK" ] && [ -x "$JDK/bin/java" ] || skip "no JDK (scripts/deps installs openjdk-17-jdk-headless)"

WORK=$(mktemp -d /tmp/sparkshim-hs-test.XXXXXX)
chmod 0755 "$WORK"
HS=
cleanup() {
  local rc=$?
  set +e
  [ -n "$HS" ] && kill "$HS" 2>/dev/null && wait "$HS" 2>/dev/null
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$WORK"

rc=0
SPARK_HOME=$("$SRC/scripts/spark-dist" 3.5 2>"$WORK/dist.err") || rc=$?
[ "$rc" = 77 ] && skip "cannot fetch Spark 3.5: $(cat "$WORK/dist.err")"
[ "$rc" = 0 ] || fail "scripts/spark-dist 3.5: $(cat "$WORK/dist.err")"
export SPARK_HOME JAVA_HOME=$JDK SPARK_CONF_DIR=$WORK/conf SPARK_LOCAL_IP=127.0.0.1
mkdir -p "$SPARK_CONF_DIR" logs

# the logs: real Spark 3.5 event logs (their one failed task attempt dropped: successful runs)
log() { # FIXTURE APP_ID USER NAME
  sed -e "s/local-1796317883102/$2/g" -e "s/\"User\":\"root\"/\"User\":\"$3\"/" "$FIX/$1" |
    grep -v '"Task End Reason":{"Reason":"ExceptionFailure"' >"logs/$4"
}
log spark-3.5.9-plain local-1796317880001 root local-1796317880001
cp "$FIX/spark-3.5.9-zstd.zstd" logs/local-1796317893988.zstd

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$port
SPARK_HISTORY_OPTS="-Dspark.history.fs.logDirectory=file:$WORK/logs -Dspark.history.ui.port=$port -Dspark.history.fs.update.interval=1s -Dspark.ui.host=127.0.0.1" \
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.history.HistoryServer >hs.log 2>&1 &
HS=$!
listed() { # N: until the server lists N completed applications
  for _ in $(seq 1 600); do
    kill -0 "$HS" 2>/dev/null || fail "the History Server exited: $(tail -5 hs.log)"
    n=$(curl -sf "$URL/api/v1/applications?status=completed" 2>/dev/null | grep -c '"id"' || true)
    [ "$n" -ge "$1" ] && return 0
    sleep 0.2
  done
  fail "the History Server did not list $1 applications: $(tail -5 hs.log)"
}
listed 2
progress "History Server of Spark $(basename "$SPARK_HOME") at $URL lists 2 applications"

policy() { # NAME OWNER_JSON [URL]
  cat >"$1.json" <<EOF
{ "version": 1, "tuner": { "db": "$WORK/$1.db",
  "service": { "history_servers": [ { "url": "${3:-$URL}", "owner": $2 } ], "publish_dir": "$WORK/pub" } } }
EOF
  chmod 0644 "$1.json"
}
pass() { # POLICY OUT
  "$TUNER" tune-service --once --force --verbose --policy "$1.json" >"$2" 2>&1 ||
    fail "$1: the pass exited $?: $(cat "$2")"
  progress "$1: $(tr '\n' ' ' <"$2")"
}

policy fixed 4242
pass fixed p1.out
grep -q '2 files, 0 known, 2 read, 0 refused' p1.out || fail "pass 1: $(cat p1.out)"
"$TUNER" report --db fixed.db --job el-default --owner 4242 --json | grep -q '"app_id":"local-1796317880001"' ||
  fail "the plain log's run is not uid 4242's"
"$TUNER" report --db fixed.db --job el-zstd --owner 4242 --json | grep -q '"app_id":"local-1796317893988"' ||
  fail "the zstd log's run is not uid 4242's"
[ -f pub/4242/el-default.json ] || fail "el-default not published for uid 4242"
pass fixed p2.out
grep -q '2 files, 2 known, 0 read' p2.out || fail "pass 2 read again: $(cat p2.out)"

log spark-3.5.9-plain local-1796317880002 nobody local-1796317880002
listed 3
pass fixed p3.out
grep -q '3 files, 2 known, 1 read' p3.out || fail "pass 3: $(cat p3.out)"

# a rolling event log (spark.eventLog.rolling.enabled): the server zips its directory entry
# and its files; read as one log
mkdir logs/eventlog_v2_local-1796317880003
sed -e "s/local-1796317883102/local-1796317880003/g" "$FIX/spark-3.5.9-plain" |
  grep -v '"Task End Reason":{"Reason":"ExceptionFailure"' >logs/eventlog_v2_local-1796317880003/events_1_local-1796317880003
: >logs/eventlog_v2_local-1796317880003/appstatus_local-1796317880003
listed 4
pass fixed p3b.out
grep -q '4 files, 3 known, 1 read, 0 refused' p3b.out || fail "the rolling log: $(cat p3b.out)"
"$TUNER" report --db fixed.db --job el-default --owner 4242 --json | grep -q '"app_id":"local-1796317880003"' ||
  fail "the rolling log's run is not stored"

policy user '"spark_user"'
pass user p4.out
grep -q '1 read' p4.out && grep -q '3 History Server attempts skipped' p4.out || fail "spark_user: $(cat p4.out)"
"$TUNER" report --db user.db --job el-default --owner 65534 --json | grep -q '"app_id":"local-1796317880002"' ||
  fail "the log whose sparkUser is nobody is not uid 65534's"

policy down 4242 "http://127.0.0.1:1"
pass down p5.out
grep -q 'History Server http://127.0.0.1:1/api/v1/applications.*tried again at the next pass' p5.out ||
  fail "a server that is down: $(cat p5.out)"
progress "all checks passed"
