# SPDX-License-Identifier: Apache-2.0
# 10-cpu-millicores: a two-thread CPU burner under --millicores 500 with overcommit 2 is
# held to 1 CPU (0.90..1.02 over 5 s of cpu.stat usage); under 250m x 2 to 0.45..0.51.
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

write_policy policy.json '{ "version": 1, "cpu": { "overcommit": 2.0 } }'

measure() { # MILLICORES LOW HIGH
	"$SPARKSHIM" run -v --policy policy.json --memory 256m --millicores "$1" --name "burn-$1" \
		-- sh "$SRC_DIR/tests/vm/payloads/cpu-measure.sh" 2 5 >out.txt 2>err.txt ||
		{ cat err.txt out.txt; fail "sparkshim run for ${1}m failed"; }
	cat out.txt
	cpus=$(awk '$1 == "cpus" { print $2 }' out.txt)
	in_range "$cpus" "$2" "$3" || fail "${1}m x 2: used $cpus CPUs, expected $2..$3"
	grep -q "cpu.max $(($1 * 2 * 100)) 100000" out.txt || fail "${1}m: cpu.max is not $(($1 * 2 * 100)) 100000"
	pass "${1}m x 2 used $cpus CPUs (expected $2..$3)"
}

measure 500 0.90 1.02
measure 250 0.45 0.51
