"""The timing harness end to end: a leak of tens of microseconds is found, a constant-time kernel
is not flagged, and the verdict rule behaves on planted data."""

import json

import numpy as np
import pytest

import ct_kernels as k
from pqforge.cli import main
from pqforge.ct import harness, stats
from pqforge.ct.registry import Target


def test_a_leaky_kernel_is_flagged():
    camp = harness.run_campaign(k.LEAKY_TIMING, measurements=2000, repeats=2, seed=11, resamples=40)
    assert camp.verdict == "leak detected", camp.reasons
    assert all(r.max_t > 20 for r in camp.real())  # far beyond the threshold, not borderline


def test_a_constant_time_kernel_is_not_flagged():
    camp = harness.run_campaign(k.CT_TIMING, measurements=2000, repeats=2, seed=12, resamples=40)
    assert camp.verdict != "leak detected", camp.reasons
    # the same campaign would have seen a tenfold smaller leak than the leaky kernel's
    assert camp.power["shift"]["detectable_80_best_crop_ns"] < 2000


def test_the_fixed_class_gets_identical_fresh_inputs():
    seen = {True: [], False: []}

    def factory(params, rng, fixed_class):
        buf = rng.integers(0, 2 ** 32, 4, dtype=np.uint64)
        seen[fixed_class].append(buf)
        return (buf,)

    target = Target("probe", "", lambda buf: None, factory)
    x, lab = harness.measure(target, None, 600, np.random.default_rng(0), fixed_seed=5)
    assert len(seen[True]) == (lab == 0).sum() and len(seen[False]) == (lab == 1).sum()
    assert all(np.array_equal(b, seen[True][0]) for b in seen[True])
    assert all(b is not seen[True][0] for b in seen[True][1:])  # fresh buffers every time
    assert len({b.tobytes() for b in seen[False]}) == len(seen[False])
    assert 200 < (lab == 0).sum() < 400 and (x > 0).all()


def _campaign_from(real, null, threshold=stats.DEFAULT_THRESHOLD):
    camp = harness.Campaign(k.CT_TIMING, None, len(real[0][0]), len(real), threshold, 0.0, 2.0, 0)
    for kind, runs in (("real", real), ("null", null)):
        for i, (x, lab) in enumerate(runs):
            run = harness.Run(kind, i, x, lab)
            run.tests = stats.battery(x, lab)
            camp.runs.append(run)
    return camp


def _synthetic(rng, n, shift=0.0, drift=0.0):
    lab = rng.integers(0, 2, n).astype(np.uint8)
    x = 1000 + rng.normal(0, 10, n) + shift * lab + drift * lab * np.linspace(0, 1, n)
    return x, lab


def test_verdicts_on_planted_data():
    rng = np.random.default_rng(7)
    n = 4000
    quiet = [_synthetic(rng, n) for _ in range(3)]
    leak = _campaign_from([_synthetic(rng, n, shift=5.0) for _ in range(3)], quiet)
    harness.analyse(leak, 10.0, 60, rng)
    assert leak.verdict == "leak detected"

    clean = _campaign_from([_synthetic(rng, n) for _ in range(3)], quiet)
    harness.analyse(clean, 10.0, 60, rng)
    assert clean.verdict == "no leak detected"
    assert clean.power["shift"]["resampled"]["power"] > 0.99

    weak = _campaign_from([_synthetic(rng, n) for _ in range(3)], quiet)
    harness.analyse(weak, 0.2, 60, rng)  # a shift far below what 4000 measurements can see
    assert weak.verdict == "inconclusive" and "power" in weak.reasons[-1]

    noisy_null = [_synthetic(rng, n, drift=20.0) for _ in range(3)]
    noisy = _campaign_from([_synthetic(rng, n, shift=5.0) for _ in range(3)], noisy_null)
    harness.analyse(noisy, 10.0, 60, rng)
    assert noisy.verdict == "inconclusive" and "null runs" in noisy.reasons[0]


def test_cli_run_writes_a_report(tmp_path, capsys):
    rc = main(["ct", "run", "--target", "ct_kernels:LEAKY_TIMING", "--measurements", "1000",
               "--repeats", "1", "--resamples", "20", "--seed", "3", "--out", str(tmp_path)])
    assert rc == 1
    data = json.loads((tmp_path / "test-spin-if-odd.json").read_text())
    assert data["verdict"] == "leak detected" and len(data["runs"]) == 2
    assert {"shift", "dispersion"} <= set(data["power"])
    md = (tmp_path / "test-spin-if-odd.md").read_text()
    assert "**Verdict: leak detected.**" in md
    with np.load(tmp_path / "test-spin-if-odd-timings.npz") as z:
        assert z["real0_times_ns"].shape == (1000,)
    pytest.importorskip("matplotlib")
    assert len(list(tmp_path.glob("*.png"))) == 3


def test_cli_errors_and_listing(capsys):
    assert main(["ct", "run", "--target", "no-such-target"]) == 2
    assert "unknown constant-time target" in capsys.readouterr().err
    assert main(["ct", "run", "--target", "ct_kernels:LEAKY_TIMING", "--measurements", "10"]) == 2
    assert main(["ct", "list"]) == 0


def test_cli_trace(capsys):
    assert main(["ct", "trace", "--target", "ct_kernels:CT_SELECT"]) == 0
    assert main(["ct", "trace", "--target", "ct_kernels:LEAKY_SELECT"]) == 1
    assert main(["ct", "trace", "--target", "ct_kernels:LEAKY_LOOKUP"]) == 0
    assert main(["ct", "trace", "--strict", "--target", "ct_kernels:LEAKY_LOOKUP"]) == 1
