#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Debian package (issue 12, section 3): scripts/package builds it, lintian passes
# (--fail-on error,warning, with the overrides of packaging/lintian-overrides), and on this
# machine it installs, works and goes away:
#   dpkg -i: sparkshim --version, man -w for every page, the conffiles registered with the
#     shipped contents, dpkg --verify clean, sparkshim check reading the installed policy,
#     the built-in agent path being the installed agent (and a JVM loading it), the
#     default policy refusing a user's millicores and taking a burst ratio;
#   dpkg -r: every file gone but the conffiles and the tuner's history
#     (/var/lib/sparkshim/history.db, made by sparkshim ingest); dpkg -P: the conffiles,
#     /var/log/sparkshim and /var/lib/sparkshim gone too.
# Root only (77 otherwise). It waits for the cluster suites that use the installed package
# or their own /etc/sparkshim/policy.json (the locks of tests/cluster/lib.sh and of
# tests/cluster/standalone.sh), and leaves the machine as it found it: a sparkshim that was
# installed is installed again (this build), with the policy it had.
#
# Usage: test-package.sh SOURCE_ROOT
set -euo pipefail

SRC=${1:?usage: test-package.sh SOURCE_ROOT}
T0=$(date +%s)
progress() { echo "[package +$(($(date +%s) - T0))s] $*"; }
skip() {
  echo "SKIP: $*"
  exit 77
}
FAILURES=0
fail() {
  echo "FAIL: $*"
  FAILURES=$((FAILURES + 1))
}

[ "$(id -u)" = 0 ] || skip "not root: the test installs the package (dpkg -i)"
for tool in dpkg dpkg-deb dpkg-query man; do
  command -v "$tool" >/dev/null || skip "$tool is missing"
done
command -v lintian >/dev/null || skip "lintian is missing (scripts/deps installs it)"

# --- build and lintian ------------------------------------------------------------------
progress "building the package (scripts/package)"
rc=0
DEB=$("$SRC/scripts/package") || rc=$?
[ "$rc" -eq 77 ] && skip "scripts/package cannot build here"
[ "$rc" -eq 0 ] || { echo "FAIL: scripts/package exited $rc"; exit 1; }
progress "built $DEB ($(stat -c %s "$DEB") bytes)"
dpkg-deb -f "$DEB" Package Version Architecture Depends Built-Using | sed 's/^/  /'
dpkg-deb -c "$DEB" | awk '{print "  " $1 " " $6}'

progress "lintian --fail-on error,warning $(basename "$DEB")"
lrc=0
# (lintian says it should not run as root: what it inspects is an archive, not the system)
lintian --fail-on error,warning "$DEB" 2>/dev/null | sed 's/^/  /' || lrc=$?
if [ "$lrc" -eq 0 ]; then
  progress "lintian: no error, no warning; overridden (each with its reason in packaging/lintian-overrides):"
  lintian --show-overrides "$DEB" 2>/dev/null | awk '$1 == "O:" { print $3 }' | sort | uniq -c | sed 's/^/  /' || true
else
  fail "lintian found errors or warnings (exit $lrc)"
fi

# --- the machine's state, kept and restored ---------------------------------------------
# shellcheck source=../cluster/lib.sh
. "$SRC/tests/cluster/lib.sh"
progress "waiting for suites that use the installed package ($SPARKSHIM_PACKAGE_LOCK)"
_sparkshim_package_lock -x || exit 1
# and for the suites that install a policy of their own at /etc/sparkshim/policy.json for
# their run (tests/cluster/standalone.sh's lock), since this test replaces that file
POLICY_LOCK=/run/lock/sparkshim-test-policy.lock
exec {policy_fd}>>"$POLICY_LOCK"
waited=0
until flock -w 60 "$policy_fd"; do
  waited=$((waited + 60))
  [ "$waited" -lt 900 ] || { echo "FAIL: $POLICY_LOCK still held after $waited s"; exit 1; }
  progress "waiting for $POLICY_LOCK (a suite has its policy installed; ${waited}s)"
done

WORK=$(mktemp -d /tmp/sparkshim-package.XXXXXX)
WAS_INSTALLED=0
if [ "$(dpkg-query -W -f='${db:Status-Status}' sparkshim 2>/dev/null)" = installed ]; then
  WAS_INSTALLED=1
fi
if [ -e /etc/sparkshim/policy.json ]; then
  cp -a /etc/sparkshim/policy.json "$WORK/policy.saved"
fi
# the machine's tuner history: a purge removes it now, the test's included
if [ -e /var/lib/sparkshim ]; then
  cp -a /var/lib/sparkshim "$WORK/history.saved"
fi
cleanup() {
  if [ "$WAS_INSTALLED" = 1 ]; then
    dpkg -i --force-confdef --force-confold "$DEB" </dev/null >/dev/null || echo "FAIL: reinstalling $DEB"
  fi
  if [ -e "$WORK/policy.saved" ]; then
    mkdir -p /etc/sparkshim
    cp -a "$WORK/policy.saved" /etc/sparkshim/policy.json
  fi
  if [ -e "$WORK/history.saved" ]; then
    rm -rf /var/lib/sparkshim
    cp -a "$WORK/history.saved" /var/lib/sparkshim
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT

if [ "$(dpkg-query -W -f='${db:Status-Status}' sparkshim 2>/dev/null)" != not-installed ] &&
  dpkg-query -W sparkshim >/dev/null 2>&1; then
  progress "purging the sparkshim installed before (restored at the end)"
  dpkg -P sparkshim </dev/null >/dev/null
fi
# a policy no package owns (left by a suite): put aside, so that the package's is installed
rm -f /etc/sparkshim/policy.json

# --- dpkg -i ------------------------------------------------------------------------------
progress "dpkg -i $(basename "$DEB")"
dpkg -i "$DEB" </dev/null >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log"; fail "dpkg -i failed"; exit 1; }

upstream=$(dpkg-deb -f "$DEB" Version)
upstream=${upstream%-*}
out=$(/usr/bin/sparkshim --version)
[ "$out" = "sparkshim $upstream" ] || fail "sparkshim --version printed '$out', expected 'sparkshim $upstream'"
progress "sparkshim --version: $out"

for page in sparkshim sparkshim-policy sparkshim-report sparkshim-agent sparkshim-k8s sparkshim-tune; do
  where=$(man -w "$page" 2>/dev/null) || where=
  case "$where" in
  /usr/share/man/man[157]/"$page".[157].gz) progress "man -w $page: $where" ;;
  *) fail "man -w $page: '$where'" ;;
  esac
done

# the fleet tuner's units: installed, valid to systemd, the service's command the tuner's
for u in sparkshim-tune.service sparkshim-tune.timer; do
  [ -f "/lib/systemd/system/$u" ] || fail "/lib/systemd/system/$u not installed"
done
if command -v systemd-analyze >/dev/null; then
  if out=$(systemd-analyze verify --man=no /lib/systemd/system/sparkshim-tune.service \
    /lib/systemd/system/sparkshim-tune.timer 2>&1) && [ -z "$out" ]; then
    progress "systemd-analyze verify: sparkshim-tune.service and .timer clean"
  else
    fail "systemd-analyze verify: $out"
  fi
fi
exec_start=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/sparkshim-tune.service)
$exec_start --help >/dev/null || fail "the service's command '$exec_start --help' failed"

conffiles=$(dpkg-query -W -f='${Conffiles}' sparkshim)
for c in "/etc/sparkshim/policy.json $SRC/conf/policy-default.json" \
  "/etc/logrotate.d/sparkshim $SRC/packaging/logrotate"; do
  set -- $c
  want=$(md5sum <"$2" | cut -d' ' -f1)
  if grep -q "^ $1 $want\$" <<<"$conffiles"; then
    progress "conffile $1 registered ($want)"
  else
    fail "conffile $1 with md5 $want not registered: $(tr '\n' ';' <<<"$conffiles")"
  fi
done
cmp -s /etc/sparkshim/policy.json "$SRC/conf/policy-default.json" ||
  fail "/etc/sparkshim/policy.json is not conf/policy-default.json"
verify=$(dpkg --verify sparkshim 2>&1) || true
[ -z "$verify" ] || fail "dpkg --verify sparkshim: $verify"

agent=$(dpkg-query -L sparkshim | grep '/sparkshim/libsparkshim-agent\.so$' || true)
[ -f "$agent" ] || fail "no agent library in the package"
builtin=$(/usr/bin/sparkshim run --help 2>&1 | sed -n 's/.*--agent-path FILE.*(default \(.*\))$/\1/p')
[ "$builtin" = "$agent" ] || fail "sparkshim's built-in agent is '$builtin', the package installs '$agent'"
progress "built-in agent path: $builtin"
if command -v java >/dev/null; then
  if java -agentpath:"$agent" -version >"$WORK/java.log" 2>&1; then
    progress "java -agentpath:$agent -version: the JVM loads the installed agent"
  else
    fail "java -agentpath:$agent -version: $(tail -3 "$WORK/java.log")"
  fi
fi

# the Kubernetes feature step, when scripts/package could build it
dpkg-deb -c "$DEB" >"$WORK/deb-contents.txt"
if grep -q '/usr/share/java/sparkshim-k8s.jar' "$WORK/deb-contents.txt"; then
  # the listing whole first: grep -q quits at its match, and under pipefail the SIGPIPE a
  # still-writing python3 then gets fails the pipeline (it did, once, on a busy machine)
  python3 -m zipfile -l /usr/share/java/sparkshim-k8s.jar >"$WORK/k8s-jar.txt"
  if grep -q 'sparkshim/k8s/.*\.class' "$WORK/k8s-jar.txt"; then
    progress "/usr/share/java/sparkshim-k8s.jar -> $(readlink /usr/share/java/sparkshim-k8s.jar): the feature step's classes"
  else
    fail "/usr/share/java/sparkshim-k8s.jar holds no sparkshim/k8s class"
  fi
else
  progress "the package was built without the Kubernetes feature step (scripts/package said why)"
fi

# sparkshim check with the installed policy: it is read and valid, the report directory
# the package made is usable. (This host cannot enforce, so check itself exits 1 here.)
/usr/bin/sparkshim check >"$WORK/check.txt" 2>&1 || true
sed 's/^/  /' "$WORK/check.txt"
grep -q '^policy  *ok  *\/etc\/sparkshim\/policy.json (fail_mode closed' "$WORK/check.txt" ||
  fail "sparkshim check did not accept /etc/sparkshim/policy.json"
grep -q '^report file  *ok  *\/var\/log\/sparkshim\/reports.jsonl' "$WORK/check.txt" ||
  fail "sparkshim check: the report file /var/log/sparkshim/reports.jsonl is not usable"

# the default policy: users may not set their CPU; they may choose a burst ratio
cmd=(java -Xmx1g org.apache.spark.executor.CoarseGrainedExecutorBackend --cores 1)
if /usr/bin/sparkshim plan --millicores 500 -- "${cmd[@]}" >"$WORK/plan.txt" 2>&1; then
  fail "the default policy let a user set millicores: $(cat "$WORK/plan.txt")"
else
  progress "plan --millicores 500 refused: $(head -1 "$WORK/plan.txt")"
fi
/usr/bin/sparkshim plan --burst-ratio 0.5 -- "${cmd[@]}" >"$WORK/plan.txt" 2>&1 ||
  fail "the default policy refused a burst ratio: $(cat "$WORK/plan.txt")"

# a history in the package's /var/lib/sparkshim, as the admin's first ingest makes it
python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))))' \
  "$SRC/docs/report-example.json" >"$WORK/report.jsonl"
/usr/bin/sparkshim ingest "$WORK/report.jsonl" >"$WORK/ingest.txt" 2>&1 ||
  fail "sparkshim ingest into the default history failed: $(cat "$WORK/ingest.txt")"
[ -f /var/lib/sparkshim/history.db ] || fail "sparkshim ingest made no /var/lib/sparkshim/history.db"

# --- dpkg -r, dpkg -P ---------------------------------------------------------------------
files=$(dpkg-query -L sparkshim | while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done)
progress "dpkg -r sparkshim"
dpkg -r sparkshim </dev/null >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log"; fail "dpkg -r failed"; }
if grep -i 'warning' "$WORK/dpkg.log"; then fail "dpkg -r warned"; fi
status=$(dpkg-query -W -f='${db:Status-Abbrev}' sparkshim 2>/dev/null || true)
[ "$status" = "rc " ] || fail "after dpkg -r the status is '$status', expected 'rc' (config-files)"
left=0
while read -r f; do
  case "$f" in
  /etc/sparkshim/policy.json | /etc/logrotate.d/sparkshim)
    [ -f "$f" ] || fail "dpkg -r removed the conffile $f"
    ;;
  *) if [ -e "$f" ]; then
    fail "dpkg -r left $f"
    left=1
  fi ;;
  esac
done <<<"$files"
[ "$left" = 1 ] || progress "dpkg -r: $(($(wc -l <<<"$files") - 2)) files removed, the 2 conffiles kept; status rc"
# the history is the admin's data: a remove keeps it (issue 22, defect 8c)
[ -f /var/lib/sparkshim/history.db ] || fail "dpkg -r removed the history /var/lib/sparkshim/history.db"

progress "dpkg -P sparkshim"
dpkg -P sparkshim </dev/null >"$WORK/dpkg.log" 2>&1 || { cat "$WORK/dpkg.log"; fail "dpkg -P failed"; }
for f in /etc/sparkshim/policy.json /etc/sparkshim /etc/logrotate.d/sparkshim /var/log/sparkshim \
  /var/lib/sparkshim; do
  [ ! -e "$f" ] || fail "dpkg -P left $f"
done
if dpkg-query -W sparkshim >/dev/null 2>&1; then
  fail "dpkg still knows sparkshim after dpkg -P: $(dpkg-query -W -f='${db:Status-Abbrev}' sparkshim)"
fi
progress "dpkg -P: conffiles, /etc/sparkshim, /var/log/sparkshim and /var/lib/sparkshim gone"

if [ "$FAILURES" -gt 0 ]; then
  echo "package: $FAILURES failure(s)"
  exit 1
fi
progress "package: OK"
