#!/usr/bin/env bash
# Run a command on a slower machine: at most CPUS cores' worth of CPU time, shared by all its
# processes (a CFS quota over 10-ms periods, in a cgroup of its own; needs root). On a machine
# with 2 cores, CPUS=1 stands for a 2-core machine at half the speed per core, such as an older
# server generation, for work that is bound by CPU time (a first use's compiles, for example).
#
#     bash benchmarks/cpu_quota.sh CPUS COMMAND [ARGS...]
#     bash benchmarks/cpu_quota.sh 1 python benchmarks/startup_sets.py --alg MAYO-2 --sets avx2,portable --rounds 1
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: cpu_quota.sh CPUS COMMAND [ARGS...]" >&2
  exit 2
fi
cpus=$1
shift
period=10000
quota=$(awk -v c="$cpus" -v p="$period" 'BEGIN { if (c + 0 <= 0) exit 1; printf "%d", c * p }') || {
  echo "cpu_quota.sh: CPUS must be a positive number, got '$cpus'" >&2
  exit 2
}
name="pqforge-quota-$$"
v2=$([ -f /sys/fs/cgroup/cgroup.controllers ] && echo yes || true)
group=$([ "$v2" ] && echo "/sys/fs/cgroup/$name" || echo "/sys/fs/cgroup/cpu/$name")
if ! mkdir "$group" 2>/dev/null; then
  echo "cpu_quota.sh: cannot create the cgroup $group (needs root and a writable cgroup file system)" >&2
  exit 1
fi
if [ "$v2" ]; then
  echo "$quota $period" > "$group/cpu.max"
else
  echo "$period" > "$group/cpu.cfs_period_us"
  echo "$quota" > "$group/cpu.cfs_quota_us"
fi
# The command runs in a child shell that moved itself into the group; the group is removed after.
status=0
bash -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$group" "$@" || status=$?
rmdir "$group" 2>/dev/null || true
exit $status
