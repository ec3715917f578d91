# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/vm/cases/*.sh (inside the guest; see guest-main.sh for the contract).
CG=/sys/fs/cgroup
export LC_ALL=C

fail() {
	echo "FAIL: $*"
	exit 1
}

pass() {
	echo "ok: $*"
}

uptime_us() {
	awk '{ printf "%d\n", $1 * 1000000 }' /proc/uptime
}

# write_policy FILE JSON: a policy file as sparkshim accepts it from root (owner root, 0644)
write_policy() {
	printf '%s\n' "$2" >"$1"
	chmod 0644 "$1"
}

# run_rc VAR CMD...: run CMD, store its exit status in VAR, never trip set -e
run_rc() {
	_var=$1
	shift
	set +e
	"$@"
	eval "$_var=\$?"
	set -e
}

# expect_rc WANT CMD...: CMD must exit with WANT
expect_rc() {
	_want=$1
	shift
	run_rc _got "$@"
	[ "$_got" = "$_want" ] || fail "$* exited $_got, expected $_want"
}

# children_of DIR: the cgroups below DIR, one per line
children_of() {
	find "$1" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | sort
}

# in_range VALUE LOW HIGH: float comparison
in_range() {
	awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'
}
