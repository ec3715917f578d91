#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Published settings on Kubernetes, end to end through Spark's own code (issue 23): a plain
# `spark-submit --master k8s://... --deploy-mode cluster` of the Spark distribution
# (scripts/spark-dist), JAVA_HOME a `sparkshim java-home` of the installed package, with a
# job whose settings root published. Spark's KubernetesClientApplication builds the driver
# pod and its ConfigMap (spark.properties, the conf the driver will run with) and sends them
# to the API server; no Kubernetes runs on these machines, so the API server is a stand-in
# that keeps what it is sent and answers as the API server does (201 with the object, 200 to
# a server-side apply). Checks:
#   - the ConfigMap's spark.properties holds every published setting, spark.sparkshim.job
#     and spark.sparkshim.config = the published next id, and the user's own
#     --conf spark.executor.cores=1 over the published 2;
#   - the driver pod's spark-submit (the image's entrypoint: --deploy-mode client
#     --properties-file that spark.properties) runs through the same personality unchanged
#     and silent: the settings are not applied twice;
#   - executor pods built from that conf by Spark's KubernetesExecutorBuilder with the
#     installed sparkshim-k8s.jar's feature step (tests/cluster/K8sExecutorPod.java) carry
#     sparkshim plan's requests and limits for the published settings (the CPU request
#     Spark sets itself from spark.kubernetes.executor.request.cores; the CPU limit and the
#     memory request and limit are the step's).
#
# Usage: k8s-submit.sh LINE SOURCE_ROOT JDK_HOME   (LINE: 3.5 or 4.0)
set -euo pipefail

LINE=${1:?usage: k8s-submit.sh LINE SOURCE_ROOT JDK_HOME}
SRC=${2:?}
JDK=${3:-}
# shellcheck source=/dev/null
. "$SRC/tests/cluster/lib.sh"
suite_helpers "k8s-submit-$LINE"

[ "$(id -u)" = 0 ] || skip "not root: the published settings are root's"
need_jdk java javac
command -v jq >/dev/null || skip "jq is missing (scripts/deps installs it)"
use_package
STEP_JAR=/usr/share/java/sparkshim-k8s.jar
[ -f "$STEP_JAR" ] || skip "the installed package has no $STEP_JAR (scripts/package could not build it here)"

WORK=$(mktemp -d /tmp/sparkshim-k8s-submit.XXXXXX)
chmod 0755 "$WORK"
API=
SUBMIT=
cleanup() {
  local rc=$?
  set +e
  [ -z "$SUBMIT" ] || kill -TERM "$SUBMIT" 2>/dev/null
  [ -z "$API" ] || kill -TERM "$API" 2>/dev/null
  cd /
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
cd "$WORK"
spark_dist "$LINE"
ls "$SPARK_HOME"/jars/spark-kubernetes_*.jar >/dev/null 2>&1 || skip "Spark $VERSION has no spark-kubernetes jar"
mkdir -p "$SPARK_CONF_DIR" classes

# --- the stand-in API server ------------------------------------------------------------
python3 - "$WORK/api.port" "$WORK/api.jsonl" <<'PY' >"$WORK/api.log" 2>&1 &
import http.server, json, sys
port_file, log = sys.argv[1:3]
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def answer(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            obj = json.loads(raw) if raw else None
        except ValueError:
            obj = None
        with open(log, "a") as f:
            f.write(json.dumps({"method": self.command, "path": self.path,
                                "type": self.headers.get("Content-Type"), "body": obj}) + "\n")
        if self.command in ("POST", "PATCH", "PUT") and isinstance(obj, dict):
            md = obj.setdefault("metadata", {})
            md.setdefault("uid", "00000000-0000-0000-0000-000000000001")
            md.setdefault("resourceVersion", "1")
            md.setdefault("namespace", self.path.split("/namespaces/")[1].split("/")[0]
                          if "/namespaces/" in self.path else "default")
            self.answer(201 if self.command == "POST" else 200, obj)
        else:
            self.answer(404, {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                              "reason": "NotFound", "code": 404, "message": "not found"})
    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = handle_any
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
open(port_file, "w").write(str(s.server_address[1]))
s.serve_forever()
PY
API=$!
for _ in $(seq 100); do [ -s "$WORK/api.port" ] && break; sleep 0.1; done
[ -s "$WORK/api.port" ] || { echo "FAIL: the stand-in API server did not start: $(cat "$WORK/api.log")"; exit 1; }
MASTER=k8s://http://127.0.0.1:$(cat "$WORK/api.port")
progress "stand-in API server at $MASTER"

# --- the policy, the home, the published settings ---------------------------------------
umask 022
cat >policy.json <<JSON
{ "version": 1, "tuner": { "apply": "explore", "service": { "publish_dir": "$WORK/pub" } } }
JSON
"$SPARKSHIM" java-home --jdk "$JDK" --policy "$WORK/policy.json" "$WORK/home" >java-home.out 2>&1 ||
  { echo "FAIL: sparkshim java-home: $(cat java-home.out)"; exit 1; }
NEXT=next-00c0ffee00c0ffee
mkdir -m 0711 -p pub/0
NOW=$(date +%s)
cat >pub/0/k8s-etl.json <<JSON
{ "schema": "sparkshim.published/v1", "owner_uid": 0, "job": "k8s-etl",
  "created": $NOW, "expires": $((NOW + 86400)), "state": "explore", "reason": "test",
  "safe_from": null, "ran": [],
  "next": { "id": "$NEXT", "conf": {
    "spark.executor.memory": "1536m", "spark.executor.cores": "2",
    "spark.executor.memoryOverhead": "640m", "spark.executor.memoryBurst.ratio": "0.5",
    "spark.kubernetes.executor.request.cores": "1250m" } },
  "safe": null }
JSON
chmod 0644 pub/0/k8s-etl.json

# --- the user's submit: cluster mode ------------------------------------------------------
rc=0
HOME=$WORK JAVA_HOME=$WORK/home timeout 300 "$SPARK_HOME/bin/spark-submit" \
  --master "$MASTER" --deploy-mode cluster --name k8s-etl --class org.example.Etl \
  --conf spark.executor.cores=1 \
  --conf spark.kubernetes.container.image=apache/spark:test \
  --conf spark.kubernetes.submission.waitAppCompletion=false \
  local:///opt/app/etl.jar >submit.out 2>submit.err &
SUBMIT=$!
wait "$SUBMIT" || rc=$?
SUBMIT=
if [ "$rc" != 0 ]; then
  echo "FAIL: spark-submit exited $rc:"
  grep -vE '^\s+at ' submit.err | tail -n 20
  echo "the API server was sent:"
  cut -c1-300 api.jsonl 2>/dev/null
  exit 1
fi
progress "spark-submit: $(grep -c . api.jsonl) request(s): $(jq -r '"\(.method) \(.path)"' api.jsonl | tr '\n' ';')"
progress "sparkshim said: $(grep '^sparkshim' submit.err || echo nothing)"
grep -q "applied next configuration $NEXT" submit.err || fail "the submit did not say it applied $NEXT"

# the driver pod and its ConfigMap, as Spark sent them
jq -c 'select(.body.kind == "Pod") | .body' api.jsonl | head -n 1 >driver-pod.json
jq -c 'select(.body.kind == "ConfigMap" and (.body.data["spark.properties"] != null)) | .body' api.jsonl |
  tail -n 1 >configmap.json
[ -s driver-pod.json ] || fail "no driver pod was sent to the API server"
[ -s configmap.json ] || fail "no ConfigMap with spark.properties was sent to the API server"
[ "$FAILURES" = 0 ] || exit 1
jq -r '.data["spark.properties"]' configmap.json >spark.properties
python3 - "$WORK/spark.properties" "$WORK/pub/0/k8s-etl.json" <<'PY' || fail "see above"
import json, sys
props = {}
for l in open(sys.argv[1]):
    l = l.strip()
    if l and not l.startswith("#") and "=" in l:
        k, v = l.split("=", 1)
        props[k.strip()] = v.strip().replace("\\:", ":")
pub = json.load(open(sys.argv[2]))
bad = 0
for k, v in pub["next"]["conf"].items():
    want = "1" if k == "spark.executor.cores" else v  # the user's --conf wins
    if props.get(k) != want:
        print(f"FAIL: spark.properties: {k}={props.get(k)}, wanted {want}")
        bad += 1
for k, v in (("spark.sparkshim.job", "k8s-etl"), ("spark.sparkshim.config", pub["next"]["id"])):
    if props.get(k) != v:
        print(f"FAIL: spark.properties: {k}={props.get(k)}, wanted {v}")
        bad += 1
print("the driver's spark.properties: " + " ".join(f"{k}={props.get(k)}" for k in sorted(pub["next"]["conf"])
      + ["spark.sparkshim.job", "spark.sparkshim.config"]))
sys.exit(1 if bad else 0)
PY

# --- the driver pod's spark-submit: the image's entrypoint, through the same personality --
# (the container's args after "driver", the entrypoint's own --conf and --deploy-mode client)
mapfile -t dargs < <(jq -r '.spec.containers[0].args[]' driver-pod.json)
[ "${dargs[0]:-}" = driver ] || fail "the driver container's args are ${dargs[*]}, not 'driver ...'"
dargs=("${dargs[@]:1}")
replaced=0
for i in "${!dargs[@]}"; do
  if [ "${dargs[$i]}" = /opt/spark/conf/spark.properties ]; then
    dargs[i]=$WORK/spark.properties
    replaced=1
  fi
done
[ "$replaced" = 1 ] || fail "the driver container's args name no /opt/spark/conf/spark.properties: ${dargs[*]}"
mkdir -p printjdk/bin
: >printjdk/release
printf '#!/bin/sh\nfor a in "$@"; do printf "%%s\\n" "$a"; done\n' >printjdk/bin/java
chmod 0755 printjdk/bin/java
"$SPARKSHIM" java-home --jdk "$WORK/printjdk" --policy "$WORK/policy.json" "$WORK/drvhome" >/dev/null
want=(-cp x org.apache.spark.deploy.SparkSubmit --conf spark.driver.bindAddress=10.0.0.7
  --deploy-mode client "${dargs[@]}")
HOME=$WORK "$WORK/drvhome/bin/java" "${want[@]}" >driver-argv.txt 2>driver.err
if ! diff <(printf '%s\n' "${want[@]}") driver-argv.txt >driver.diff || [ -s driver.err ]; then
  fail "the driver pod's spark-submit was changed (settings applied twice) or sparkshim spoke: $(cat driver.diff driver.err)"
else
  progress "the driver pod's spark-submit (${dargs[*]}): unchanged, silent"
fi
# the control: the same command with a properties file that lacks spark.sparkshim.config
# and the published keys (a driver of a submit that did not go through the personality)
# does get the settings,
# so the case above shows the personality declining, not a personality that never engaged
grep -vE '^spark\.(sparkshim\.config|executor\.memory|executor\.memoryOverhead|executor\.memoryBurst\.ratio|kubernetes\.executor\.request\.cores)=' \
  spark.properties >bare.properties
ctl=("${want[@]}")
for i in "${!ctl[@]}"; do
  [ "${ctl[$i]}" != "$WORK/spark.properties" ] || ctl[i]=$WORK/bare.properties
done
HOME=$WORK "$WORK/drvhome/bin/java" "${ctl[@]}" >control-argv.txt 2>control.err
grep -qx "spark.sparkshim.config=$NEXT" control-argv.txt && grep -q "applied next configuration $NEXT" control.err ||
  fail "the control (no spark.sparkshim.config in the properties file) got no settings: $(tr '\n' ' ' <control-argv.txt) $(cat control.err)"

# --- executor pods from the driver's conf, with the installed feature step --------------
javac -nowarn -encoding UTF-8 -cp "$SPARK_HOME/jars/*" -d classes "$SRC/tests/cluster/K8sExecutorPod.java"
printf '{ "version": 1 }\n' >open.json
{
  printf 'from-submit'
  grep -E '^spark\.(executor|kubernetes\.executor|memory)\.' spark.properties | sed 's/\\:/:/g' |
    while IFS= read -r kv; do printf '\t%s' "$(sed 's/ *= */=/' <<<"$kv")"; done
  printf '\tspark.kubernetes.executor.pod.featureSteps=sparkshim.k8s.SparkshimExecutorFeatureStep'
  printf '\tspark.sparkshim.binary=%s\tspark.sparkshim.policy=%s\n' "$SPARKSHIM" "$WORK/open.json"
} >cases
timeout 300 "$JDK/bin/java" -cp "$SPARK_HOME/jars/*:$STEP_JAR:classes" K8sExecutorPod cases >pods.out 2>pods.err ||
  { echo "FAIL: the pod builder failed:"; tail -n 20 pods.err; exit 1; }
got=$(grep '^POD from-submit ' pods.out || true)
echo "$got" | cut -c1-400
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
plan=$(env -i "$SPARKSHIM" plan --format json --policy "$WORK/open.json" --memory 1536m --cores 1 \
  --millicores 1250m --memory-overhead 640m --burst-ratio 0.5)
for k in "cpu.request .cpu.request_millicores" "cpu.limit (.cpu.limit_millicores // \"none\")" \
  "memory.request .memory.request_bytes" "memory.limit .memory.limit_bytes"; do
  read -r name expr <<<"$k"
  want=$(jq -r "$expr" <<<"$plan")
  [ "$(field "$name" "$got")" = "$want" ] || fail "executor pod: $name $(field "$name" "$got"), sparkshim plan's $want"
done
[ "$FAILURES" = 0 ] || exit 1
progress "executor pods: cpu $(field cpu.request "$got")/$(field cpu.limit "$got") m, memory $(field memory.request "$got")/$(field memory.limit "$got") bytes: sparkshim plan's for the published settings"
