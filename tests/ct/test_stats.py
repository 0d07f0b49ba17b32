"""The statistics on synthetic data: nominal false-positive rate, and power as predicted."""

import math

import numpy as np
import pytest

from pqforge.ct import stats

T = stats.DEFAULT_THRESHOLD


def test_welch_t_matches_the_formula():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    b = np.array([2.0, 4.0, 6.0])
    expected = (2.5 - 4.0) / math.sqrt(np.var(a, ddof=1) / 4 + np.var(b, ddof=1) / 3)
    assert stats.welch_t(a, b) == pytest.approx(expected)
    assert stats.welch_t(b, a) == pytest.approx(-expected)


def test_welch_t_degenerate_cases():
    assert stats.welch_t(np.array([5.0, 5.0]), np.array([5.0, 5.0, 5.0])) == 0.0
    assert stats.welch_t(np.array([6.0, 6.0]), np.array([5.0, 5.0])) == math.inf
    assert stats.welch_t(np.array([1.0]), np.array([1.0, 2.0])) == 0.0


def test_identical_classes_fire_at_the_nominal_rate():
    rng = np.random.default_rng(1)
    trials, n = 3000, 200
    z = stats.norm_ppf(0.975)  # two-sided 5%
    hits = sum(abs(stats.welch_t(rng.normal(size=n), rng.normal(size=n))) > z for _ in range(trials))
    # binomial sd at 5% over 3000 trials is 0.004; allow four of them
    assert abs(hits / trials - 0.05) < 0.016


def test_battery_on_identical_heavy_tailed_classes_stays_below_its_bound():
    rng = np.random.default_rng(2)
    runs, n, t = 300, 2000, 3.0
    per_test = 2 * (1 - stats.norm_cdf(t))
    bound = len(stats.CROPS) * 2 * per_test  # union bound over the 14 tests: 0.038
    hits = 0
    for _ in range(runs):
        x = 1000 + rng.gamma(2.0, 20.0, n) + (rng.random(n) < 0.01) * rng.exponential(5000, n)
        lab = rng.integers(0, 2, n)
        hits += stats.max_abs_t(stats.battery(x, lab)) > t
    assert hits / runs <= bound + 3 * math.sqrt(bound / runs)
    assert hits > 0  # the battery does fire sometimes at this low threshold (it is not inert)


def _shift_for_power(power, n, sd=1.0):
    se = sd * math.sqrt(2 / n)
    lo, hi = 0.0, 20 * se
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if stats.power_shift(sd ** 2, sd ** 2, n, n, mid, T) < power else (lo, mid)
    return lo


@pytest.mark.parametrize("target_power", [0.5, 0.9])
def test_planted_shift_detected_with_the_predicted_power(target_power):
    rng = np.random.default_rng(3)
    n, trials = 500, 500
    delta = _shift_for_power(target_power, n)
    assert stats.power_shift(1, 1, n, n, delta, T) == pytest.approx(target_power, abs=1e-6)
    hits = sum(abs(stats.welch_t(rng.normal(size=n) + delta, rng.normal(size=n))) > T
               for _ in range(trials))
    sd = math.sqrt(target_power * (1 - target_power) / trials)
    assert abs(hits / trials - target_power) < 4 * sd + 0.02


def test_planted_dispersion_change_detected_with_the_predicted_power():
    rng = np.random.default_rng(4)
    n, trials = 2000, 400
    reference = rng.normal(size=200000)
    lo, hi = 1.0, 2.0
    for _ in range(50):  # the factor whose predicted power is 0.5
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if stats.power_dispersion(reference, n, n, mid, T) < 0.5 else (lo, mid)
    k = lo
    hits = 0
    for _ in range(trials):
        a, b = rng.normal(size=n), k * rng.normal(size=n)
        hits += abs(stats.welch_t((a - a.mean()) ** 2, (b - b.mean()) ** 2)) > T
    assert abs(hits / trials - 0.5) < 4 * math.sqrt(0.25 / trials) + 0.02
    # and a twofold change at this size is all but certain to be seen
    assert stats.power_dispersion(reference, n, n, 2.0, T) > 0.999


def _noisy_timings(rng, n):
    return 5000 + rng.gamma(3.0, 30.0, n) + (rng.random(n) < 0.02) * rng.exponential(3000, n)


@pytest.mark.parametrize("effect", [stats.shift_effect(9.0), stats.dispersion_effect(1.15)],
                         ids=["shift", "dispersion"])
def test_resampled_power_predicts_the_battery_detection_rate(effect):
    rng = np.random.default_rng(5)
    n, trials = 2000, 200
    predicted = stats.resampled_power([_noisy_timings(rng, n)], effect, T, 200, rng).power
    hits = 0
    for _ in range(trials):  # fresh campaigns with the effect really present
        x = _noisy_timings(rng, n)
        lab = rng.integers(0, 2, n).astype(bool)
        x[lab] = effect(x[lab], x)
        hits += stats.max_abs_t(stats.battery(x, lab)) > T
    assert 0.1 < predicted < 0.95  # the sizes were chosen to sit on the slope of the power curve
    assert abs(hits / trials - predicted) < 0.15


def test_detectable_shift_has_the_stated_power():
    d = stats.detectable_shift(4.0, 9.0, 300, 500, T, power=0.8)
    assert stats.power_shift(4.0, 9.0, 300, 500, d, T) == pytest.approx(0.8, abs=1e-3)


def test_resampling_without_an_effect_is_the_relabelled_null():
    rng = np.random.default_rng(6)
    r = stats.resampled_power([_noisy_timings(rng, 1000)], None, T, 100, rng)
    assert r.power <= 0.03 and len(r.max_t) == 100
