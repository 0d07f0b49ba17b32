"""The ``bench-batch`` command's arguments, apart from the benchmark (``batch.py``) so that
building the command line imports no compiled code."""

from __future__ import annotations

import argparse
import json
import sys

from .._memory import retain_freed_heap
from ..errors import UnknownAlgorithm
from ..files import Output, check_outputs, write_outputs


def mayo_name(name: str) -> str:
    from ..mayo import get
    try:
        return get(name).name
    except UnknownAlgorithm as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(s) -> None:
    from ..cli import int_between, positive_float, positive_int
    s.add_argument("--alg", action="append", type=mayo_name, help="MAYO parameter set (repeatable; default: all four)")
    # the batches are held in memory whole: bounded, as the service's max_batch is
    s.add_argument("--batch", type=int_between(1, 65536), default=512, help="same-key batch size, 1 to 65536")
    s.add_argument("--distinct", type=int_between(1, 4096), default=128,
                   help="number of distinct keys (each expanded in memory), 1 to 4096")
    s.add_argument("--threads", type=positive_int, help="threads for the parallel runs (default: all cores)")
    s.add_argument("--seconds", type=positive_float, default=0.2, help="minimum measuring time per kernel")
    s.add_argument("--no-kernels", action="store_true", help="skip the per-kernel model table")
    s.add_argument("--rounds", type=positive_int, default=7, help="rounds of the public-call measurement (median)")
    s.add_argument("--json", metavar="PATH", help="also write the results as JSON")


def cmd(args) -> int:
    from .batch import run, table
    outputs = [Output(args.json)] if args.json is not None else []
    check_outputs(outputs, force=True)
    res = run(args.alg, batch_size=args.batch, distinct=args.distinct, threads=args.threads, seconds=args.seconds,
              progress=lambda s: print(f"  {s}", file=sys.stderr), kernels_too=not args.no_kernels,
              rounds=args.rounds)
    print(table(res))
    if args.json:
        write_outputs(outputs, [json.dumps(res, indent=1).encode()], force=True)
    return 0


def add_parser(sub) -> None:
    """The ``bench-batch`` subcommand for the pqforge command line."""
    s = sub.add_parser("bench-batch", help="throughput of batched signing and verification")
    add_arguments(s)
    s.set_defaults(func=cmd)


def main(argv: list[str] | None = None) -> int:
    retain_freed_heap()     # as ``pqforge bench-batch`` does (cli.main), so both measure the same
    p = argparse.ArgumentParser(prog="python -m pqforge.bench.batch_cli", description="throughput of batched signing and verification")
    add_arguments(p)
    return cmd(p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
