# SPDX-License-Identifier: Apache-2.0
# 53-exit-codes: sparkshim exits with the executor's status (0..255), 128+N when it is
# killed by signal N, 127 when the command is not found and 126 when it cannot be executed.
# vm-timeout: 300
set -eu
. "$SRC_DIR/tests/vm/lib.sh"

write_policy policy.json '{ "version": 1 }'
# Each bit alone and all of them, sparkshim's own codes and their neighbours (120-127: a
# command may exit with them too), and the signal range's edges: all 256 took 103 s of the
# guest's time (0.4 s a run under TCG), these 29 about 12 s.
for i in 0 1 2 4 8 16 32 64 128 255 42 63 65 99 118 119 120 121 122 123 124 125 126 127 129 \
	137 143 200 254; do
	expect_rc $i "$SPARKSHIM" run --policy policy.json --memory 64m -- sh -c "exit $i"
done
pass "exit codes passed through: each bit alone, 0 and 255, 118-129, 137, 143, 254 and others"

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
