#!/usr/bin/env bash
# Run a command on aarch64: in the arm64 userland (scripts/arm64/userland.sh), with this
# repository mounted read-only at /opt/pqforge as the working directory and its sources on
# PYTHONPATH. One at a time (the mounts are made and removed around the command).
#
#   scripts/arm64/run.sh python3 -m pqforge kat --alg MAYO-2 --count 1
#   PQFORGE_KERNELS=portable scripts/arm64/run.sh python3 -m pqforge bench --alg MAYO-2
#   scripts/arm64/run.sh --host CMD...      # CMD on this machine, with the mounts in place and
#                                           # the guest's variables in PQFORGE_ARM64_GUEST (for
#                                           # qemu-aarch64 -L ROOT, as benchmarks/arm64_insns.py runs it)
#
# The CPU numba compiles for is named (NUMBA_CPU_NAME, NUMBA_CPU_FEATURES) from a profile of
# pqforge.jit.prebuilt (PQFORGE_ARM64_TARGET, default armv8.2-a-n1): qemu-user 7.2 shows the
# guest the host's /proc/cpuinfo, where LLVM finds no ARM features, though qemu's CPU has them.
# The numba cache is one per state of the sources (ROOT/var/cache/pqforge/DIGEST), so a kernel
# edited since the last run never meets stale compiled callers. PQFORGE_* variables pass through.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=${PQFORGE_ARM64_ROOT:-/var/tmp/pqforge-arm64}
TARGET=${PQFORGE_ARM64_TARGET:-armv8.2-a-n1}
PY=${PYTHON:-python3}
[ -x "$ROOT/usr/bin/python3" ] || { echo "no arm64 userland at $ROOT: run scripts/arm64/userland.sh first" >&2; exit 2; }
read -r digest cpu features < <(PYTHONPATH=src "$PY" - "$TARGET" <<'PYEOF'
import sys
from pqforge.jit.prebuilt import PROFILES, sources_digest
arch, cpu, features = PROFILES[sys.argv[1]]
assert arch == "aarch64", f"{sys.argv[1]} is not an aarch64 profile"
print(sources_digest()[:16], cpu, ",".join("+" + f for f in features))
PYEOF
)

mounted=()
cleanup() { for ((i=${#mounted[@]}-1; i>=0; i--)); do umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"; done; }
trap cleanup EXIT
if ! mountpoint -q "$ROOT/proc"; then mount -t proc proc "$ROOT/proc"; mounted+=("$ROOT/proc"); fi
mkdir -p "$ROOT/opt/pqforge"
if ! mountpoint -q "$ROOT/opt/pqforge"; then
  mount --bind "$PWD" "$ROOT/opt/pqforge"; mounted+=("$ROOT/opt/pqforge")
  mount -o remount,bind,ro "$ROOT/opt/pqforge"
fi

guest=(PYTHONPATH=/opt/pylib:/opt/pqforge/src NUMBA_CACHE_DIR="/var/cache/pqforge/$digest"
       NUMBA_CPU_NAME="$cpu" NUMBA_CPU_FEATURES="$features")
if [ "${1:-}" = --host ]; then
  shift
  PQFORGE_ARM64_ROOT=$ROOT PQFORGE_ARM64_GUEST="${guest[*]}" "$@"
  exit
fi
passed=()
while IFS='=' read -r name value; do passed+=("$name=$value"); done < <(env | grep '^PQFORGE_' | grep -v '^PQFORGE_ARM64_' || true)
chroot "$ROOT" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 \
  "${guest[@]}" "${passed[@]}" sh -c 'cd /opt/pqforge && exec "$@"' sh "$@"
