#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-cli.sh SPARKSHIM: the documented exit codes and one-line errors of bad input, and
# fail_mode on a host that cannot enforce (or a fake cgroup root that cannot).
set -eu
shim=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
# the test build: the same program with SPARKSHIM_CGROUP_ROOT, which sparkshim itself ignores
shim_t=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
victim=
trap 'rm -rf "$tmp"; [ -z "$victim" ] || find "$victim" -depth -type d -exec rmdir {} + 2>/dev/null' EXIT
cd "$tmp"
# the built-in defaults as a file: the default path (/etc/sparkshim/policy.json) is the
# machine's, and an installed package puts a restrictive policy there
defaults=$tmp/defaults.json
printf '{ "version": 1 }\n' >"$defaults"
chmod 0644 "$defaults"

printf '{ "version": 1,\n  "cpu": { "overcommit": 0.5 } }\n' >bad.json
printf '{ "version": 1, "fail_mode": "open", "memory": { "burst_ratio": { "max": 0.5 } } }\n' >open.json
printf '{ "version": 1, "fail_mode": "closed", "overrides": [] }\n' >strict.json
printf '{ "version": 1, "fail_mode": "closed" }\n' >closed.json
chmod 0644 bad.json open.json strict.json closed.json

expect 120 "\-\-bogus: unknown option" "$shim" run --policy "$defaults" --bogus -- true
expect 120 "\-\-memory: needs a value" "$shim" plan --policy "$defaults" --memory
expect 120 "not a command; allowed: run, plan, check, report, probe" "$shim" frobnicate
expect 120 "not a command; allowed: run, plan, check, report, probe, java-home" "$shim" frobnicate --help
expect 120 "run: no command given" "$shim" run --policy "$defaults" --memory 1g
expect 120 "\-\-memory: '12x' is not a size" "$shim" plan --policy "$defaults" --memory 12x
expect 120 "\-\-millicores: 'abc' is not a CPU amount" "$shim" plan --policy "$defaults" --millicores abc
expect 120 "\-\-fail-mode: 'maybe' is not a fail mode; allowed: open, closed" "$shim" plan --policy "$defaults" --memory 1g --fail-mode maybe
expect 120 "\-\-name: '../x' is not a valid cgroup name" "$shim" plan --policy "$defaults" --memory 1g --name ../x
expect 121 "missing.json: cannot open" "$shim" plan --policy "$tmp/missing.json" --memory 1g
expect 121 "bad.json:2:26: cpu.overcommit: 0.5" "$shim" plan --policy bad.json --memory 1g
if [ "$(id -u)" = 0 ]; then
	chmod 0666 bad.json
	expect 121 "must be owned by root and not writable by group or others" "$shim" plan --policy bad.json --memory 1g
fi
expect 122 "\-\-burst-ratio: 0.9 is out of range" "$shim" plan --policy open.json --memory 1g --burst-ratio 0.9
expect 122 "does not allow overriding millicores" "$shim" plan --policy strict.json --memory 1g --millicores 500
expect 122 "does not allow overriding fail_mode" "$shim" run --policy strict.json --fail-mode open -- true
# issue 11, defect 9: a longer grace period than the policy's is an override like any other
SPARKSHIM_GRACE=3600 expect 122 "SPARKSHIM_GRACE: set by the user, but the policy does not allow overriding grace" \
	"$shim" plan --policy strict.json -- java -Xmx1g Main
expect 122 "\-\-grace: set by the user, but the policy does not allow overriding grace" \
	"$shim" plan --policy strict.json --grace 3600 -- java -Xmx1g Main
SPARKSHIM_GRACE=0 "$shim" plan --policy strict.json -- java -Xmx1g Main >/dev/null || fail "a shorter grace was refused"
expect 120 "no executor memory" "$shim" plan --policy "$defaults"
# issue 11, defect 11: a heap that is not the JVM's would plan memory.max for the wrong heap
expect 120 "\-\-memory: 4294967296 bytes of heap, but the JVM will use 8589934592 bytes (-Xmx in the command)" \
	"$shim" plan --policy "$defaults" --memory 4g -- java -Xmx8g Main
SPARKSHIM_MEMORY=2g expect 120 "SPARKSHIM_MEMORY: 2147483648 bytes of heap, but the JVM will use 8589934592 bytes" \
	"$shim" plan --policy "$defaults" -- java -Xmx8g Main
"$shim" plan --policy "$defaults" --memory 8g --format cgroup -- java -Xmx8192m Main >/dev/null || fail "the same heap twice was refused"

# issue 11, defect 1: SPARK_JAVA_OPT_0, _00, _000... all name index 0 (a heap overflow before)
i=0 names=
while [ $i -lt 300 ]; do
	i=$((i + 1))
	names="${names}0"
	export "SPARK_JAVA_OPT_$names=-Xmx${i}m"
done
"$shim" plan --policy "$defaults" --format cgroup >out.txt 2>err.txt || { cat err.txt; fail "300 SPARK_JAVA_OPT_0... entries"; }
grep -qx "memory.max 403701760" out.txt || { cat out.txt; fail "SPARK_JAVA_OPT_0 (-Xmx1m) is not the heap entrypoint.sh gives"; }
for v in $(env | sed -n 's/^\(SPARK_JAVA_OPT_[0-9]*\)=.*/\1/p'); do unset "$v"; done
echo "ok: 300 SPARK_JAVA_OPT_0... entries, the heap is entrypoint.sh's (-Xmx1m, last in its order)"

# a cgroup root that is not a cgroup file system: closed refuses, open runs unenforced
mkdir fake
SPARKSHIM_CGROUP_ROOT=$tmp/fake expect 123 "cannot enforce the plan: .*(fail_mode closed)" \
	"$shim_t" run --policy closed.json --memory 1g -- sh -c 'echo ran'
[ ! -s out.txt ] || fail "closed mode ran the command"
SPARKSHIM_CGROUP_ROOT=$tmp/fake expect 7 "warning: not enforcing the plan" \
	"$shim_t" run --policy open.json --memory 1g -- sh -c 'echo ran; exit 7'
grep -qx ran out.txt || fail "open mode did not run the command"

# issue 11, defect 2: the environment does not choose the policy. A root-owned policy of the
# user's choice (say an installed permissive example) must not change the plan.
printf '{ "version": 1, "cpu": { "overcommit": 8, "millicores": { "max": 64000 } } }\n' >permissive.json
chmod 0644 permissive.json
# (the default path, whatever this machine has there: both runs must give the same)
set +e
"$shim" plan --memory 1g --millicores 2000 --format cgroup >plain.txt 2>/dev/null
plain_rc=$?
SPARKSHIM_POLICY=$tmp/permissive.json "$shim" plan --memory 1g --millicores 2000 --format cgroup \
	>out.txt 2>err.txt
rc=$?
set -e
[ $rc = $plain_rc ] || { cat err.txt; fail "SPARKSHIM_POLICY changed the exit status: $rc, not $plain_rc"; }
cmp -s plain.txt out.txt || { cat out.txt; fail "SPARKSHIM_POLICY changed the plan"; }
grep -q "SPARKSHIM_POLICY is not read" err.txt || { cat err.txt; fail "SPARKSHIM_POLICY set: no warning"; }
echo "ok: SPARKSHIM_POLICY does not choose the policy: $(cat err.txt)"

# the probes' test variables are not read by sparkshim either (only by probe-dump)
SPARKSHIM_PROBE_DEBUG=1 SPARKSHIM_PROBE_CPU_VARIANT=portable "$shim" run --policy open.json \
	--memory 1g --report "$tmp/dbg.jsonl" -- sleep 1.5 >out.txt 2>err.txt || true
! grep -q "libbpf" err.txt || fail "SPARKSHIM_PROBE_DEBUG printed libbpf's output: $(grep -c libbpf err.txt) lines"
echo "ok: SPARKSHIM_PROBE_* are not read by sparkshim"

# issue 11, defect 3: sparkshim has no SPARKSHIM_CGROUP_ROOT. A link to another tenant's
# cgroup must not make root create the executor's leaf there.
if [ "$(id -u)" = 0 ] && [ -w /sys/fs/cgroup/unified ] &&
	[ "$(stat -f -c %T /sys/fs/cgroup/unified)" = cgroup2fs ]; then
	victim=/sys/fs/cgroup/unified/sparkshim-test-victim-$$
	mkdir "$victim"
	ln -s "$victim" link
	SPARKSHIM_CGROUP_ROOT=$tmp/link "$shim" run --policy open.json --memory 1g --name probe-$$ \
		--report "$tmp/r.jsonl" -- cat /proc/self/cgroup >out.txt 2>err.txt || true
	leftover=$(find "$victim" -mindepth 1 -type d | head -n1)
	! grep -q "sparkshim-test-victim" out.txt err.txt || { cat out.txt err.txt; fail "SPARKSHIM_CGROUP_ROOT was honoured"; }
	[ -z "$leftover" ] || fail "a cgroup was created below the link's target: $leftover"
	echo "ok: SPARKSHIM_CGROUP_ROOT is ignored by sparkshim ($(cat out.txt))"
	# the test build honours it, but verifies the mount: no symlink is followed
	SPARKSHIM_CGROUP_ROOT=$tmp/link expect 123 "cannot inspect $tmp/link: Not a directory" \
		"$shim_t" run --policy closed.json --memory 1g -- true
else
	echo "skip part: defect 3's symlinked hierarchy needs root and a writable cgroup2 at /sys/fs/cgroup/unified"
fi
echo "ok: all"
