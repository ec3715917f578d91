# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Sourced by bench/tune/cluster, run-job, loop and grid: where the harness keeps its state.
#
#   TUNE_CLUSTER   the running cluster's directory (default /tmp/sparkshim-tune-cluster):
#                  cluster.env (MASTER, SPARK_HOME, JAVA_HOME_WRAPPER, pids, the policy's
#                  saved state), the job's jar, the Master's and Worker's logs, the Worker's
#                  work dir, the reports as sparkshim writes them (one file per executor,
#                  {app_id}.{executor_id}.jsonl), Spark's local dirs
#   TUNE_JDK       the JDK (default /usr/lib/jvm/java-17-openjdk-amd64)
#   TUNE_SPARK_LINE  3.5 (default) or 4.0, for scripts/spark-dist
TUNE_SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
TUNE_DIR=$TUNE_SRC/bench/tune
TUNE_CLUSTER=${TUNE_CLUSTER:-/tmp/sparkshim-tune-cluster}
TUNE_JDK=${TUNE_JDK:-/usr/lib/jvm/java-17-openjdk-amd64}
TUNE_SPARK_LINE=${TUNE_SPARK_LINE:-3.5}
TUNE_CGROUP_PARENT=sparkshim-bench-tune
TUNE_JOBS="cpu-light mem-sort skew"

tune_say() { echo "[bench/tune $(date -u +%H:%M:%S)] $*" >&2; }
tune_die() {
  echo "bench/tune: $*" >&2
  exit 1
}

# The cluster's directory holds cluster.env, which the scripts source as root: under /tmp
# another user may take its name first. A directory (or cluster.env) that is a link, is not
# the caller's, or may be written by others is refused.
tune_trusted() { # PATH TYPE(d|f)
  local owner mode
  [ ! -L "$1" ] && [ -"$2" "$1" ] || tune_die "$1 is a link or of the wrong type: remove it (another user's?)"
  read -r owner mode < <(stat -c '%u %a' "$1")
  [ "$owner" = "$(id -u)" ] && (((8#$mode & 8#022) == 0)) ||
    tune_die "$1 belongs to uid $owner with mode $mode, not to you with no write for others: remove it"
}
if [ -e "$TUNE_CLUSTER" ] || [ -L "$TUNE_CLUSTER" ]; then
  tune_trusted "$TUNE_CLUSTER" d
  [ ! -e "$TUNE_CLUSTER/cluster.env" ] || tune_trusted "$TUNE_CLUSTER/cluster.env" f
fi

# tune_cluster_running: the cluster of $TUNE_CLUSTER is up (its Master and Worker live)
tune_cluster_running() {
  [ -f "$TUNE_CLUSTER/cluster.env" ] || return 1
  # shellcheck source=/dev/null
  (. "$TUNE_CLUSTER/cluster.env" && kill -0 "$MASTER_PID" 2>/dev/null && kill -0 "$WORKER_PID" 2>/dev/null)
}
