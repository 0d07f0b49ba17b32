#!/usr/bin/env bash
# GPU check for batched MAYO, one command:
#   1. install pqforge with the GPU extra (numba-cuda, CuPy) into a virtual environment;
#   2. run the device tests on the GPU with all 100 official vectors per parameter set;
#   3. run the throughput benchmark: batch sizes 1, 256, 4096, 65536; same key and distinct keys;
#      bitsliced and tensor paths; all four sets. Results: gpu_check/bench.json and bench.md.
#
#   scripts/gpu_check.sh                    # on a machine with an NVIDIA GPU (about 8 minutes at most)
#   scripts/gpu_check.sh --simulate --quick # dry run without a GPU, under numba's CUDA simulator
#
# Options: --simulate (CUDA simulator; implies the reduced vector set), --quick (small batches and
# sets, for a dry run), --no-install (use the current environment; a machine without a package
# index), --out DIR, --seconds S (the throughput run's budget, default 150), --limit S (the whole
# check's, default 460; 3600 with --simulate). The KAT files are read from tests/vectors (or
# $PQFORGE_KAT_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
SIMULATE=0 QUICK=0 INSTALL=1 OUT=gpu_check SECONDS_BUDGET=150 LIMIT=
while [ $# -gt 0 ]; do
  case "$1" in
    --simulate) SIMULATE=1 ;;
    --quick) QUICK=1 ;;
    --no-install) INSTALL=0 ;;
    --out) OUT="$2"; shift ;;
    --seconds) SECONDS_BUDGET="$2"; shift ;;
    --limit) LIMIT="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
if [ -z "$LIMIT" ]; then   # the simulator runs the same kernels a few thousand times slower
  if [ "$SIMULATE" = 1 ]; then LIMIT=3600; else LIMIT=460; fi
fi
if [ "$INSTALL" = 1 ]; then
  python3 -m venv "$OUT/venv"
  . "$OUT/venv/bin/activate"
  python -m pip install -q --upgrade pip
  if [ "$SIMULATE" = 1 ]; then
    python -m pip install -q -e ".[test,gpu-sim]"
  else
    python -m pip install -q -e ".[test,gpu]"
  fi
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
if [ "$SIMULATE" = 1 ]; then
  export NUMBA_ENABLE_CUDASIM=1 PQFORGE_DEVICE_TESTS=sim PQFORGE_GPU_KATS=1
else
  export PQFORGE_DEVICE_TESTS=cuda PQFORGE_GPU_KATS=100
  python3 - <<'PY'
from numba import cuda
cuda.detect()
assert cuda.is_available(), "no usable CUDA device"
PY
fi

echo "== device tests ($PQFORGE_DEVICE_TESTS, $PQFORGE_GPU_KATS official vectors per set), then throughput"
# One process for both, so that every kernel is compiled once.
BENCH=(--json "$OUT/bench.json" --markdown "$OUT/bench.md" --seconds "$SECONDS_BUDGET")
if [ "$SIMULATE" = 1 ] || [ "$QUICK" = 1 ]; then
  BENCH+=(--quick)
fi
RC=0
timeout "$LIMIT" python3 - "${BENCH[@]}" <<'PY' 2>&1 | tee "$OUT/check.txt" || RC=$?
import os
import sys
import time

import pytest

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and hasattr(os, "sched_setaffinity"):
    # one CPU: the simulator's Python threads are many times slower when they can change cores
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

from pqforge.bench import gpu as bench

t0 = time.perf_counter()
tests_rc = pytest.main(["-q", "-p", "no:cacheprovider", "tests/mayo/cuda/test_device.py", "tests/mayo/test_tensor.py"])
print(f"== device tests: exit {int(tests_rc)} after {time.perf_counter() - t0:.0f} s", flush=True)
t0 = time.perf_counter()
bench.main(sys.argv[1:])
print(f"== throughput: {time.perf_counter() - t0:.0f} s", flush=True)
sys.exit(int(tests_rc))
PY
if [ "$RC" != 0 ]; then
  echo "device tests FAILED or the check ran out of time (exit $RC); see $OUT/check.txt" >&2
fi
exit "$RC"
