"""Runs the device tests (test_device.py) in a subprocess under numba's CUDA simulator.

The simulator is switched on by an environment variable read when numba is first imported, so
it gets a process of its own and the rest of the suite is unaffected. The process is pinned to
one CPU: the simulator runs each GPU thread as a Python thread, and with the threads free to
move between cores the interpreter lock bounces between them (2 cores, 2026-11-30: the two
simulated keygen-and-sign tests took 23 s pinned with taskset; unpinned, a run of
``scripts/gpu_check.sh --simulate`` was still in them after 15 minutes).
"""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_device_kernels_under_the_cuda_simulator(kat_root):
    if importlib.util.find_spec("numba.cuda") is None:
        pytest.skip('numba-cuda is not installed (pip install -e ".[gpu-sim]")')
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PQFORGE_DEVICE_TESTS="sim", PQFORGE_KAT_DIR=str(kat_root))
    env.setdefault("PQFORGE_GPU_KATS", "1")
    src = str(HERE.parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "") if env.get("PYTHONPATH") else src
    pin = None
    if hasattr(os, "sched_setaffinity"):
        cpu = min(os.sched_getaffinity(0))
        pin = lambda: os.sched_setaffinity(0, {cpu})  # noqa: E731
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "test_device.py")],
                          cwd=HERE.parents[2], env=env, capture_output=True, text=True, timeout=2400,  # CI allows it
                          preexec_fn=pin)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    summary = proc.stdout.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    # everything but the CuPy tests (GPU only) runs under the simulator
    assert passed and int(passed.group(1)) >= 17 and "failed" not in summary, proc.stdout[-2000:]
