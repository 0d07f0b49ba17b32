"""Classic McEliece's kernels compiled for a CPU with 16 vector registers, where products take
their other schedule (``gf.WIDE_REGISTERS`` false: Karatsuba on blocks of 4 words), checked on a
machine with AVX-512, whose own run of the suite takes the schedule for 32. (A machine without
AVX-512 runs the 16-register schedule in the rest of the suite: nothing to add there.)

The kernel tests of the products and of what is built on them (1/g^2, inverses, both FFTs) and
the first official vector (key generation, encapsulation, decapsulation) run in a process of
their own, numba compiling for Haswell (AVX2, 16 registers; ``NUMBA_CPU_NAME``), beside the rest
of the suite (``tests/background.py``): about a minute of one core.
"""

import re
import sys
from pathlib import Path

import pytest

from pqforge.jit.target import cpu_features, vector_registers

from .. import background

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent

JOB = background.Job(
    "mceliece-16-registers",
    [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(HERE / "test_kernels.py"),
     str(HERE / "test_kat.py"), "-k", "products or inverse_square or mul_inv_eval or fft or entry0"],
    env={"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": ""}, cwd=ROOT,
) if vector_registers(cpu_features()) > 16 else None


@pytest.mark.background(JOB)
def test_the_16_register_schedule_passes_the_product_tests_and_the_official_vector():
    if JOB is None:
        pytest.skip("this CPU has 16 vector registers: the rest of the suite runs that schedule")
    run = JOB.result()
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    passed = re.search(r"(\d+) passed", run.stdout)
    assert passed and int(passed.group(1)) >= 15 and "failed" not in run.stdout, run.stdout[-2000:]
