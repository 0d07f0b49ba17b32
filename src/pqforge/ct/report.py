"""Campaign reports: ``<target>.json`` (raw statistics), ``<target>.md`` (verdict and summary),
``<target>-timings.npz`` (every measurement) and, when matplotlib is installed, three PNG plots."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from .harness import Campaign


def _finite(value):
    """JSON has no infinities or NaN: write them as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def write(camp: Campaign, out_dir: str | Path) -> dict[str, Path]:
    """Write every report file for ``camp`` into ``out_dir``; their paths by kind."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stem = _slug(camp.target.name) + (f"-{_slug(camp.alg)}" if camp.alg else "")
    paths = {"json": out / f"{stem}.json", "markdown": out / f"{stem}.md",
             "timings": out / f"{stem}-timings.npz"}
    data = camp.as_dict()
    plots = plot(camp, out, stem)
    data["plots"] = {k: p.name for k, p in plots.items()}
    paths["json"].write_text(json.dumps(_finite(data), indent=1) + "\n")
    np.savez_compressed(paths["timings"],
                        **{f"{r.kind}{r.index}_times_ns": r.times for r in camp.runs},
                        **{f"{r.kind}{r.index}_labels": r.labels for r in camp.runs})
    paths["markdown"].write_text(markdown(camp, plots))
    paths.update(plots)
    return paths


def _fmt_p(d: dict) -> str:
    return f"{d['power']:.2f} ± {d['stderr']:.2f} ({d['resamples']} relabellings)"


def markdown(camp: Campaign, plots: dict | None = None) -> str:
    d = camp.as_dict()
    t = camp.target
    pw = camp.power
    env = camp.environment
    timer = env.get("timer", {})
    lines = [f"# Timing campaign: {t.name}" + (f" ({camp.alg})" if camp.alg else ""), "",
             f"**Verdict: {camp.verdict}.**", ""]
    lines += [f"- {r}" for r in camp.reasons]
    lines += ["", f"{t.description}", "",
              "## Set-up", "",
              f"- Callable: `{getattr(t.func, '__qualname__', repr(t.func))}` ({t.kind}); secret "
              f"arguments: {', '.join(map(str, t.secret_args)) or 'none'}",
              f"- Classes: label 0 = {t.classes[0]}, label 1 = {t.classes[1]}; labels by fair coin, "
              f"interleaved",
              f"- {camp.repeats} real and {camp.repeats} null runs of {camp.measurements} measurements "
              f"each (null: both labels drawn from class '{t.classes[1]}'); seed {camp.seed}",
              f"- Threshold |t| > {camp.threshold:g} on the largest of {len(camp.runs[0].tests)} tests "
              f"(first and second order, cropped at the pooled percentiles)",
              f"- Timer: {timer.get('clock')}, smallest step seen {timer.get('min_step_ns')} ns, "
              f"median cost of a read pair {timer.get('median_read_pair_ns')} ns",
              f"- Machine: {env.get('processor')}, {env.get('cpus')} CPUs, Python {env.get('python')}, "
              f"{env.get('date')}; campaign took {camp.elapsed_s:.1f} s", "",
              "## Runs", "",
              "| run | largest \\|t\\| | strongest test | median ns (0 / 1) | detected |",
              "|---|---:|---|---|---|"]
    for r in camp.runs:
        top = max(r.tests, key=lambda s: abs(s.t))
        x = r.times
        med = [np.median(x[r.labels == k]) if (r.labels == k).any() else math.nan for k in (0, 1)]
        lines.append(f"| {r.kind} {r.index} | {r.max_t:.2f} | {top.name} | {med[0]:.0f} / {med[1]:.0f} "
                     f"| {'yes' if r.max_t > camp.threshold else 'no'} |")
    rl = camp.relabel_null
    lines += ["", "## False positives", "",
              f"- Null runs over the threshold: {d['null_detections']} of {len(camp.null())} "
              f"(empirical false-positive rate {d['null_false_positive_rate']:.2f}; resolution "
              f"1/{len(camp.null())})"]
    if rl is not None:
        lines.append(f"- Random relabellings of the null timings over the threshold: "
                     f"{rl.power:.3f} ({rl.resamples} relabellings; this shows the battery's own "
                     f"rate, without the drift a null run can contain)")
    s, disp = pw["shift"], pw["dispersion"]
    lines += ["", "## Power", "",
              f"Computed from the null-run timings (median {pw['median_ns']:.0f} ns, sd "
              f"{pw['sd_ns']:.0f} ns) at {pw['per_class_n']} measurements per class and run.", "",
              "| effect | resampled (whole battery) | analytic (uncropped test) |", "|---|---|---|",
              f"| shift of {s['size_ns']:.1f} ns ({100 * (s['size_fraction_of_median'] or 0):.2f}% of the "
              f"median) | {_fmt_p(s['resampled'])} | {s['analytic_uncropped']:.2f} |",
              f"| {disp['factor']:g}-fold dispersion | {_fmt_p(disp['resampled'])} | "
              f"{disp['analytic_uncropped']:.2f} |", "",
              f"Shift detectable with 80% power by one test: {s['detectable_80_uncropped_ns']:.1f} ns "
              f"uncropped, about {s['detectable_80_best_crop_ns']:.1f} ns at the quietest crop "
              f"(p{100 * (s['best_crop'] or 1):g}), if the shift survives cropping.", ""]
    if plots:
        lines += ["## Plots", ""] + [f"![{k}]({p.name})" for k, p in plots.items()] + [""]
    else:
        lines += ["(Plots need matplotlib: `pip install pqforge[ct]`.)", ""]
    lines += ["How to read this report: see docs/constant-time.md in the pqforge repository.", ""]
    return "\n".join(lines)


def plot(camp: Campaign, out: Path, stem: str) -> dict[str, Path]:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    paths = {}

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in camp.runs:
        if r.curve:
            n, t = zip(*r.curve)
            t = [max(v, 0.05) if math.isfinite(v) else 1e6 for v in t]
            ax.plot(n, t, color="C3" if r.kind == "real" else "0.6", lw=1.5 if r.kind == "real" else 1,
                    label=f"{r.kind} runs" if r.index == 0 else None)
    ax.axhline(camp.threshold, color="k", ls="--", lw=1, label=f"threshold {camp.threshold:g}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measurements")
    ax.set_ylabel("largest |t| of the battery")
    ax.set_title(f"{camp.target.name}: |t| as measurements accumulate")
    ax.legend()
    fig.tight_layout()
    paths["t_vs_n"] = out / f"{stem}-t-vs-n.png"
    fig.savefig(paths["t_vs_n"], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    real = camp.real()
    x = np.concatenate([r.times for r in real]).astype(np.float64)
    lab = np.concatenate([r.labels for r in real])
    hi = np.quantile(x, 0.99)
    lo = np.quantile(x, 0.001)
    bins = np.linspace(lo, hi, 80)
    for k in (0, 1):
        ax.hist(x[lab == k], bins=bins, histtype="step", density=True, lw=1.5,
                label=f"label {k}: {camp.target.classes[k]}")
    ax.set_xlabel("ns per call (real runs, up to the 99th percentile)")
    ax.set_ylabel("density")
    ax.set_title(f"{camp.target.name}: timing distributions")
    ax.legend()
    fig.tight_layout()
    paths["distributions"] = out / f"{stem}-distributions.png"
    fig.savefig(paths["distributions"], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(7, 4))
    null_t = [abs(s.t) for r in camp.null() for s in r.tests]
    top = max([camp.threshold * 1.2] + null_t + [r.max_t for r in camp.runs if math.isfinite(r.max_t)])
    bins = np.linspace(0, min(top, 50), 50)
    if camp.relabel_null is not None:
        ax.hist(camp.relabel_null.max_t, bins=bins, density=True, color="0.8",
                label="relabelled null: largest |t| per relabelling")
    ax.hist(null_t, bins=bins, density=True, histtype="step", color="0.3", lw=1.5,
            label="null runs: |t| of every test")
    for r in camp.null():
        ax.axvline(min(r.max_t, bins[-1]), color="0.3", ls=":", lw=1)
    for r in real:
        ax.axvline(min(r.max_t, bins[-1]), color="C3", lw=1.5)
    ax.axvline(camp.threshold, color="k", ls="--", lw=1)
    ax.set_xlabel(f"|t|  (dotted: largest per null run; red: largest per real run, drawn at "
                  f"{bins[-1]:.0f} when larger; dashed: threshold)", fontsize=8)
    ax.set_ylabel("density")
    ax.set_title(f"{camp.target.name}: null distribution of |t|")
    ax.legend(fontsize=8)
    fig.tight_layout()
    paths["null"] = out / f"{stem}-null.png"
    fig.savefig(paths["null"], dpi=110)
    plt.close(fig)
    return paths
