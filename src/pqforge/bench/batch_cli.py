"""The ``bench-batch`` command's arguments, apart from the benchmark (``batch.py``) so that
building the command line imports no compiled code."""

from __future__ import annotations

import json
import sys


def add_arguments(s) -> None:
    s.add_argument("--alg", action="append", help="parameter set (repeatable; default: all four)")
    s.add_argument("--batch", type=int, default=512, help="same-key batch size")
    s.add_argument("--distinct", type=int, default=128, help="number of distinct keys")
    s.add_argument("--threads", type=int, help="threads for the parallel runs (default: all cores)")
    s.add_argument("--seconds", type=float, default=0.2, help="minimum measuring time per kernel")
    s.add_argument("--no-kernels", action="store_true", help="skip the per-kernel model table")
    s.add_argument("--json", metavar="PATH", help="also write the results as JSON")


def cmd(args) -> int:
    from .batch import run, table
    res = run(args.alg, batch_size=args.batch, distinct=args.distinct, threads=args.threads, seconds=args.seconds,
              progress=lambda s: print(f"  {s}", file=sys.stderr), kernels_too=not args.no_kernels)
    print(table(res))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)
    return 0


def add_parser(sub) -> None:
    """The ``bench-batch`` subcommand for the pqforge command line."""
    s = sub.add_parser("bench-batch", help="throughput of batched signing and verification")
    add_arguments(s)
    s.set_defaults(func=cmd)
