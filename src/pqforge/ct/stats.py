"""Statistics for timing-leak campaigns: Welch's t, the test battery, power and detectable effects.

A campaign compares two classes of timings (label 0 and label 1). The *battery* is a set of Welch
t-tests on one run: the first-order test (difference of means) and the second-order test
(difference of means of the centred squares, i.e. of variances), each on the whole run and on the
measurements below several percentiles of the pooled run ("cropping", which removes the slow tail
that interrupts and cache misses add). The run's statistic is the largest |t| over the battery.

Power is computed two ways. Analytically, from the normal approximation of Welch's statistic and
the measured variance (for the uncropped tests). By resampling: the measured no-leak timings are
relabelled at random, a stated effect is planted in one class, the whole battery is run, and the
fraction of relabellings whose largest |t| passes the threshold is the power of this exact decision
rule on this machine's noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Callable, Sequence

import numpy as np

CROPS: tuple[float | None, ...] = (None, 0.999, 0.99, 0.95, 0.9, 0.75, 0.5)
"""Cropping levels: ``None`` keeps every measurement, ``q`` keeps those <= the pooled q-quantile."""

DEFAULT_THRESHOLD = 4.5
"""|t| above which a single run counts as a detection."""

_NORMAL = NormalDist()


def norm_cdf(z: float) -> float:
    return _NORMAL.cdf(z)


def norm_ppf(p: float) -> float:
    return _NORMAL.inv_cdf(p)


def welch_t(a: np.ndarray, b: np.ndarray) -> float:
    """Welch's t statistic for mean(a) - mean(b).

    0 when either side has fewer than two values or both are constant and equal; +-inf when both
    are constant with different values (a difference no noise can explain).
    """
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return 0.0
    ma, mb = float(np.mean(a)), float(np.mean(b))
    se2 = float(np.var(a, ddof=1)) / na + float(np.var(b, ddof=1)) / nb
    if se2 <= 0.0:
        return 0.0 if ma == mb else math.copysign(math.inf, ma - mb)
    return (ma - mb) / math.sqrt(se2)


@dataclass(frozen=True)
class TestStat:
    """One test of the battery: ``order`` 1 (means) or 2 (variances), ``crop`` as in CROPS."""
    order: int
    crop: float | None
    t: float
    n0: int
    n1: int

    @property
    def name(self) -> str:
        where = "all" if self.crop is None else f"<=p{self.crop * 100:g}"
        return f"{'first' if self.order == 1 else 'second'}-order {where}"

    def as_dict(self) -> dict:
        return {"name": self.name, "order": self.order, "crop": self.crop, "t": self.t,
                "n0": self.n0, "n1": self.n1}


def battery(x: np.ndarray, labels: np.ndarray, crops: Sequence[float | None] = CROPS,
            orders: Sequence[int] = (1, 2)) -> list[TestStat]:
    """Every (crop, order) Welch test on timings ``x`` split by ``labels`` (0/1)."""
    x = np.asarray(x, dtype=np.float64)
    lab = np.asarray(labels).astype(bool)
    levels = [c for c in crops if c is not None]
    cuts = dict(zip(levels, np.quantile(x, levels))) if levels and len(x) else {}
    out = []
    for crop in crops:
        keep = np.ones(len(x), dtype=bool) if crop is None else x <= cuts[crop]
        a, b = x[keep & ~lab], x[keep & lab]
        for order in orders:
            if order == 1:
                t = welch_t(a, b)
            else:
                t = welch_t((a - a.mean()) ** 2, (b - b.mean()) ** 2) if len(a) and len(b) else 0.0
            out.append(TestStat(order, crop, t, len(a), len(b)))
    return out


def max_abs_t(stats: Sequence[TestStat]) -> float:
    return max((abs(s.t) for s in stats), default=0.0)


def t_curve(x: np.ndarray, labels: np.ndarray, points: int = 40, start: int = 100,
            crops: Sequence[float | None] = CROPS) -> list[tuple[int, float]]:
    """(n, largest |t| of the battery on the first n measurements) at log-spaced n."""
    n = len(x)
    if n < start:
        return [(n, max_abs_t(battery(x, labels, crops)))] if n else []
    ns = np.unique(np.geomspace(start, n, points).astype(int))
    return [(int(k), max_abs_t(battery(x[:k], labels[:k], crops))) for k in ns]


# -- power ----------------------------------------------------------------------------------------

def _two_sided_power(z: float, threshold: float) -> float:
    return norm_cdf(z - threshold) + norm_cdf(-z - threshold)


def power_shift(var0: float, var1: float, n0: int, n1: int, shift: float, threshold: float) -> float:
    """P(|t| > threshold) for a first-order test when the class means differ by ``shift``."""
    se = math.sqrt(var0 / n0 + var1 / n1)
    if se == 0:
        return 1.0 if shift else 0.0
    return _two_sided_power(shift / se, threshold)


def detectable_shift(var0: float, var1: float, n0: int, n1: int, threshold: float,
                     power: float = 0.8) -> float:
    """The mean difference a first-order test detects with probability ``power`` (one tail)."""
    return (threshold + norm_ppf(power)) * math.sqrt(var0 / n0 + var1 / n1)


def power_dispersion(x: np.ndarray, n0: int, n1: int, factor: float, threshold: float) -> float:
    """P(|t| > threshold) for the second-order test when class 1's spread is ``factor`` times
    that of ``x`` (a sample of the no-leak distribution); uses x's second and fourth moments."""
    c = np.asarray(x, dtype=np.float64)
    c = c - c.mean()
    m2 = float(np.mean(c ** 2))
    v = float(np.mean(c ** 4)) - m2 ** 2  # variance of a centred square
    if v <= 0:
        return 1.0 if factor != 1 and m2 > 0 else 0.0
    delta = (factor ** 2 - 1.0) * m2
    se = math.sqrt(v / n0 + factor ** 4 * v / n1)
    return _two_sided_power(delta / se, threshold)


def shift_effect(shift: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A planted effect: class-1 timings are ``shift`` ns slower."""
    def plant(values: np.ndarray, pooled: np.ndarray) -> np.ndarray:
        return values + shift
    plant.description = f"shift of {shift:g} ns"
    return plant


def dispersion_effect(factor: float) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """A planted effect: class-1 deviations from the pooled median are multiplied by ``factor``."""
    def plant(values: np.ndarray, pooled: np.ndarray) -> np.ndarray:
        med = float(np.median(pooled))
        return med + factor * (values - med)
    plant.description = f"{factor:g}-fold dispersion around the median"
    return plant


@dataclass(frozen=True)
class ResampledPower:
    power: float
    stderr: float
    resamples: int
    max_t: tuple[float, ...]

    def as_dict(self) -> dict:
        return {"power": self.power, "stderr": self.stderr, "resamples": self.resamples}


def resampled_power(samples: Sequence[np.ndarray], effect, threshold: float, resamples: int,
                    rng: np.random.Generator, crops: Sequence[float | None] = CROPS) -> ResampledPower:
    """Detection rate of the battery when ``effect`` is planted in randomly relabelled no-leak data.

    ``samples`` are runs of no-leak timings (each of the campaign's run length); resample ``i``
    relabels run ``i mod len(samples)`` with fresh fair coin flips, applies ``effect`` (or nothing
    when it is None) to label-1 timings and runs the battery.
    """
    hits, tops = 0, []
    for i in range(resamples):
        x = np.asarray(samples[i % len(samples)], dtype=np.float64)
        lab = rng.integers(0, 2, len(x)).astype(bool)
        y = x.copy()
        if effect is not None:
            y[lab] = effect(y[lab], x)
        top = max_abs_t(battery(y, lab, crops))
        tops.append(top)
        hits += top > threshold
    p = hits / resamples if resamples else 0.0
    se = math.sqrt(p * (1 - p) / resamples) if resamples else 0.0
    return ResampledPower(p, se, resamples, tuple(tops))
