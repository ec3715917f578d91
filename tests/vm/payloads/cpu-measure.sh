#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# cpu-measure.sh THREADS SECONDS: run inside sparkshim; burn THREADS threads and print what
# this cgroup's cpu.stat counted over the run (usage, periods, throttled periods), the wall
# time, and the cpu.max it ran under.
set -eu
cg=/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)
stat() { awk -v k="$1" '$1 == k { print $2 }' "$cg/cpu.stat"; }
now() { awk '{ printf "%d\n", $1 * 1000000 }' /proc/uptime; }
u0=$(stat usage_usec) p0=$(stat nr_periods) th0=$(stat nr_throttled)
t0=$(now)
"$VMHELPERS/burn" "$1" "$2"
u1=$(stat usage_usec) p1=$(stat nr_periods) th1=$(stat nr_throttled)
t1=$(now)
echo "cgroup $cg cpu.max $(cat "$cg/cpu.max") cpu.weight $(cat "$cg/cpu.weight")"
echo "usage_usec $((u1 - u0)) wall_usec $((t1 - t0)) periods $((p1 - p0)) throttled $((th1 - th0))"
awk -v u=$((u1 - u0)) -v w=$((t1 - t0)) 'BEGIN { printf "cpus %.3f\n", u / w }'
