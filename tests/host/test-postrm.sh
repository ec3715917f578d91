#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-postrm.sh POSTRM: the Debian package's postrm (packaging/postrm) under a DPKG_ROOT of
# its own (never the running system): purge removes what sparkshim wrote at run time, the
# tuner's history in /var/lib/sparkshim included (issue 22, defect 8c); remove, upgrade and
# dpkg's other calls keep all of it. tests/package checks the same with dpkg itself.
set -eu
postrm=$(readlink -f "$1")
fail() { echo "FAIL: $*"; exit 1; }
root=$(mktemp -d /tmp/sparkshim-postrm.XXXXXX)
trap 'rm -rf "$root"' EXIT
[ -n "$root" ] && [ "$root" != / ] || fail "no temporary root"
# a postrm that ignores DPKG_ROOT would purge this system's sparkshim: never run it
grep -q 'DPKG_ROOT:-}/var/lib/sparkshim' "$postrm" ||
	fail "$postrm does not purge \${DPKG_ROOT}/var/lib/sparkshim (not run: it would act on this system)"

# what a node has after runs: a history (with SQLite's files), reports, the run directory
populate() {
	mkdir -p "$root/var/lib/sparkshim" "$root/var/log/sparkshim" "$root/run/sparkshim" \
		"$root/etc/sparkshim"
	for f in history.db history.db-wal history.db-shm; do echo x >"$root/var/lib/sparkshim/$f"; done
	echo '{}' >"$root/var/log/sparkshim/reports.jsonl"
}

populate
for action in remove upgrade failed-upgrade abort-install abort-upgrade disappear; do
	DPKG_ROOT=$root sh "$postrm" "$action" 1.0 || fail "postrm $action exited $?"
	for f in var/lib/sparkshim/history.db var/lib/sparkshim/history.db-wal \
		var/log/sparkshim/reports.jsonl run/sparkshim etc/sparkshim; do
		[ -e "$root/$f" ] || fail "postrm $action removed /$f"
	done
done
echo "ok: postrm remove (and upgrade, failed-upgrade, abort-*, disappear) keeps the history, the reports, /run/sparkshim"

DPKG_ROOT=$root sh "$postrm" purge || fail "postrm purge exited $?"
for f in var/lib/sparkshim var/log/sparkshim run/sparkshim etc/sparkshim; do
	[ ! -e "$root/$f" ] || fail "postrm purge left /$f"
done
[ -d "$root/var/lib" ] && [ -d "$root/var/log" ] || fail "postrm purge removed more than its own directories"
echo "ok: postrm purge removes /var/lib/sparkshim (the history), /var/log/sparkshim, the empty /run/sparkshim and /etc/sparkshim"

# a run directory still in use (an executor's agent directory) and a conffile dpkg keeps
populate
mkdir "$root/run/sparkshim/agent.1.x"
echo '{}' >"$root/etc/sparkshim/policy.json.dpkg-old"
DPKG_ROOT=$root sh "$postrm" purge || fail "postrm purge exited $?"
[ -d "$root/run/sparkshim/agent.1.x" ] || fail "postrm purge removed a running executor's directory"
[ -f "$root/etc/sparkshim/policy.json.dpkg-old" ] || fail "postrm purge removed a file of the admin's in /etc/sparkshim"
[ ! -e "$root/var/lib/sparkshim" ] || fail "postrm purge left /var/lib/sparkshim"
echo "ok: postrm purge keeps a /run/sparkshim in use and an admin's file in /etc/sparkshim"
