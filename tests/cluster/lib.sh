# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Shared by the cluster suites (standalone, YARN, Kubernetes): they test the installed
# Debian package, not the build tree. Source this file, then call install_package:
#
#   . "$SRC/tests/cluster/lib.sh"
#   install_package                # under set -e: a 77 ends the suite as skipped
#   "$SPARKSHIM" java-home ...     # /usr/bin/sparkshim
#
# install_package
#   Builds the package of this source tree with scripts/package (its release build in
#   build-package/, the .deb cached in build-package/deb/ and rebuilt only when what it
#   would contain changed) and installs it with `dpkg -i`, unless the installed sparkshim
#   already is that package (same md5sums and packaged conffiles, and `dpkg --verify` finds
#   no file changed but the conffiles). dpkg never prompts: a policy a suite or the
#   admin changed is kept (--force-confold). Sets and exports:
#     SPARKSHIM=/usr/bin/sparkshim
#     AGENT_LIB=the installed agent, /usr/lib/<multiarch>/sparkshim/libsparkshim-agent.so
#     SPARKSHIM_DEB=the .deb that was installed
#   Returns 0; 77 after printing "SKIP: reason" when not root or dpkg is missing; 1 after
#   printing "FAIL: reason" when the package cannot be built or installed.
#
#   It also takes a shared lock on /run/lock/sparkshim-package.lock, held until the
#   calling shell exits (and by the processes it starts, which inherit the descriptor):
#   concurrent suites share one installed package, and installing a different build, or
#   the package suite's dpkg -r/-P, waits until no suite uses the installed one (at most
#   SPARKSHIM_PACKAGE_LOCK_WAIT seconds, default 900, with a progress line a minute).

# suite_helpers NAME: defines progress (a line "[NAME +Ns] ..."), skip (prints SKIP: and
# exits 77) and fail (prints FAIL: and counts in FAILURES) for a suite that has none of its own.
suite_helpers() {
  SUITE_NAME=$1
  T0=$(date +%s)
  FAILURES=0
  progress() { echo "[$SUITE_NAME +$(($(date +%s) - T0))s] $*"; }
  skip() {
    echo "SKIP: $*"
    exit 77
  }
  fail() {
    echo "FAIL: $*"
    FAILURES=$((FAILURES + 1))
  }
}

# need_jdk TOOL...: the suite skipped unless the JDK found when configuring ($JDK) has
# bin/TOOL for each (call after suite_helpers)
need_jdk() {
  local tool
  [ -n "${JDK:-}" ] || skip "no JDK was found when configuring"
  for tool in "$@"; do
    [ -x "$JDK/bin/$tool" ] || skip "$JDK/bin/$tool is missing (scripts/deps installs openjdk-17-jdk-headless)"
  done
}

# use_package: install_package, the suite ending as skipped when it said 77 (it said why)
# and as failed when it could not build or install the package
use_package() {
  local rc=0
  install_package || rc=$?
  [ "$rc" != 77 ] || exit 77
  [ "$rc" = 0 ] || { echo "FAIL: install_package exited $rc"; exit 1; }
}

SPARKSHIM_PACKAGE_LOCK=/run/lock/sparkshim-package.lock
SPARKSHIM_PACKAGE_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# _sparkshim_package_lock MODE (-s or -x): wait for the lock, saying so every minute
_sparkshim_package_lock() {
  local mode=$1 waited=0 limit=${SPARKSHIM_PACKAGE_LOCK_WAIT:-900}
  if [ -z "${SPARKSHIM_PACKAGE_LOCK_FD:-}" ]; then
    exec {SPARKSHIM_PACKAGE_LOCK_FD}>>"$SPARKSHIM_PACKAGE_LOCK" || return 1
  fi
  until flock "$mode" -w 60 "$SPARKSHIM_PACKAGE_LOCK_FD"; do
    waited=$((waited + 60))
    if [ "$waited" -ge "$limit" ]; then
      echo "FAIL: $SPARKSHIM_PACKAGE_LOCK: still held after $waited s (another suite using the installed package?)"
      return 1
    fi
    echo "install_package: waiting for $SPARKSHIM_PACKAGE_LOCK (another suite uses the installed package; ${waited}s)"
  done
}

# _sparkshim_package_is_installed DEB: the installed sparkshim is DEB, unchanged
_sparkshim_package_is_installed() {
  local deb=$1 version
  version=$(dpkg-deb -f "$deb" Version) || return 1
  [ "$(dpkg-query -W -f='${db:Status-Status} ${Version}' sparkshim 2>/dev/null)" = "installed $version" ] ||
    return 1
  cmp -s <(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./md5sums) \
    <(dpkg-query --control-show sparkshim md5sums 2>/dev/null) || return 1
  # the conffiles as packaged (dpkg records their md5 at installation; edits are kept)
  local conffile want
  while read -r conffile; do
    want=$(dpkg-deb --fsys-tarfile "$deb" | tar -xO ".$conffile" | md5sum | cut -d' ' -f1)
    dpkg-query -W -f='${Conffiles}\n' sparkshim | grep -q "^ $conffile $want\$" || return 1
  done < <(dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles)
  # a changed file (but the conffiles, which suites and admins edit) means reinstall
  ! dpkg --verify sparkshim 2>/dev/null | grep -v '^.\{9\} c ' | grep -q .
}

install_package() {
  local deb rc=0 try tool ok=0
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP: not root: installing the sparkshim package (dpkg -i) needs root"
    return 77
  fi
  for tool in dpkg dpkg-deb dpkg-query; do
    if ! command -v "$tool" >/dev/null; then
      echo "SKIP: $tool is missing: the suite tests the installed Debian package"
      return 77
    fi
  done

  echo "install_package: building the package (scripts/package; a few seconds when cached)"
  deb=$("$SPARKSHIM_PACKAGE_SRC/scripts/package") || rc=$?
  if [ "$rc" -eq 77 ]; then
    echo "SKIP: scripts/package cannot build the package here (exit 77)"
    return 77
  fi
  if [ "$rc" -ne 0 ] || [ ! -f "$deb" ]; then
    echo "FAIL: scripts/package exited $rc"
    return 1
  fi

  # Shared while the installed package is the one wanted; exclusive to replace it. A
  # lock converted between the two may be lost for an instant (flock(2)): check again.
  for try in 1 2 3 4; do
    _sparkshim_package_lock -s || return 1
    if _sparkshim_package_is_installed "$deb"; then
      ok=1
      break
    fi
    [ "$try" -lt 4 ] || break
    flock -u "$SPARKSHIM_PACKAGE_LOCK_FD"
    _sparkshim_package_lock -x || return 1
    if ! _sparkshim_package_is_installed "$deb"; then
      echo "install_package: dpkg -i $deb"
      if ! dpkg -i --force-confdef --force-confold "$deb" </dev/null >/dev/null; then
        echo "FAIL: dpkg -i $deb failed"
        flock -u "$SPARKSHIM_PACKAGE_LOCK_FD"
        return 1
      fi
    fi
  done
  if [ "$ok" -ne 1 ]; then
    echo "FAIL: the installed sparkshim keeps being replaced by another build"
    flock -u "$SPARKSHIM_PACKAGE_LOCK_FD"
    return 1
  fi

  SPARKSHIM=/usr/bin/sparkshim
  AGENT_LIB=$(dpkg-query -L sparkshim | grep '/sparkshim/libsparkshim-agent\.so$' | head -1)
  SPARKSHIM_DEB=$deb
  if [ ! -x "$SPARKSHIM" ] || [ ! -f "$AGENT_LIB" ]; then
    echo "FAIL: the installed package has no $SPARKSHIM or agent library"
    return 1
  fi
  echo "install_package: using $("$SPARKSHIM" --version) from $deb (agent $AGENT_LIB)"
  export SPARKSHIM AGENT_LIB SPARKSHIM_DEB
}

# install_test_policy CGROUP_PARENT REPORT_DIR AGENT_JSON SAVE_DIR [EXTRA_JSON]
#   The java personality reads /etc/sparkshim/policy.json only: a suite installs its own
#   for the run (fail_mode open, grace 5 s, CGROUP_PARENT, one report file per executor
#   in REPORT_DIR named after its app and executor id, the "agent" section AGENT_JSON, and
#   the top-level sections of EXTRA_JSON, e.g. a "tuner") under an exclusive lock on
#   /run/lock/sparkshim-test-policy.lock, held until the calling shell exits. Take it
#   after install_package (the other order deadlocks with a suite that waits for this lock
#   while holding the package's). What was there is saved
#   in SAVE_DIR; restore_test_policy (from the suite's EXIT trap) puts it back. Waits in
#   5 s steps (a TERM is handled between them), saying so every minute, at most 900 s.
SPARKSHIM_TEST_POLICY_STATE=untouched # untouched | created-dir | created-file | replaced
_sparkshim_say() {
  if declare -F progress >/dev/null; then progress "$*"; else echo "$*"; fi
}
install_test_policy() {
  local parent=$1 reports=$2 agent=$3 save=$4 waited=0
  local policy=/etc/sparkshim/policy.json lock=/run/lock/sparkshim-test-policy.lock
  exec {SPARKSHIM_TEST_POLICY_FD}>>"$lock" || return 1
  until flock -w 5 "$SPARKSHIM_TEST_POLICY_FD"; do
    waited=$((waited + 5))
    if [ "$waited" -ge 900 ]; then
      echo "FAIL: $lock: still held after $waited s"
      return 1
    fi
    [ $((waited % 60)) != 0 ] || _sparkshim_say "waiting for $lock: another suite has its policy installed (${waited}s)"
  done
  SPARKSHIM_TEST_POLICY_SAVE=$save/policy.saved
  if [ -e "$policy" ]; then
    cp -a "$policy" "$SPARKSHIM_TEST_POLICY_SAVE"
    SPARKSHIM_TEST_POLICY_STATE=replaced
  elif [ -d /etc/sparkshim ]; then
    SPARKSHIM_TEST_POLICY_STATE=created-file
  else
    mkdir -m 0755 /etc/sparkshim
    SPARKSHIM_TEST_POLICY_STATE=created-dir
  fi
  write_test_policy "$save/policy.new" "$parent" "$reports" "$agent" "${5:-{\}}" || return 1
  install -m 0644 -o root -g root "$save/policy.new" "$policy.tmp.$$" || return 1
  mv -f "$policy.tmp.$$" "$policy" || return 1
  _sparkshim_say "installed the test policy at $policy: $(tr -d '\n ' <"$policy")"
}

# write_test_policy FILE CGROUP_PARENT REPORTS AGENT_JSON [EXTRA_JSON]: the test policy
# install_test_policy installs, written to FILE (root's, 0644) instead: a suite whose
# executors take it from a java home (`java-home --policy FILE`, make_java_home FILE)
# needs neither /etc/sparkshim/policy.json nor its lock, so that it runs beside the suites
# that do.
write_test_policy() {
  python3 -P - "$1" "$3" "$2" "$4" "${5:-{\}}" <<'PY' || return 1
import json, sys
out, reports, parent, agent, extra = sys.argv[1:6]
policy = {
    "version": 1,
    "fail_mode": "open",
    "grace_seconds": 5,
    "cgroup": {"parent": parent},
    "report": {"path": reports + "/{app_id}.{executor_id}.jsonl", "interval_seconds": 2},
    "agent": json.loads(agent),
}
policy.update(json.loads(extra))
with open(out, "w") as f:
    json.dump(policy, f, indent=2)
    f.write("\n")
PY
  chmod 0644 "$1"
}

# restore_test_policy: what install_test_policy replaced, back as it was (or nothing there).
restore_test_policy() {
  local policy=/etc/sparkshim/policy.json
  case "$SPARKSHIM_TEST_POLICY_STATE" in
    replaced) mv -f "$SPARKSHIM_TEST_POLICY_SAVE" "$policy" ;;
    created-file) rm -f "$policy" ;;
    created-dir) rm -f "$policy"; rmdir /etc/sparkshim 2>/dev/null ;;
  esac
  SPARKSHIM_TEST_POLICY_STATE=untouched
}

# cleanup_suite WORK CGROUP_PARENT: the end of a suite's EXIT trap, after it stopped what
# it started: any process left with its working directory in WORK (an executor, a
# container) is killed, the suite's parent cgroup removed (sparkshim removes each leaf),
# the policy restored, WORK removed (kept with KEEP_WORK=1).
cleanup_suite() {
  local work=$1 parent=$2 pid cg left=()
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    case "$(readlink "/proc/$pid/cwd" 2>/dev/null)" in
      "$work"/*) left+=("$pid") ;;
    esac
  done
  if [ ${#left[@]} -gt 0 ]; then
    echo "cleanup: killing processes left in $work: ${left[*]}"
    kill -KILL "${left[@]}" 2>/dev/null
    sleep 1
  fi
  for cg in $(awk '$3 == "cgroup2" { print $2 }' /proc/self/mounts); do
    [ -d "$cg/$parent" ] && rmdir "$cg/$parent" 2>/dev/null
  done
  restore_test_policy
  if [ -n "${KEEP_WORK:-}" ]; then echo "kept $work"; else rm -rf "$work"; fi
}

# wait_log FILE REGEX SECONDS PID: the first match of REGEX in FILE (the process must live)
wait_log() {
  local file=$1 regex=$2 seconds=$3 pid=$4 i
  for ((i = 0; i < seconds * 5; i++)); do
    if grep -qE "$regex" "$file" 2>/dev/null; then
      grep -oE "$regex" "$file" | head -n 1
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "FAIL: no '$regex' in $file after ${seconds}s:" >&2
  grep -vE '^\s+at ' "$file" | tail -n 20 >&2
  return 1
}

# start_master: a Spark standalone Master on 127.0.0.1 (ephemeral ports), its log in
# $WORK/logs/master.log, its pid appended to PIDS; sets MASTER (its spark:// URL).
# shellcheck disable=SC2034,SC2153 # MASTER is the caller's; WORK and SPARK_HOME are its too
start_master() {
  progress "starting the Master"
  "$SPARK_HOME/bin/spark-class" org.apache.spark.deploy.master.Master \
    --host 127.0.0.1 --port 0 --webui-port 0 >"$WORK/logs/master.log" 2>&1 &
  PIDS+=($!)
  MASTER=$(wait_log "$WORK/logs/master.log" 'spark://127\.0\.0\.1:[0-9]+' 120 "${PIDS[0]}") || return 1
}

# spark_dist LINE: the distribution of Spark LINE (scripts/spark-dist; skips when it cannot
# be fetched) as SPARK_HOME, with SPARK_SCALA_VERSION, an empty SPARK_CONF_DIR ($WORK/conf:
# nothing from the machine's Spark configuration) and SPARK_LOCAL_IP exported; sets VERSION.
# shellcheck disable=SC2034,SC2153 # VERSION is the caller's; WORK and SRC are its too
spark_dist() {
  local rc=0
  SPARK_HOME=$("$SRC/scripts/spark-dist" "$1" 2>"$WORK/dist.err") || rc=$?
  if [ "$rc" = 77 ]; then
    skip "cannot fetch Spark $1: $(cat "$WORK/dist.err")"
  elif [ "$rc" != 0 ]; then
    echo "FAIL: scripts/spark-dist $1: $(cat "$WORK/dist.err")"
    exit 1
  fi
  VERSION=$(basename "$SPARK_HOME")
  progress "Spark $VERSION from $SPARK_HOME"
  SPARK_SCALA_VERSION=$(cat "$SPARK_HOME/.scala")
  export SPARK_HOME SPARK_SCALA_VERSION SPARK_CONF_DIR=$WORK/conf SPARK_LOCAL_IP=127.0.0.1
}

# make_java_home [POLICY]: JH=$WORK/java-home, made by `$SPARKSHIM java-home --jdk $JDK`
# (bin/java the installed sparkshim), with `--policy POLICY` when given.
# shellcheck disable=SC2034,SC2153 # JH is the caller's; WORK, SPARKSHIM and JDK are its too
make_java_home() {
  JH=$WORK/java-home
  local with=()
  [ -z "${1:-}" ] || with=(--policy "$1")
  if ! "$SPARKSHIM" java-home --jdk "$JDK" "${with[@]}" "$JH" >"$WORK/java-home.out" 2>&1; then
    echo "FAIL: $SPARKSHIM java-home --jdk $JDK ${with[*]} $JH: $(cat "$WORK/java-home.out")"
    return 1
  fi
  [ -x "$JH/bin/java" ] || { echo "FAIL: sparkshim java-home made no $JH/bin/java"; return 1; }
}
