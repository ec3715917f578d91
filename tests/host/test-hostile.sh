#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-hostile.sh SPARKSHIM: hostile inputs through the real binary (issue 11): each gets one
# clear line and its documented exit code, within bounded time and memory (a guard against
# hanging or growing without end, not a measurement).
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
# the built-in defaults as a file: the default path (/etc/sparkshim/policy.json) is the
# machine's, and an installed package puts a restrictive policy there
defaults=$tmp/defaults.json
printf '{ "version": 1 }\n' >"$defaults"
chmod 0644 "$defaults"

# bounded: 20 s and (without a sanitizer, which reserves terabytes of address space) 512 MiB
bounded() {
	if [ -z "${ASAN_OPTIONS:-}" ]; then
		(ulimit -v 524288 && exec timeout 20 "$@")
	else
		timeout 20 "$@"
	fi
}

# a 100 MB policy, and one nested 100000 deep
head -c 100000000 /dev/zero | tr '\0' ' ' >big.json
python3 -c "print('[' * 100000 + ']' * 100000)" >deep.json
printf '{ "version": 1, "cgroup": { "parent": "%s" } }\n' "$(head -c 10000 /dev/zero | tr '\0' a)" >long.json
chmod 0644 big.json deep.json long.json
expect 121 "big.json: 100000000 bytes is too large; allowed: up to 1 MiB" bounded "$shim" plan --policy big.json --memory 1g
expect 121 "deep.json:1:2049: maximum parsing depth reached" bounded "$shim" plan --policy deep.json --memory 1g
expect 121 "long.json:1:.*cgroup.parent" bounded "$shim" plan --policy long.json --memory 1g

# 100000 arguments: read, planned, no limit of ours in the way
# (short ones: the kernel takes about 2 MiB of arguments and their pointers)
yes -- -Dx | head -n 100000 >args.txt
# shellcheck disable=SC2046
bounded "$shim" plan --policy "$defaults" --format cgroup -- java -Xmx1g $(cat args.txt) Main >out.txt 2>err.txt ||
	{ cat err.txt; fail "100000 arguments"; }
grep -q "^memory.max " out.txt || fail "100000 arguments: no plan"
echo "ok: 100000 arguments"

# ids: 10000 characters; '/', '..' and a newline in them
long=$(head -c 10000 /dev/zero | tr '\0' a)
expect 120 "command: --app-id aaaa.*: too long; allowed: up to 127 characters" \
	bounded "$shim" plan --policy "$defaults" -- java -Xmx1g Backend --app-id "$long" --executor-id 1
expect 120 "\-\-name: 'aaaa.*' is not a valid cgroup name" bounded "$shim" plan --policy "$defaults" --memory 1g --name "$long"
bounded "$shim" plan --policy "$defaults" -- java -Xmx1g Backend --app-id "../../etc" --executor-id "$(printf '1\n2/3')" >out.txt
python3 - out.txt <<'PY'
import json, sys
name = json.load(open(sys.argv[1]))["cgroup"]["name"]
assert "/" not in name and "\n" not in name and name not in (".", ".."), name
assert not name.startswith("."), name
print(f"ok: ids with '/', '..' and a newline make the leaf {name!r}")
PY
expect 120 "\-\-name: '\\\\x0asparkshim\[1\]: error: forged' is not a valid cgroup name" \
	bounded "$shim" plan --policy "$defaults" --memory 1g --name "$(printf '\nsparkshim[1]: error: forged')"
echo "ok: all"
