"""Every measurement pqforge ships, in one package; this module is the harness of ``pqforge bench``
(warm medians per operation, the same for every algorithm).

    mayo_steps  MAYO's steps one by one (``pqforge bench --steps``)
    startup     cold and warm first use in new processes (``pqforge bench --startup``)
    batch       batch throughput and its op-count model (``pqforge bench-batch``)
    gpu         device throughput (``python -m pqforge.bench.gpu``, run by scripts/gpu_check.sh)
    service     the service under load, beside the library (``pqforge bench-serve``)

The scripts that drive these for the published tables, and the results they write, are in the
repository's ``benchmarks/`` folder (``benchmarks/tables.py`` makes BENCHMARKS.md's tables).
"""

from __future__ import annotations

import platform
import statistics
import time
from datetime import date


def measure(fn, min_runs: int = 5, min_seconds: float = 0.3, max_runs: int = 10000) -> dict:
    """Median (and quartiles) of ``fn()`` in microseconds, after one warm-up call."""
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < max_runs and (len(times) < min_runs or time.perf_counter() - start < min_seconds):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1000)
    q = statistics.quantiles(times, n=4) if len(times) >= 2 else [times[0]] * 3
    return {"median_us": statistics.median(times), "q1_us": q[0], "q3_us": q[2], "runs": len(times)}


def run(algs, min_seconds: float = 0.3, progress=None) -> list[dict]:
    """Measure every ``alg.benchmark_ops()`` entry; one row per (algorithm, operation)."""
    rows = []
    for alg in algs:
        for op, fn in alg.benchmark_ops().items():
            if progress:
                progress(f"{alg.name} {op}")
            rows.append({"alg": alg.name, "op": op, **measure(fn, min_seconds=min_seconds)})
    return rows


def machine() -> dict:
    """The machine, and which GF(16) kernel set ran on it ("gfni", "avx2", "neon" or "portable")."""
    import os
    from ..gf16 import sets
    return {"date": date.today().isoformat(), "machine": platform.machine(),
            "processor": cpu_name(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "gf16_kernels": sets.NAME}


def cpu_name() -> str:
    """The processor's model name (on aarch64, where /proc/cpuinfo has none, the CPU that numba
    compiles for, as LLVM names it; under qemu-user that file is the host's)."""
    if platform.machine() in ("aarch64", "arm64"):
        import llvmlite.binding as llvm
        import numba
        named = numba.config.CPU_NAME
        return f"aarch64 {named if named and named != 'host' else llvm.get_host_cpu_name()}"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def table(rows: list[dict]) -> str:
    """Markdown table: one line per algorithm, one column per operation (median µs)."""
    ops = list(dict.fromkeys(r["op"] for r in rows))
    algs = list(dict.fromkeys(r["alg"] for r in rows))
    cell = {(r["alg"], r["op"]): r["median_us"] for r in rows}
    lines = ["| algorithm | " + " | ".join(f"{op} (µs)" for op in ops) + " |",
             "|---|" + "---:|" * len(ops)]
    for a in algs:
        vals = [f"{cell[(a, op)]:,.1f}" if (a, op) in cell else "" for op in ops]
        lines.append(f"| {a} | " + " | ".join(vals) + " |")
    return "\n".join(lines)
