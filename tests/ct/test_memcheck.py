"""The memcheck check: the compiled kernels under valgrind, secrets marked undefined.

One run under memcheck serves every test here (starting numba under valgrind takes most of a
minute): every target with secrets of MAYO-2 and Classic-McEliece-348864, and the control kernels
of ``memcheck_kernels``, leaky and clean, which show that the check can fail. It runs in a process
of its own (``memcheck_job.py``) from the end of collection, beside the rest of the suite
(``tests/background.py``).
"""

import ast
import os
import pickle
import sys
from pathlib import Path

import pytest

from pqforge.ct import memcheck, registry
from tests import background

import memcheck_job
import memcheck_kernels as mk
from memcheck_job import ALGS, secret_targets

SRC = Path(memcheck.__file__).resolve().parent.parent
MISSING = memcheck.available()
JOB = None if MISSING else background.Job(
    "memcheck", [sys.executable, memcheck_job.__file__, "{dir}/results.pickle"], timeout=1800)
waits_for_memcheck = pytest.mark.background(JOB)   # the tests that need its results


@pytest.fixture(scope="module")
def results():
    if MISSING:
        if os.environ.get("CI"):
            pytest.fail(f"CI installs valgrind, yet: {MISSING}")
        pytest.skip(MISSING)
    run = JOB.result()
    assert run.returncode == 0, run.stderr[-4000:]
    return pickle.loads((JOB.dir / "results.pickle").read_bytes())


@waits_for_memcheck
def test_a_branch_on_a_secret_is_reported_with_its_function(results):
    r = results[mk.BRANCHING_SELECT.name]
    assert not r.ok and r.errors["marked"] > 0 and r.errors["baseline"] == 0
    assert any(s.kind == "UninitCondition" and "branching_select" in s.where for s in r.sites["marked"])


@waits_for_memcheck
def test_a_secret_address_is_reported(results):
    r = results[mk.TABLE_LOOKUP.name]
    assert not r.ok
    assert any(s.kind == "UninitValue" and "table_lookup" in s.where for s in r.sites["marked"])


@waits_for_memcheck
def test_masks_and_declassified_values_pass(results):
    for control in (mk.MASKED_SELECT, mk.DECLASSIFIED_BRANCH):
        r = results[control.name]
        assert r.ok, r.summary()
        assert r.errors == {"baseline": 0, "marked": 0}


@waits_for_memcheck
@pytest.mark.parametrize("alg", ALGS)
def test_every_compiled_secret_kernel_is_clean(results, alg):
    checked = 0
    for t in secret_targets(alg):
        r = results[t.name]
        if r.skipped:
            # GFNI kernels (valgrind has no GFNI) and scalar helpers (inlined into kernels checked here)
            assert "gfni" in t.name or len(r.unmarked) == len(t.secret_args), r.summary()
            continue
        checked += 1
        assert r.ok, r.summary()
    assert checked >= (20 if alg == "MAYO-2" else 10)


def _declassifying_functions():
    """(module path, function) of every call of ``declassify`` in the package."""
    out = []
    for path in SRC.rglob("*.py"):
        if path.name == "_barrier.py":
            continue
        tree = ast.parse(path.read_text())
        for fn in ast.walk(tree):
            if isinstance(fn, ast.FunctionDef):
                calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "declassify"]
                if calls:
                    out.append((path.relative_to(SRC).as_posix(), fn.name))
    return out


def test_every_declassification_is_declared_with_its_reason():
    declared = " ".join(reason for t in registry.all_targets() for reason in t.declassified)
    found = _declassifying_functions()
    assert {fn for _, fn in found} >= {"sample_solution_bitsliced", "genpoly", "goppa_encoding_ok", "pivot_field_ok"}
    for path, fn in found:
        assert fn in declared, f"{path}: {fn} declassifies a value, but no target declares it with a reason"
