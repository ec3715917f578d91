#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# cpu-measure.sh THREADS SECONDS: run inside sparkshim; burn THREADS threads and print the
# CPUs used over the run from this cgroup's cpu.stat, and the cpu.max it ran under.
set -eu
cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
usage() { awk '$1 == "usage_usec" { print $2 }' "$cg/cpu.stat"; }
now() { awk '{ printf "%d\n", $1 * 1000000 }' /proc/uptime; }
u0=$(usage)
t0=$(now)
"$VMHELPERS/burn" "$1" "$2"
u1=$(usage)
t1=$(now)
echo "cgroup $cg cpu.max $(cat "$cg/cpu.max") cpu.weight $(cat "$cg/cpu.weight")"
echo "usage_usec $((u1 - u0)) wall_usec $((t1 - t0)) $(grep -E 'nr_throttled|throttled_usec' "$cg/cpu.stat" | tr '\n' ' ')"
awk -v u=$((u1 - u0)) -v w=$((t1 - t0)) 'BEGIN { printf "cpus %.3f\n", u / w }'
