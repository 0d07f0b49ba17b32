"""First use from an empty cache under each kernel set, as a results file for BENCHMARKS.md.

    python benchmarks/startup_sets.py [--alg NAME ...] [--sets SET,...] [--rounds N] [--out FILE]

For each round, algorithm and kernel set in turn (interleaved), ``pqforge.bench.startup`` runs
a new interpreter with an empty numba cache (the first key, then the rest of the round trip:
keygen + sign + verify, or keygen + encap + decap), then one with the cache it filled, then
numba's floor (a process that calls one cached one-line kernel). Writes one JSON Lines file in
the format of ``benchmarks/results/README.md``: seconds, the least over the rounds in the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
from pathlib import Path

from tables import machine  # (benchmarks/ is on the path of a script run from it)

HERE = Path(__file__).resolve().parent


def main() -> None:
    from pqforge.bench import startup
    from pqforge.gf16 import sets

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alg", action="append", help="algorithm (repeatable; default MAYO-2)")
    parser.add_argument("--sets", default=",".join(sets.runnable()),
                        help="kernel sets, comma-separated (default: every set this CPU runs)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, help="results file (default: a new one under benchmarks/results)")
    args = parser.parse_args()
    algs, chosen = args.alg or ["MAYO-2"], args.sets.split(",")
    start = dt.datetime.now(dt.timezone.utc)
    rows = []
    for round_ in range(1, args.rounds + 1):
        for alg in algs:
            # McEliece has one set of kernels: PQFORGE_KERNELS chooses only MAYO's
            for name in (chosen if alg.startswith("MAYO") else chosen[:1]):
                os.environ[sets.ENV] = name
                t = startup.measure(alg)
                cold, warm = t["cold"], t["warm"]
                row = {"cold: first key": cold["one_op_s"], "cold: round trip": cold["import_s"] + cold["first_ops_s"],
                       "warm: first key": warm["one_op_s"], "numba floor": t["numba_floor_s"]}
                impl = f"{name} set" if alg.startswith("MAYO") else "its kernels"
                rows.append({"round": round_, "alg": alg, "impl": impl, "s": {k: round(v, 2) for k, v in row.items()}})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    end = dt.datetime.now(dt.timezone.utc)
    meta = {"comparison": "cold-start", "machine": machine(), "date": start.strftime("%Y-%m-%d"),
            "time_utc": f"{start:%H:%M}-{end:%H:%M}", "unit": "s",
            "command": f"`python benchmarks/startup_sets.py {' '.join('--alg ' + a for a in algs)} "
                       f"--sets {','.join(chosen)} --rounds {args.rounds}`",
            "method": "per round, each algorithm and set in turn: a new interpreter with an empty numba cache "
                      "(the first key, then the whole round trip from the start of the import), the next one "
                      "with that cache, then numba's floor; the compile helpers use the other cores",
            "kernels": "each column names its set (`PQFORGE_KERNELS`; McEliece has one)",
            "python": platform.python_version()}
    out = args.out or HERE / "results" / f"cold-start-{start:%Y-%m-%d-%H%M}.jsonl"
    with out.open("w", encoding="utf-8") as f:
        for record in [{"meta": meta}, *rows]:
            f.write(json.dumps(record) + "\n")
    print(out)


if __name__ == "__main__":
    main()
