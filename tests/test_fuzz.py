"""The fuzz harnesses (``fuzz/``): each one, in a process of its own, runs over its seed corpus
and then a fixed number of new inputs (a fixed libFuzzer seed, so the same inputs on every run)
and exits 0: no crash, no unexpected exception, no broken invariant, no hang, no memory growth
past ``fuzz/run.py``'s bound. Long runs are a command (docs/development.md, "Fuzzing")."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("atheris", reason="the fuzz harnesses need the fuzz extra: pip install 'pqforge[fuzz]'")

REPO = Path(__file__).resolve().parent.parent
FUZZ = REPO / "fuzz"
TARGETS = sorted(path.stem.removeprefix("fuzz_") for path in FUZZ.glob("fuzz_*.py"))
RUNS = 20000        # a few seconds per harness


def _run(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    # minutes only when the harnesses' kernels compile first (an empty cache)
    return subprocess.run([sys.executable, str(FUZZ / "run.py"), *args], capture_output=True, text=True,
                          env=env, timeout=1200)


def test_every_harness_has_seeds_and_the_corpus_is_small():
    assert {"kat", "keyfile", "mayo", "mceliece", "pkix", "service"} <= set(TARGETS)     # every parser has a harness
    for target in TARGETS:
        assert any((FUZZ / "corpus" / target).iterdir()), f"no seeds for fuzz_{target}.py"
    size = sum(path.stat().st_size for path in (FUZZ / "corpus").rglob("*") if path.is_file())
    assert size < 1 << 20


@pytest.mark.parametrize("target", TARGETS)
def test_harness_runs_clean(target, tmp_path):
    done = _run("--runs", str(RUNS), "--seed", "1", "--work", str(tmp_path), target)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"runs {RUNS:>9}" in done.stdout, done.stdout


def test_every_seed_passes_on_its_own():
    done = _run("--regress")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(" ok ") == len(TARGETS), done.stdout
