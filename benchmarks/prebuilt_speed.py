"""Warm speed of kernels installed from a bundle against the same kernels compiled on this
machine, as a results file for BENCHMARKS.md.

    python benchmarks/prebuilt_speed.py --prebuilt DIR [--alg NAME ...] [--rounds N] [--seconds S] [--out FILE]

Two numba caches, each empty at the start: one filled by compiling here (``PQFORGE_PREBUILT=none``),
one by the first use installing the bundle from DIR that fits (``pqforge precompile --prebuilt``).
Per round, per algorithm, the two in turn (interleaved): ``pqforge bench --json`` in a new
process on that cache (its operations are warmed up before they are timed). Figures: median µs
per operation, the least over the rounds in the table. The kernel set is the machine's own
(``PQFORGE_KERNELS`` chooses another, for both sides).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from startup_sets import _write  # (benchmarks/ is on the path of a script run from it)
from tables import quota_prefix


def bench(alg: str, cache: Path, prebuilt: str, seconds: float) -> dict[str, float]:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PQFORGE_PREBUILT=prebuilt)
    out = subprocess.run([sys.executable, "-m", "pqforge", "bench", "--json", "--alg", alg, "--seconds", str(seconds)],
                         env=env, check=True, capture_output=True, text=True).stdout
    return {row["op"]: row["median_us"] for row in json.loads(out)["results"]}


def main() -> None:
    from pqforge.gf16 import sets
    from pqforge.jit import prebuilt

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prebuilt", type=Path, required=True, metavar="DIR", help="bundles (pqforge precompile --prebuilt)")
    parser.add_argument("--alg", action="append", help="algorithm (repeatable; default MAYO-2)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=0.5, help="minimum measuring time per operation")
    parser.add_argument("--out", type=Path, help="results file (default: a new one under benchmarks/results)")
    args = parser.parse_args()
    os.environ[prebuilt.ENV] = str(args.prebuilt.resolve())
    bundle = prebuilt.find()
    if bundle is None:
        sys.exit(f"no bundle in {args.prebuilt} fits this machine and set ({sets.NAME})")
    profile = prebuilt.read_meta(bundle)["profile"]
    algs = args.alg or ["MAYO-2"]
    start = dt.datetime.now(dt.timezone.utc)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        here, installed = Path(tmp) / "compiled", Path(tmp) / "installed"
        for round_ in range(1, args.rounds + 1):
            for alg in algs:
                for impl, cache, source in (("compiled here", here, "none"),
                                            (f"prebuilt {profile}", installed, str(args.prebuilt.resolve()))):
                    rows.append({"round": round_, "alg": alg, "impl": impl, "us": bench(alg, cache, source, args.seconds)})
                    print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    _write("prebuilt-speed", start, rows, args.out,
           command=f"`{quota_prefix()}python benchmarks/prebuilt_speed.py --prebuilt {args.prebuilt} "
                   f"{' '.join('--alg ' + a for a in algs)} --rounds {args.rounds} --seconds {args.seconds}`",
           method="two numba caches, empty at the start, one filled by compiling here and one by installing "
                  "the bundle that fits; per round and algorithm the two in turn, each `pqforge bench --json` "
                  "in a new process (warmed up before timing); median µs per operation",
           kernels=f"{sets.NAME} (this machine's own set), both sides", reference="compiled here", unit="us")


if __name__ == "__main__":
    main()
