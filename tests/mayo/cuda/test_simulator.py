"""Runs the device tests (test_device.py) in a subprocess under numba's CUDA simulator.

The simulator is switched on by an environment variable read when numba is first imported, so
it gets a process of its own and the rest of the suite is unaffected; that process starts when
collection ends and runs beside the suite (``tests/background.py``). It is pinned to one CPU:
the simulator runs each GPU thread as a Python thread, and with the threads free to move between
cores the interpreter lock bounces between them (2 cores, 2026-11-30: the two simulated
keygen-and-sign tests took 23 s pinned with taskset; unpinned, a run of
``scripts/gpu_check.sh --simulate`` was still in them after 15 minutes).
"""

import importlib.util
import os
import re
import sys
from pathlib import Path

import pytest

from ... import background, known_answers

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]


def _pin_to_one_cpu():
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})


def _job() -> background.Job | None:
    if importlib.util.find_spec("numba.cuda") is None:
        return None
    env = {"NUMBA_ENABLE_CUDASIM": "1", "PQFORGE_DEVICE_TESTS": "sim", "PQFORGE_KAT_DIR": str(known_answers.root()),
           "PQFORGE_GPU_KATS": os.environ.get("PQFORGE_GPU_KATS", "1")}
    path = os.environ.get("PYTHONPATH")
    env["PYTHONPATH"] = str(ROOT / "src") + (os.pathsep + path if path else "")
    return background.Job("cuda-simulator",
                          [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "test_device.py")],
                          env=env, cwd=ROOT, timeout=2400,      # CI allows it
                          preexec_fn=_pin_to_one_cpu if hasattr(os, "sched_setaffinity") else None)


JOB = _job()
pytestmark = pytest.mark.background(JOB)


def test_device_kernels_under_the_cuda_simulator():
    if JOB is None:
        pytest.skip('numba-cuda is not installed (pip install -e ".[gpu-sim]")')
    proc = JOB.result()
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-3000:]
    summary = proc.stdout.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    # everything but the CuPy tests (GPU only) runs under the simulator
    assert passed and int(passed.group(1)) >= 17 and "failed" not in summary, proc.stdout[-2000:]
