#!/usr/bin/env bash
# An arm64 Debian userland under qemu-user, on an x86-64 Linux machine, for running pqforge on
# aarch64 where there is no ARM machine. Idempotent: what is there already is kept.
#
#   sudo scripts/arm64/userland.sh [ROOT]      # default ROOT: /var/tmp/pqforge-arm64
#
# 1. Debian packages qemu-user-static, binfmt-support, debootstrap (apt, when missing);
# 2. binfmt_misc mounted and qemu-aarch64 enabled, so that the kernel runs aarch64 binaries;
# 3. debootstrap: bookworm arm64, minbase, with python3 (about 5 minutes, once);
# 4. the aarch64 wheels of numpy, numba, llvmlite, cryptography and what pqforge and the
#    checks import, installed from this machine with pip --platform into ROOT/opt/pylib, at the
#    versions this machine's Python environment has (about 30 seconds, once per version set).
#
# Runs as root (apt, mount, chroot). scripts/arm64/run.sh runs commands in it.
set -euo pipefail
ROOT=${1:-${PQFORGE_ARM64_ROOT:-/var/tmp/pqforge-arm64}}
say() { printf 'arm64 userland: %s\n' "$*" >&2; }

need=()
command -v qemu-aarch64-static >/dev/null || need+=(qemu-user-static)
command -v update-binfmts >/dev/null || need+=(binfmt-support)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]}"
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi

mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64
grep -q enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 || { say "qemu-aarch64 is not enabled in binfmt_misc"; exit 1; }

if [ ! -x "$ROOT/usr/bin/python3" ]; then
  say "debootstrap bookworm arm64 into $ROOT (about 5 minutes)"
  rm -rf "$ROOT"
  debootstrap --arch=arm64 --variant=minbase --include=python3,ca-certificates bookworm "$ROOT" >"${ROOT%/}.debootstrap.log" 2>&1 \
    || { say "debootstrap failed; its log: ${ROOT%/}.debootstrap.log"; tail -5 "${ROOT%/}.debootstrap.log" >&2; exit 1; }
fi

# The wheels: the versions of pqforge's environment here (PYTHON, else python3: run this inside
# it), so that both sides run the same numba.
PY=${PYTHON:-python3}
pins=$("$PY" - <<'EOF'
import sys
from importlib.metadata import version, PackageNotFoundError
try:
    print(" ".join(f"{name}=={version(name)}" for name in
                   ("numpy", "numba", "llvmlite", "cryptography", "platformdirs", "tqdm", "pytest")))
except PackageNotFoundError as missing:
    sys.exit(f"arm64 userland: {missing.name} is not installed for {sys.executable}: run this inside "
             "pqforge's development environment (README), or name its python in PYTHON")
EOF
)
guest_python=$(chroot "$ROOT" python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
stamp="$guest_python $pins"
if [ "$(cat "$ROOT/opt/pylib.pins" 2>/dev/null)" != "$stamp" ]; then
  say "aarch64 wheels for Python $guest_python: $pins"
  rm -rf "$ROOT/opt/pylib"
  # shellcheck disable=SC2086
  "$PY" -m pip install -q --disable-pip-version-check --root-user-action=ignore --only-binary=:all: --implementation cp \
    --python-version "$guest_python" --platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64 \
    --platform manylinux_2_28_aarch64 --target "$ROOT/opt/pylib" $pins
  echo "$stamp" >"$ROOT/opt/pylib.pins"
fi
say "ready: $ROOT"
