#!/usr/bin/env bash
# The aarch64 check: pqforge on an arm64 Debian userland under qemu-user, on this x86-64 machine.
# Sets up the userland (scripts/arm64/userland.sh; about 6 minutes the first time), then runs
# scripts/arm64/check.py in it: KAT entry 0 of MAYO-2 and MAYO-5 with the neon and portable sets,
# of Classic-McEliece-348864 and -348864f, the neon kernels against their twins, and a command-
# line round trip. About 20-25 minutes from an empty cache on 2 cores; as root.
#
#   bash scripts/arm64/check.sh            # what CI runs
#   bash scripts/arm64/check.sh --full     # every official vector of every set (hours)
#
# Options after the script name go to check.py (--full, --only kat|twins|cli, --timeout S).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/arm64/userland.sh
exec bash scripts/arm64/run.sh python3 scripts/arm64/check.py "$@"
