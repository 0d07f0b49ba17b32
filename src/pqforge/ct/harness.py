"""The timing harness: interleaved two-class measurements, matched null runs, power and verdict.

A campaign is ``repeats`` rounds. Each round makes one *real* run (label 0 draws the target's
first input class, label 1 its second) and one *null* run (both labels draw the second class, so
any difference is the harness's and the machine's own), in alternating order. In every run the
labels are fair coin flips, the inputs of a chunk of measurements are prepared before the chunk is
timed, and each call is bracketed by ``time.perf_counter_ns`` with the garbage collector paused.
"""

from __future__ import annotations

import gc
import math
import platform
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import InvalidInput
from . import stats
from .registry import Target

CHUNK = 500
"""Measurements whose inputs are prepared together, then timed back to back."""

MIN_POWER = 0.8
"""Power (for each stated effect) that a "no leak detected" verdict needs."""

MAX_NULL_RATE = 0.2
"""Highest null-run detection rate at which a run's detection is still taken as evidence."""


@dataclass
class Run:
    kind: str                   # "real" or "null"
    index: int
    times: np.ndarray           # ns, int64
    labels: np.ndarray          # 0/1, uint8
    tests: list = field(default_factory=list)
    curve: list = field(default_factory=list)

    @property
    def max_t(self) -> float:
        return stats.max_abs_t(self.tests)

    def summary(self, threshold: float) -> dict:
        x = self.times.astype(np.float64)
        per_class = {}
        for lab in (0, 1):
            v = x[self.labels == lab]
            per_class[str(lab)] = {
                "n": int(v.size), "mean_ns": float(v.mean()) if v.size else None,
                "median_ns": float(np.median(v)) if v.size else None,
                "sd_ns": float(v.std(ddof=1)) if v.size > 1 else None,
                "p5_ns": float(np.quantile(v, 0.05)) if v.size else None,
                "p95_ns": float(np.quantile(v, 0.95)) if v.size else None}
        return {"kind": self.kind, "index": self.index, "n": int(len(x)), "max_abs_t": self.max_t,
                "detected": self.max_t > threshold, "classes": per_class,
                "tests": [t.as_dict() for t in self.tests],
                "t_curve": [[n, t] for n, t in self.curve]}


@dataclass
class Campaign:
    target: Target
    alg: str | None
    measurements: int
    repeats: int
    threshold: float
    shift_ns: float
    dispersion: float
    seed: int
    runs: list = field(default_factory=list)
    power: dict = field(default_factory=dict)
    relabel_null: stats.ResampledPower | None = None
    verdict: str = ""
    reasons: list = field(default_factory=list)
    environment: dict = field(default_factory=dict)
    elapsed_s: float = 0.0

    def real(self) -> list[Run]:
        return [r for r in self.runs if r.kind == "real"]

    def null(self) -> list[Run]:
        return [r for r in self.runs if r.kind == "null"]

    def null_rate(self) -> float:
        null = self.null()
        return sum(r.max_t > self.threshold for r in null) / len(null) if null else math.nan

    def as_dict(self) -> dict:
        t = self.target
        return {
            "target": t.name, "description": t.description, "kind": t.kind, "alg": self.alg,
            "classes": {"0": t.classes[0], "1": t.classes[1]},
            "secret_args": list(t.secret_args),
            "measurements_per_run": self.measurements, "repeats": self.repeats,
            "threshold": self.threshold, "seed": self.seed, "elapsed_s": self.elapsed_s,
            "verdict": self.verdict, "reasons": self.reasons,
            "real_detections": sum(r.max_t > self.threshold for r in self.real()),
            "null_detections": sum(r.max_t > self.threshold for r in self.null()),
            "null_false_positive_rate": self.null_rate(),
            "relabelled_null": None if self.relabel_null is None else {
                **self.relabel_null.as_dict(), "false_positive_rate": self.relabel_null.power},
            "power": self.power, "environment": self.environment,
            "runs": [r.summary(self.threshold) for r in self.runs],
        }


def timer_facts(samples: int = 20000) -> dict:
    """The clock's stated resolution and the smallest nonzero step seen between two reads."""
    info = time.get_clock_info("perf_counter")
    clock = time.perf_counter_ns
    steps = np.empty(samples, dtype=np.int64)
    for i in range(samples):
        a = clock()
        steps[i] = clock() - a
    nonzero = steps[steps > 0]
    return {"clock": info.implementation, "stated_resolution_ns": info.resolution * 1e9,
            "min_step_ns": int(nonzero.min()) if nonzero.size else None,
            "median_read_pair_ns": float(np.median(steps))}


def environment() -> dict:
    from ..bench import machine
    return {**machine(), "platform": platform.platform(), "numpy": np.__version__,
            "timer": timer_facts()}


def _fixed_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def measure(target: Target, params, n: int, rng: np.random.Generator, fixed_seed: int,
            null: bool = False, progress: Callable[[int], None] | None = None,
            chunk: int = CHUNK) -> tuple[np.ndarray, np.ndarray]:
    """One run of ``n`` interleaved measurements: (times in ns, labels)."""
    fn, make = target.func, target.make_inputs
    clock = time.perf_counter_ns
    times = np.empty(n, dtype=np.int64)
    labels = rng.integers(0, 2, n).astype(np.uint8)
    done = 0
    while done < n:
        m = min(chunk, n - done)
        inputs = []
        seeds = rng.integers(2 ** 63, size=m)
        for lab, s in zip(labels[done:done + m], seeds):
            # every input, of either class, comes from a fresh generator through the same path:
            # the fixed class re-uses one seed, the random class (and the null run) fresh seeds
            if lab == 0 and not null:
                inputs.append(make(params, _fixed_rng(fixed_seed), True))
            else:
                inputs.append(make(params, _fixed_rng(int(s)), False))
        out = times[done:done + m]
        gc_on = gc.isenabled()
        gc.disable()
        try:
            for i in range(m):
                args = inputs[i]
                t0 = clock()
                fn(*args)
                t1 = clock()
                out[i] = t1 - t0
        finally:
            if gc_on:
                gc.enable()
        del inputs
        done += m
        if progress:
            progress(m)
    return times, labels


def warm_up(target: Target, params, rng: np.random.Generator, fixed_seed: int, calls: int = 5) -> None:
    """Compile and exercise both classes before anything is timed."""
    for _ in range(calls):
        target.func(*target.make_inputs(params, _fixed_rng(fixed_seed), True))
        target.func(*target.make_inputs(params, rng, False))


def run_campaign(target: Target, alg: str | None = None, measurements: int = 20000, repeats: int = 3,
                 threshold: float = stats.DEFAULT_THRESHOLD, shift_ns: float | None = None,
                 dispersion: float = 2.0, resamples: int = 100, seed: int | None = None,
                 progress: Callable[[int], None] | None = None, curve_points: int = 30) -> Campaign:
    """Measure, test, estimate power and decide. ``shift_ns`` None means 1% of the median time."""
    if measurements < 100:
        raise InvalidInput("--measurements must be at least 100")
    if repeats < 1:
        raise InvalidInput("--repeats must be at least 1")
    if dispersion <= 1:
        raise InvalidInput("the dispersion factor must be above 1")
    alg, params = target.resolve_params(alg)
    seed = int(np.random.SeedSequence().entropy % (2 ** 63)) if seed is None else int(seed)
    rng = np.random.default_rng(seed)
    fixed_seed = int(rng.integers(2 ** 63))
    camp = Campaign(target, alg, measurements, repeats, threshold, math.nan, dispersion, seed)
    camp.environment = environment()
    started = time.perf_counter()
    warm_up(target, params, rng, fixed_seed)
    for r in range(repeats):
        order = ("real", "null") if r % 2 == 0 else ("null", "real")
        for kind in order:
            x, lab = measure(target, params, measurements, rng, fixed_seed, null=(kind == "null"),
                             progress=progress)
            run = Run(kind, r, x, lab)
            run.tests = stats.battery(x, lab)
            run.curve = stats.t_curve(x, lab, points=curve_points)
            camp.runs.append(run)
    analyse(camp, shift_ns, resamples, rng)
    camp.elapsed_s = time.perf_counter() - started
    return camp


def analyse(camp: Campaign, shift_ns: float | None, resamples: int, rng: np.random.Generator) -> None:
    """Power (analytic and resampled) from the null runs, then the verdict."""
    null = [r.times.astype(np.float64) for r in camp.null()]
    pooled = np.concatenate(null)
    n0 = n1 = camp.measurements // 2
    median = float(np.median(pooled))
    camp.shift_ns = shift = float(shift_ns) if shift_ns is not None else 0.01 * median
    var = float(pooled.var(ddof=1))
    best_crop_var, best_crop = var, None
    for crop in stats.CROPS[1:]:
        kept = pooled[pooled <= np.quantile(pooled, crop)]
        if kept.size > 1 and kept.var(ddof=1) < best_crop_var:
            best_crop_var, best_crop = float(kept.var(ddof=1)), crop
    shift_rs = stats.resampled_power(null, stats.shift_effect(shift), camp.threshold, resamples, rng)
    disp_rs = stats.resampled_power(null, stats.dispersion_effect(camp.dispersion), camp.threshold,
                                    resamples, rng)
    camp.relabel_null = stats.resampled_power(null, None, camp.threshold, resamples, rng)
    camp.power = {
        "basis": "null-run timings (both labels from the second class)",
        "per_class_n": n0, "median_ns": median, "sd_ns": math.sqrt(var),
        "shift": {
            "size_ns": shift, "size_fraction_of_median": shift / median if median else None,
            "analytic_uncropped": stats.power_shift(var, var, n0, n1, shift, camp.threshold),
            "analytic_best_crop": stats.power_shift(best_crop_var, best_crop_var, n0, n1, shift,
                                                    camp.threshold),
            "best_crop": best_crop,
            "resampled": shift_rs.as_dict(),
            "detectable_80_uncropped_ns": stats.detectable_shift(var, var, n0, n1, camp.threshold),
            "detectable_80_best_crop_ns": stats.detectable_shift(best_crop_var, best_crop_var, n0, n1,
                                                                 camp.threshold)},
        "dispersion": {
            "factor": camp.dispersion,
            "analytic_uncropped": stats.power_dispersion(pooled, n0, n1, camp.dispersion,
                                                         camp.threshold),
            "resampled": disp_rs.as_dict()},
    }
    decide(camp)


def decide(camp: Campaign) -> None:
    """The verdict rule (see docs/constant-time.md): a detection must reproduce in most real runs
    while the null runs stay quiet; "none detected" needs quiet runs and enough power for both
    stated effects."""
    real, null = camp.real(), camp.null()
    hits = sum(r.max_t > camp.threshold for r in real)
    rate = camp.null_rate()
    p_shift = camp.power["shift"]["resampled"]["power"]
    p_disp = camp.power["dispersion"]["resampled"]["power"]
    reasons = []
    null_quiet = rate <= MAX_NULL_RATE
    if not null_quiet:
        reasons.append(f"{rate:.0%} of null runs exceeded |t| = {camp.threshold:g}: the machine's own "
                       f"noise reaches the threshold, so detections are not evidence")
    if hits * 2 > len(real) and null_quiet:
        camp.verdict = "leak detected"
        reasons.append(f"{hits} of {len(real)} real runs exceeded |t| = {camp.threshold:g} "
                       f"(largest {max(r.max_t for r in real):.1f}); null runs: "
                       f"{sum(r.max_t > camp.threshold for r in null)} of {len(null)}")
    elif hits == 0 and null_quiet and p_shift >= MIN_POWER and p_disp >= MIN_POWER:
        camp.verdict = "no leak detected"
        reasons.append(f"no real run exceeded |t| = {camp.threshold:g}; power {p_shift:.2f} for a "
                       f"{camp.shift_ns:.1f} ns shift and {p_disp:.2f} for a {camp.dispersion:g}-fold "
                       f"dispersion change")
    else:
        camp.verdict = "inconclusive"
        if 0 < hits * 2 <= len(real):
            reasons.append(f"{hits} of {len(real)} real runs exceeded the threshold: not a majority")
        if hits == 0 and (p_shift < MIN_POWER or p_disp < MIN_POWER):
            reasons.append(f"no real run exceeded |t| = {camp.threshold:g}, but power is below "
                           f"{MIN_POWER:g}: {p_shift:.2f} for a {camp.shift_ns:.1f} ns shift, "
                           f"{p_disp:.2f} for a {camp.dispersion:g}-fold dispersion change")
    camp.reasons = reasons


def progress_bar(total: int, label: str) -> Callable[[int], None]:
    """The command line's progress bar, as a function taking increments."""
    from ..cli import progress_bar
    return progress_bar(total, label).update


def expected_calls(measurements: int, repeats: int) -> int:
    return 2 * measurements * repeats


