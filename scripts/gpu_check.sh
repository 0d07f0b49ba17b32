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
# sets, for a dry run), --no-install (use the current environment), --out DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
SIMULATE=0 QUICK=0 INSTALL=1 OUT=gpu_check
while [ $# -gt 0 ]; do
  case "$1" in
    --simulate) SIMULATE=1 ;;
    --quick) QUICK=1 ;;
    --no-install) INSTALL=0 ;;
    --out) OUT="$2"; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$OUT"
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
  python - <<'PY'
from numba import cuda
cuda.detect()
assert cuda.is_available(), "no usable CUDA device"
PY
fi

echo "== device tests ($PQFORGE_DEVICE_TESTS, $PQFORGE_GPU_KATS official vectors per set)"
TESTS_RC=0
timeout 240 python -m pytest -q -p no:cacheprovider tests/gpu/test_device.py tests/gpu/test_tensor.py 2>&1 \
  | tee "$OUT/tests.txt" || TESTS_RC=$?

echo "== throughput"
ARGS=(--json "$OUT/bench.json" --markdown "$OUT/bench.md")
if [ "$SIMULATE" = 1 ] || [ "$QUICK" = 1 ]; then
  ARGS+=(--quick)
fi
timeout 200 python -m pqforge.gpu.bench "${ARGS[@]}"
cat "$OUT/bench.md"
if [ "$TESTS_RC" != 0 ]; then
  echo "device tests FAILED (exit $TESTS_RC); see $OUT/tests.txt" >&2
fi
exit "$TESTS_RC"
