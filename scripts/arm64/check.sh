#!/usr/bin/env bash
# The aarch64 check: pqforge on an arm64 Debian userland under qemu-user, on this x86-64 machine.
# Sets up the userland (scripts/arm64/userland.sh; 3-6 minutes the first time), then runs
# scripts/arm64/check.py in it: KAT entry 0 of every MAYO set with the neon and portable sets, of
# Classic-McEliece-348864 and -348864f, the neon kernels against their twins, a command-line
# round trip and a bundle of prebuilt machine code. About 15 minutes from an empty cache on 2
# cores (AMD EPYC Zen 4, 2026-12-06). As root, inside the development environment (README).
#
#   bash scripts/arm64/check.sh            # what CI runs
#   bash scripts/arm64/check.sh --full     # every official vector of every set (hours)
#
# Options after the script name go to check.py (--full, --only kat|twins|cli, --timeout S).
set -euo pipefail
cd "$(dirname "$0")/../.."
bash scripts/arm64/userland.sh
exec bash scripts/arm64/run.sh python3 scripts/arm64/check.py "$@"
