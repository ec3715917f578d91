#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Kubernetes feature step (sparkshim-k8s(7)) in Spark's own KubernetesExecutorBuilder:
# executor pods are built from a KubernetesExecutorConf in a JVM (spark-kubernetes jars
# from Maven Central, no cluster), with and without
# spark.kubernetes.executor.pod.featureSteps=sparkshim.k8s.SparkshimExecutorFeatureStep,
# and for every case the container's cpu request/limit and memory request/limit must be
# sparkshim plan's, the command `sparkshim run --init ... -- /opt/entrypoint.sh` exactly
# when the policy has kubernetes.init (and then the plan that command makes in the pod,
# from the container's environment and its flags, is the pod's), and the rest of Spark's
# pod unchanged. A sparkshim that is missing, refuses the settings, hangs or prints no plan
# must fail the pod's build with one message saying so.
#
# Usage: k8s.sh SPARKSHIM SOURCE_DIR BUILD_DIR LINE   (LINE: 3.5 or 4.0)
set -euo pipefail

SHIM=$1
SRC=$2
BUILD=$3
LINE=$4
JAR=$BUILD/k8s/sparkshim-k8s.jar

skip() {
  echo "SKIP: $*"
  exit 77
}

# The installed package is what is tested once tests/cluster/lib.sh exists (the package
# helper's install_package: dpkg -i of scripts/package's .deb, 77 when not root/no dpkg).
# SWITCH: set USE_PACKAGE=0 to test the build tree instead of /usr/bin/sparkshim.
USE_PACKAGE=${USE_PACKAGE:-1}
if [ "$USE_PACKAGE" = 1 ] && [ -f "$SRC/tests/cluster/lib.sh" ]; then
  # shellcheck source=/dev/null
  . "$SRC/tests/cluster/lib.sh"
  echo "k8s-$LINE: installing the package"
  install_package
  SHIM=${SPARKSHIM:-/usr/bin/sparkshim}
  JAR=/usr/share/java/sparkshim-k8s.jar
  [ -f "$JAR" ] || skip "the installed package has no $JAR (scripts/package could not build it here)"
fi
[ -x "$SHIM" ] || skip "no sparkshim at $SHIM"
command -v javac >/dev/null || skip "no JDK (javac) installed"

echo "k8s-$LINE: fetching the spark-kubernetes jars (cached under /var/tmp/sparkshim-spark-k8s)"
rc=0
JARS=$("$SRC/k8s/spark-k8s-jars" "$LINE") || rc=$?
[ "$rc" -eq 77 ] && skip "the spark-kubernetes $LINE jars cannot be fetched"
[ "$rc" -eq 0 ] || exit "$rc"
if [ "$JAR" = "$BUILD/k8s/sparkshim-k8s.jar" ]; then
  echo "k8s-$LINE: building $JAR"
  rc=0
  "$SRC/k8s/build.sh" "$JAR" >/dev/null || rc=$?
  [ "$rc" -eq 77 ] && skip "sparkshim-k8s.jar cannot be built (no Spark 3.5 jars or no JDK)"
  [ "$rc" -eq 0 ] || exit "$rc"
fi
[ -f "$JAR" ] || skip "no $JAR"
echo "k8s-$LINE: Spark $(basename "$JARS") from $JARS; sparkshim $SHIM; step $JAR"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
javac -nowarn -encoding UTF-8 -cp "$JARS/*" -d "$work/classes" "$SRC/tests/cluster/K8sExecutorPod.java"

# Policies: root-owned and not group/other writable, as sparkshim wants them under root.
umask 022
printf '{ "version": 1 }\n' >"$work/open.json"
printf '{ "version": 1, "kubernetes": { "init": true } }\n' >"$work/init.json"
printf '{ "version": 1, "memory": { "overhead": { "min": "512m" } }, "cpu": { "overcommit": "unlimited" } }\n' \
  >"$work/unlimited.json"
# users may set only millicores and the burst ratio: the executor's cores and heap are not
# overrides (the step passes them in the container's environment, as the pod has them)
printf '{ "version": 1, "overrides": ["millicores", "burst_ratio"], "kubernetes": { "init": true } }\n' \
  >"$work/restrictive.json"

STEP=spark.kubernetes.executor.pod.featureSteps=sparkshim.k8s.SparkshimExecutorFeatureStep
COMMON=("$STEP" "spark.sparkshim.binary=$SHIM" spark.local.dir=/var/data/spark-local)

# name | policy | Spark conf (tab-separated in the cases file) | sparkshim plan's flags for it
# [| the policy to compute the expected plan with, when the flags are overrides it forbids]
cases=(
  "burst0.5-millicores|open|spark.executor.memory=2g spark.executor.cores=2 spark.executor.millicores=1500 spark.executor.memoryBurst.ratio=0.5|--memory 2g --cores 2 --millicores 1500 --burst-ratio 0.5"
  "burst0-millicores|open|spark.executor.memory=2g spark.executor.cores=2 spark.executor.millicores=1500 spark.executor.memoryBurst.ratio=0|--memory 2g --cores 2 --millicores 1500 --burst-ratio 0"
  "burst0.5-no-millicores|open|spark.executor.memory=4g spark.executor.cores=4 spark.executor.memoryBurst.ratio=0.5|--memory 4g --cores 4 --burst-ratio 0.5"
  "burst0-no-millicores|open|spark.executor.memory=1g spark.executor.cores=1|--memory 1g --cores 1"
  "request-cores-overhead|open|spark.executor.memory=1g spark.executor.cores=2 spark.kubernetes.executor.request.cores=500m spark.executor.memoryOverhead=1g spark.executor.memoryBurst.ratio=0.5|--memory 1g --cores 2 --millicores 500m --memory-overhead 1g --burst-ratio 0.5"
  "whole-request-cores-limit|open|spark.executor.memory=1g spark.executor.cores=1 spark.kubernetes.executor.request.cores=2 spark.kubernetes.executor.limit.cores=3|--memory 1g --cores 1 --millicores 2.0 --limit-millicores 3.0"
  "offheap-pyspark|open|spark.executor.memory=2g spark.executor.cores=2 spark.memory.offHeap.enabled=true spark.memory.offHeap.size=512m spark.executor.pyspark.memory=256m spark.executor.memoryBurst.ratio=0.5|--memory 2g --cores 2 --offheap 512m --pyspark-memory 256m --burst-ratio 0.5"
  "unlimited-cpu|unlimited|spark.executor.memory=2g spark.executor.cores=2 spark.executor.millicores=1500|--memory 2g --cores 2 --millicores 1500"
  "init-burst0.5|init|spark.executor.memory=2g spark.executor.cores=2 spark.executor.millicores=1500 spark.executor.memoryBurst.ratio=0.5|--memory 2g --cores 2 --millicores 1500 --burst-ratio 0.5"
  "init-burst0-no-millicores|init|spark.executor.memory=1g spark.executor.cores=1|--memory 1g --cores 1"
  "restrictive-policy|restrictive|spark.executor.memory=3g spark.executor.cores=3 spark.executor.millicores=2500 spark.executor.memoryBurst.ratio=0.25|--memory 3g --cores 3 --millicores 2500 --burst-ratio 0.25|init"
)
: >"$work/cases"
for c in "${cases[@]}"; do
  IFS='|' read -r name policy conf _ <<<"$c"
  line=$name
  for kv in $conf "${COMMON[@]}" "spark.sparkshim.policy=$work/$policy.json"; do line+=$'\t'$kv; done
  echo "$line" >>"$work/cases"
done
# failures: sparkshim missing, and sparkshim refusing a setting (burst ratio above 1) ...
printf 'fail-no-sparkshim\tspark.executor.memory=1g\t%s\tspark.sparkshim.binary=%s\tspark.sparkshim.policy=%s\n' \
  "$STEP" "$work/no-such-sparkshim" "$work/open.json" >>"$work/cases"
printf 'fail-refused\tspark.executor.memory=1g\tspark.executor.memoryBurst.ratio=1.5\t%s\tspark.sparkshim.binary=%s\tspark.sparkshim.policy=%s\n' \
  "$STEP" "$SHIM" "$work/open.json" >>"$work/cases"
# ... a sparkshim that hangs (the step's timeout), and one that prints no plan
printf '#!/bin/sh\nexec sleep 60\n' >"$work/hung-sparkshim"
printf '#!/bin/sh\necho "sparkshim 0.0.1"\n' >"$work/old-sparkshim"
chmod 755 "$work/hung-sparkshim" "$work/old-sparkshim"
printf 'fail-hung\tspark.executor.memory=1g\t%s\tspark.sparkshim.binary=%s\tspark.sparkshim.plan.timeoutSeconds=1\n' \
  "$STEP" "$work/hung-sparkshim" >>"$work/cases"
printf 'fail-no-plan\tspark.executor.memory=1g\t%s\tspark.sparkshim.binary=%s\n' \
  "$STEP" "$work/old-sparkshim" >>"$work/cases"
printf 'fail-no-output\tspark.executor.memory=1g\t%s\tspark.sparkshim.binary=%s\n' \
  "$STEP" "$(type -P true)" >>"$work/cases"

echo "k8s-$LINE: building ${#cases[@]} executor pods (and 5 that must fail) with Spark's KubernetesExecutorBuilder"
timeout 300 java -cp "$JARS/*:$JAR:$work/classes" K8sExecutorPod "$work/cases" \
  >"$work/out" 2>"$work/err" || {
  echo "FAIL: the pod builder failed:"
  tail -n 30 "$work/err"
  exit 1
}

fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
field() { # field NAME LINE
  sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"
}

for c in "${cases[@]}"; do
  IFS='|' read -r name policy _ flags expect_policy <<<"$c"
  got=$(grep "^[A-Z]* $name " "$work/out" || true)
  echo "$got"
  if [[ $got != "POD $name "* ]]; then
    fail "$name: no pod built"
    continue
  fi
  # shellcheck disable=SC2086 # the flags are words
  plan=$(env -i "$SHIM" plan --format json --policy "$work/${expect_policy:-$policy}.json" $flags)
  want_cpu_req=$(jq -r .cpu.request_millicores <<<"$plan")
  want_cpu_lim=$(jq -r '.cpu.limit_millicores // "none"' <<<"$plan")
  want_mem_req=$(jq -r .memory.request_bytes <<<"$plan")
  want_mem_lim=$(jq -r .memory.limit_bytes <<<"$plan")
  want_init=$(jq -r '.kubernetes.init' <<<"$plan")
  echo "  sparkshim plan $flags: cpu $want_cpu_req/$want_cpu_lim m, memory $want_mem_req/$want_mem_lim bytes, init $want_init"
  [ "$(field cpu.request "$got")" = "$want_cpu_req" ] || fail "$name: cpu request $(field cpu.request "$got"), the plan's $want_cpu_req"
  [ "$(field cpu.limit "$got")" = "$want_cpu_lim" ] || fail "$name: cpu limit $(field cpu.limit "$got"), the plan's $want_cpu_lim"
  [ "$(field memory.request "$got")" = "$want_mem_req" ] || fail "$name: memory request $(field memory.request "$got"), the plan's $want_mem_req"
  [ "$(field memory.limit "$got")" = "$want_mem_lim" ] || fail "$name: memory limit $(field memory.limit "$got"), the plan's $want_mem_lim"
  [ "$(field rest "$got")" = same ] || fail "$name: the step changed more of Spark's pod than the resources and the command: ${got#* rest=}"
  args=$(field args "$got")
  [ "$args" = '["executor"]' ] || fail "$name: container args $args, Spark's are [\"executor\"]"
  cmd=$(field command "$got")
  if [ "$want_init" = true ]; then
    # the step's flags for the conf (cores and memory come from the pod's environment)
    want='["/usr/bin/sparkshim","run","--init",'
    for w in $(sed 's/--memory [^ ]* //; s/--cores [^ ]*//' <<<"$flags"); do want+="\"$w\","; done
    want+='"--","/opt/entrypoint.sh"]'
    [ "$cmd" = "$want" ] || fail "$name: container command $cmd, wanted $want"
    # what `sparkshim run --init` plans in that container: its environment, its flags
    mapfile -t penv < <(field env "$got" | jq -r 'to_entries[] | "\(.key)=\(.value)"')
    mapfile -t pflags < <(jq -r '.[index("--init") + 1:index("--")][]' <<<"$cmd")
    inpod=$(env -i "${penv[@]}" "$SHIM" plan --format json --policy "$work/$policy.json" "${pflags[@]}" |
      jq -r '"\(.cpu.request_millicores) \(.cpu.limit_millicores // "none") \(.memory.request_bytes) \(.memory.limit_bytes)"')
    echo "  in the pod: SPARK_EXECUTOR_MEMORY=$(field env "$got" | jq -r .SPARK_EXECUTOR_MEMORY) SPARK_EXECUTOR_CORES=$(field env "$got" | jq -r .SPARK_EXECUTOR_CORES) + ${pflags[*]}: $inpod"
    [ "$inpod" = "$want_cpu_req $want_cpu_lim $want_mem_req $want_mem_lim" ] ||
      fail "$name: sparkshim run --init in the pod would plan $inpod, the pod carries $want_cpu_req $want_cpu_lim $want_mem_req $want_mem_lim"
  else
    [ "$cmd" = '[]' ] || fail "$name: container command $cmd without kubernetes.init in the policy; Spark's is []"
  fi
done

for name in fail-no-sparkshim fail-refused fail-hung fail-no-plan fail-no-output; do
  got=$(grep "^[A-Z]* $name " "$work/out" || true)
  echo "$got"
  [[ $got == "ERROR $name IllegalStateException: sparkshim feature step: "* ]] ||
    fail "$name: the pod was built, or failed without the step's message"
done
grep -q "ERROR fail-no-sparkshim .*cannot run '$work/no-such-sparkshim plan" "$work/out" ||
  fail "fail-no-sparkshim: the message does not say that sparkshim cannot be run"
grep -q "ERROR fail-refused .*failed (exit [0-9]*): .*burst" "$work/out" ||
  fail "fail-refused: the message does not carry sparkshim's reason"
grep -q "ERROR fail-hung .*took more than 1 s (spark.sparkshim.plan.timeoutSeconds)" "$work/out" ||
  fail "fail-hung: the message does not name the timeout"
grep -q "ERROR fail-no-plan .*printed no JSON plan" "$work/out" ||
  fail "fail-no-plan: the message does not say that there was no plan"
grep -q "ERROR fail-no-output .*printed no JSON plan (no output)" "$work/out" ||
  fail "fail-no-output: the message does not say that there was no output"

if [ "$fails" -gt 0 ]; then
  echo "k8s-$LINE: $fails failure(s)"
  exit 1
fi
echo "k8s-$LINE: ${#cases[@]} executor pods carry sparkshim's plan, nothing else of Spark's pod changed; 5 failures reported"
