"""The device kernels compiled for a real GPU target (PTX, sm_90) where NVVM is installed; no GPU needed."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def _compiler_present() -> bool:
    if importlib.util.find_spec("numba.cuda") is None:
        return False
    probe = ("from numba import cuda, types\n"
             "def k(a):\n"
             "    a[0] = 1\n"
             "cuda.compile_ptx(k, (types.uint8[::1],), cc=(9, 0))\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    return subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, timeout=120).returncode == 0


def test_kernels_compile_to_ptx():
    if not _compiler_present():
        pytest.skip("the CUDA compiler libraries (NVVM, NVRTC) are not installed (pip install 'numba-cuda[cu12]'); "
                    "the simulator tests still run")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    src = str(HERE.parents[2] / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    proc = subprocess.run([sys.executable, str(HERE / "ptx_check.py"), "MAYO-2"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stderr.count(": ok") == 9, proc.stderr[-2000:]
