#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `sparkshim check` names each requirement of init mode (sparkshim-k8s(7)) that is missing,
# as this host's layout, found here independently, implies; and the ones a container would
# change, made here with namespaces of our own (nothing of the host is modified):
#   - a private cgroup namespace (unshare --cgroup): "own cgroup namespace ... 0::/";
#   - a namespace whose root is below the mount's root (a bind of the node's hierarchy);
#   - a read-only cgroup2 mount (a private mount namespace, the mount remounted ro in it);
#   - a uid that cannot write the hierarchy (setpriv to nobody);
# and `check --init` fails (exit 1) while any is missing, `check` without it prints "miss"
# rows and keeps its verdict.
#
# With SPARKSHIM_TEST (the build's sparkshim-test, which takes SPARKSHIM_CGROUP_ROOT), the
# cgroup2 mount is also looked at as a container on a cgroup v2 node sees it: cgroup2 at
# the root it is given, in a cgroup namespace of its own.
#
# Usage: k8s-check.sh SPARKSHIM [SPARKSHIM_TEST]
set -euo pipefail
shim=$1
shim_test=${2:-}
[ "$(id -u)" = 0 ] || { echo "SKIP: not root (namespaces and remounts need it)"; exit 77; }
for tool in unshare setpriv; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not found"; exit 77; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
printf '{ "version": 1, "kubernetes": { "init": true } }\n' >"$work/policy.json"
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
row() { # row FILE NAME: the row's "RESULT DETAIL"
  sed -n "s/^init: $2 *\(.*\)/\1/p" "$1"
}
expect_row() { # expect_row FILE NAME RESULT PATTERN WHAT
  local got
  got=$(row "$1" "$2")
  [[ $got == "$3 "* ]] && grep -qE -- "$4" <<<"$got" ||
    fail "$5: row 'init: $2' is '$got', wanted $3 matching /$4/"
}

# This host, independently.
root=/sys/fs/cgroup
mount=$root
if [ "$(stat -f -c %T $root)" = cgroup2fs ]; then
  layout=unified
elif [ "$(stat -f -c %T $root/unified 2>/dev/null)" = cgroup2fs ]; then
  layout=hybrid mount=$root/unified
else
  layout=legacy
fi
host_ns=$([ "$(readlink /proc/self/ns/cgroup)" = "cgroup:[4026531835]" ] && echo yes || echo no)
have=$(cat "$mount/cgroup.controllers" 2>/dev/null || true)
controllers=no
grep -qw cpu <<<"$have" && grep -qw memory <<<"$have" && controllers=yes
echo "this host: $layout, cgroup2 at $mount (controllers '$have'), host cgroup namespace: $host_ns"

run() { # run NAME CMD...: sparkshim check's output in $work/NAME, its status in $work/NAME.rc
  local name=$1 rc=0
  shift
  "$@" >"$work/$name" 2>&1 || rc=$?
  echo "$rc" >"$work/$name.rc"
  echo "--- $name ($*): exit $rc"
  grep '^init: \|run --init' "$work/$name" || true
}

run host "$shim" check --policy "$work/policy.json" --init
case $layout in
  unified) expect_row "$work/host" "cgroup2 mount" ok "cgroup2 is mounted at $root" "host" ;;
  hybrid) expect_row "$work/host" "cgroup2 mount" FAIL "cgroup2 is at $mount \(a hybrid host\).*fix: a cgroup v2 node" "host" ;;
  legacy) expect_row "$work/host" "cgroup2 mount" FAIL "only cgroup v1.*fix: a cgroup v2 node" "host" ;;
esac
if [ $layout = legacy ]; then
  [ "$(cat "$work/host.rc")" = 1 ] || fail "host: check --init exited $(cat "$work/host.rc") on a v1-only host"
  echo "a v1-only host: nothing more to look at"
  exit $((fails > 0))
fi
expect_row "$work/host" "writable mount" ok "$mount is mounted read-write" "host"
if [ $host_ns = yes ]; then
  expect_row "$work/host" "cgroup namespace" FAIL "host's cgroup namespace \(cgroup:\[4026531835\]\).*fix: a private cgroup namespace" "host"
else
  expect_row "$work/host" "cgroup namespace" ok "own cgroup namespace" "host"
fi
if [ $controllers = yes ]; then
  expect_row "$work/host" controllers ok "$mount/cgroup.controllers has" "host"
elif [ $layout = hybrid ]; then
  expect_row "$work/host" controllers FAIL "lacks cpu memory \(has '$have'\): bound to cgroup v1 at $root/cpu, $root/memory: fix: a cgroup v2 node" "host"
else
  expect_row "$work/host" controllers FAIL "lacks .*not delegated" "host"
fi
expect_row "$work/host" "writable by uid" ok "uid 0 may create cgroups in $mount" "host"
missing=$(grep -c '^init: .* FAIL ' "$work/host" || true)
if [ "$missing" -gt 0 ]; then
  [ "$(cat "$work/host.rc")" = 1 ] || fail "host: check --init exited $(cat "$work/host.rc") with $missing requirement(s) missing"
  grep -q "run --init (a container's command) cannot set up its cgroups here: $missing requirements\? missing" "$work/host" ||
    fail "host: no summary naming $missing missing requirement(s)"
fi

# Without --init: the same rows as "miss", and check's verdict is the wrap mode's.
run plain "$shim" check --policy "$work/policy.json"
grep -q '^init: .* FAIL ' "$work/plain" && fail "plain: check without --init printed init rows as FAIL"
[ "$missing" -eq 0 ] || grep -q '^init: .* miss ' "$work/plain" || fail "plain: no 'miss' rows"
wrap_rc=$(grep -q 'sparkshim run cannot enforce' "$work/plain" && echo 1 || echo 0)
[ "$(cat "$work/plain.rc")" = "$wrap_rc" ] || fail "plain: check exited $(cat "$work/plain.rc"), its wrap verdict says $wrap_rc"

# A private cgroup namespace made where this shell is, with the inherited mount: at the
# hierarchy's own root, init mode would move the node's processes; below it, the mount
# shows the hierarchy above the namespace (a container's own case is "stacked" below)
run cgroupns unshare --cgroup "$shim" check --policy "$work/policy.json" --init
if [ "$(sed -n 's/^0:://p' /proc/self/cgroup)" = / ]; then
  expect_row "$work/cgroupns" "cgroup namespace" FAIL "own cgroup namespace cgroup:\[[0-9]+\], but its root is the hierarchy's own root.*fix: a container in a cgroup of its own" "cgroupns"
else
  expect_row "$work/cgroupns" "cgroup namespace" FAIL "shows /\.\..* of it, not its root" "cgroupns"
fi

# A cgroup namespace whose root is below the mount's: the mount shows the hierarchy above
# the container's cgroup, as a bind of the node's hierarchy into a privileged container
# does. The child cgroup is ours, made for this and removed.
child=$mount/sparkshim-k8s-check.$$
mkdir "$child"
trap 'rmdir "$child" 2>/dev/null || true; rm -rf "$work"' EXIT
run boundmount sh -c "echo \$\$ >'$child/cgroup.procs' && exec unshare --cgroup '$shim' check --policy '$work/policy.json' --init"
expect_row "$work/boundmount" "cgroup namespace" FAIL "own cgroup namespace cgroup:\[[0-9]+\], but the cgroup2 mount at $mount shows /\.\. of it, not its root.*fix: a cgroup2 mount made in the container's namespace" "boundmount"
# the kernel may report the cgroup busy for a moment after its last process exited
for _ in $(seq 300); do rmdir "$child" 2>/dev/null && break; sleep 0.1; done
[ ! -d "$child" ] || fail "cannot remove $child"

# The same namespace with a cgroup2 mount of its own stacked on the inherited one, as
# runtimes whose rootfs holds the node's /sys/fs/cgroup do: the last mount at a point is
# the one seen, and it shows the namespace's root
mkdir "$child"
run stacked sh -c "echo \$\$ >'$child/cgroup.procs' && exec unshare --cgroup --mount sh -c 'mkdir -p $work/own && mount -t cgroup2 none $work/own && mount --bind $work/own $mount && exec $shim check --policy $work/policy.json --init'"
expect_row "$work/stacked" "cgroup namespace" ok "own cgroup namespace cgroup:\[[0-9]+\], this process at 0::/ \(its root\)" "stacked"
for _ in $(seq 300); do rmdir "$child" 2>/dev/null && break; sleep 0.1; done
[ ! -d "$child" ] || fail "cannot remove $child"

# A read-only mount, as unprivileged containers get.
run readonly unshare --mount sh -c "mount -o remount,bind,ro '$mount' && exec '$shim' check --policy '$work/policy.json' --init"
expect_row "$work/readonly" "writable mount" FAIL "$mount is mounted read-only.*fix: a writable cgroup mount without privileged.*cgroup_writable = true in the runtime handler.s table" "readonly"
expect_row "$work/readonly" "writable by uid" FAIL "not writable: the mount is read-only" "readonly"
grep -q "$mount.* rw," /proc/self/mountinfo || grep -q "$mount rw" /proc/self/mountinfo ||
  fail "the host's $mount is no longer read-write"

# A uid that may not write the hierarchy.
run nobody setpriv --reuid=65534 --regid=65534 --clear-groups "$shim" check --policy "$work/policy.json" --init
expect_row "$work/nobody" "writable by uid" FAIL "not writable by uid 65534 \(Permission denied\): fix: run sparkshim as root" "nobody"

# cgroup2 as the root: the unified layout's rows (the controllers this host has in v2)
if [ -n "$shim_test" ]; then
  mkdir "$child"
  # the namespace's root is the child: its controllers are what the root delegates
  grep -qw cpu "$child/cgroup.controllers" 2>/dev/null && grep -qw memory "$child/cgroup.controllers" 2>/dev/null || controllers=no
  run unified sh -c "echo \$\$ >'$child/cgroup.procs' && exec unshare --cgroup --mount sh -c 'mkdir -p $work/own && mount -t cgroup2 none $work/own && mount --bind $work/own $mount && exec env SPARKSHIM_CGROUP_ROOT=$mount $shim_test check --policy $work/policy.json --init'"
  for _ in $(seq 300); do rmdir "$child" 2>/dev/null && break; sleep 0.1; done
  expect_row "$work/unified" "cgroup2 mount" ok "cgroup2 is mounted at $mount" "unified"
  expect_row "$work/unified" "cgroup namespace" ok "own cgroup namespace .* at 0::/ \(its root\)" "unified"
  if [ $controllers = yes ]; then
    expect_row "$work/unified" controllers ok "has" "unified"
  else
    expect_row "$work/unified" controllers FAIL "lacks .*not delegated to the container: fix: the parent's cgroup.subtree_control" "unified"
  fi
  grep -q '^init: (hierarchy)' "$work/unified" && fail "unified: the hybrid note printed for a cgroup2 root"
fi

if [ "$fails" -gt 0 ]; then
  echo "k8s-check: $fails failure(s)"
  exit 1
fi
echo "k8s-check: every init-mode requirement reported as this host and the namespaces made here imply"
