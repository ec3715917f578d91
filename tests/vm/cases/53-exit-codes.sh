# SPDX-License-Identifier: Apache-2.0
# 53-exit-codes: sparkshim exits with the executor's status for 0..255, 128+N when it is
# killed by signal N, 127 when the command is not found and 126 when it cannot be executed.
# vm-timeout: 300
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

write_policy policy.json '{ "version": 1 }'
i=0
while [ $i -le 255 ]; do
	expect_rc $i "$SPARKSHIM" run --policy policy.json --memory 64m -- sh -c "exit $i"
	i=$((i + 1))
done
pass "exit codes 0..255 passed through"

for pair in HUP:1 INT:2 QUIT:3 ABRT:6 KILL:9 USR1:10 SEGV:11 USR2:12 PIPE:13 TERM:15; do
	sig=${pair%:*}
	n=${pair#*:}
	expect_rc $((128 + n)) "$SPARKSHIM" run --policy policy.json --memory 64m -- sh -c "kill -s $sig \$\$"
done
pass "killed by signal N gives 128+N"

run_rc rc "$SPARKSHIM" run --memory 64m -- /nonexistent/java 2>err.txt
cat err.txt
[ "$rc" = 127 ] || fail "not found gave $rc"
grep -q "cannot execute /nonexistent/java: No such file or directory" err.txt || fail "no clear message"
printf 'not a program\n' >noexec
chmod 0644 noexec
run_rc rc "$SPARKSHIM" run --memory 64m -- ./noexec 2>err.txt
cat err.txt
[ "$rc" = 126 ] || fail "not executable gave $rc"
pass "127 not found, 126 not executable"
[ -z "$(children_of "$CG/sparkshim")" ] || fail "cgroups left behind: $(children_of "$CG/sparkshim")"
