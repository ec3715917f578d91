#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Build sparkshim-k8s.jar, the Spark Kubernetes executor feature step (sparkshim-k8s(7)).
#
#   k8s/build.sh OUTPUT.jar [SPARK_JARS_DIR]
#
# It compiles against Spark 3.5's spark-kubernetes jars (SPARK_JARS_DIR, default: what
# k8s/spark-k8s-jars 3.5 fetches into its cache, without the network once cached) for
# Java 8, and the one jar runs on Spark 3.5 and 4.x. Exits 77 when the jars cannot be
# fetched or no JDK is installed, so that callers can skip with the reason.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: k8s/build.sh OUTPUT.jar [SPARK_JARS_DIR]}
jars=${2:-}

for tool in javac jar; do
  if ! command -v "$tool" >/dev/null; then
    echo "k8s/build.sh: $tool not found (a JDK is needed: scripts/deps installs one)" >&2
    exit 77
  fi
done
if [ -z "$jars" ]; then
  rc=0
  jars=$("$here/spark-k8s-jars" 3.5) || rc=$?
  [ "$rc" -eq 0 ] || exit "$rc"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/classes"
find "$here/src" -name '*.java' | sort >"$work/sources"
# -Xlint:-options: --release 8 is what Spark 3.5's Java 8 support needs, not a mistake
javac --release 8 -Xlint:all -Xlint:-options -Werror -encoding UTF-8 \
  -cp "$jars/*" -d "$work/classes" @"$work/sources"
mkdir -p "$(dirname "$out")"
# a fixed timestamp, so that the jar is reproducible (the package ships it)
find "$work/classes" -exec touch -h -d @0 {} +
jar --create --file "$out.tmp" --date=1980-01-01T00:00:02Z -C "$work/classes" . 2>/dev/null ||
  jar --create --file "$out.tmp" -C "$work/classes" .
mv -f "$out.tmp" "$out"
echo "$out"
