# SPDX-License-Identifier: Apache-2.0
# 30-readback: every value of the plan (cpu.max, cpu.weight, memory.max, memory.low,
# memory.high, pids.max, io.weight) reads back from the executor's own cgroup as
# `sparkshim plan --format cgroup` printed it; memory.min with protection "min".
# vm-timeout: 120
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

check_policy() { # POLICY-JSON FLAGS...
	write_policy policy.json "$1"
	shift
	"$SPARKSHIM" plan --policy policy.json --format cgroup "$@" >plan.txt
	cat plan.txt
	"$SPARKSHIM" run --policy policy.json --name readback "$@" -- sh -c '
		cg=/sys/fs/cgroup$(sed -n "s/^0:://p" /proc/self/cgroup)
		while read -r file value; do echo "$file $(cat "$cg/$file")"; done <plan.txt' >got.txt
	while read -r file value; do
		got=$(awk -v f="$file" '$1 == f { $1 = ""; sub(/^ /, ""); print }' got.txt)
		case $file in
		memory.*) want=$((value / 4096 * 4096)) ;;
		*) want=$value ;;
		esac
		[ "$got" = "$want" ] || fail "$file reads back '$got', planned '$value'"
	done <plan.txt
	pass "$(wc -l <plan.txt) values read back as planned"
}

check_policy '{ "version": 1, "memory": { "high_factor": 0.9, "protection": "low" },
	"pids": { "max": 4096 }, "io": { "weight": 250 } }' \
	--memory 1g --memory-overhead 512m --burst-ratio 0.5 --millicores 1500
grep -q '^memory.high ' plan.txt || fail "memory.high not planned"
grep -q '^memory.low ' plan.txt || fail "memory.low not planned"

check_policy '{ "version": 1, "memory": { "protection": "min" } }' --memory 512m --cores 2
grep -q '^memory.min ' plan.txt || fail "memory.min not planned"
