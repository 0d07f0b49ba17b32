"""Classic McEliece key generation per key and per attempt, beside a reference under the same seeds.

Key generation draws one 32-byte seed delta and derives every retry from it (a rejected
Goppa polynomial or a matrix that is not systematic starts the next attempt with the next
seed from SHAKE256), so two KAT-exact implementations under the same deltas run the same
attempts. Timing both under the same deltas therefore compares them per attempt, which a
comparison of medians over random keys (one to a dozen attempts each) cannot.

The deltas are SHA-256("pqforge keygen seed i"), i < --seeds. For each set and round: the
reference, when given, times its key generation under every delta (a program that takes the
set's number and the deltas in hex and prints one JSON line per delta, {"delta": i, "us": t,
"pk8": first 8 bytes of the public key in hex}), then this process times pqforge's
(``algorithms.get(name).keypair`` with an rng that returns the delta). The first 8 bytes of
each public key must agree. The attempts of each delta are counted once, untimed, by counting
the seed expansions SHAKE256(64 || delta).

    taskset -c 1 python benchmarks/mceliece_keygen_seeds.py --reference ./time_kemkg_seeds \\
        --out benchmarks/results/mceliece-keygen-seeds-MACHINE-DATE.jsonl

Rows: per set, "per key" (the mean over the deltas) and "per attempt" (their sum over the
attempts), in ms; the least over rounds is what the tables show.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

from pqforge import algorithms
from pqforge.mceliece import scheme
from tables import machine  # (benchmarks/ is on the path of a script run from it)

SETS = ("348864", "348864f", "460896", "460896f", "6688128", "6688128f", "6960119", "6960119f", "8192128",
        "8192128f")


def deltas(count: int) -> list[bytes]:
    return [hashlib.sha256(f"pqforge keygen seed {i}".encode()).digest() for i in range(count)]


def attempts(name: str, delta: bytes) -> int:
    """How many seed expansions key generation under ``delta`` makes (untimed)."""
    count = 0
    expand = scheme.shake256

    def counting(data: bytes, outlen: int) -> bytes:
        nonlocal count
        count += data[:1] == b"\x40"
        return expand(data, outlen)

    scheme.shake256 = counting
    try:
        algorithms.get(name).keypair(lambda n: delta)
    finally:
        scheme.shake256 = expand
    return count


def pqforge_times(name: str, seeds: list[bytes]) -> tuple[list[float], list[str]]:
    alg = algorithms.get(name)
    times, heads = [], []
    for delta in seeds:
        start = time.perf_counter()
        pk, _ = alg.keypair(lambda n: delta)
        times.append((time.perf_counter() - start) * 1e6)
        heads.append(pk[:8].hex())
    return times, heads


def reference_times(program: str, number: str, seeds: list[bytes]) -> tuple[list[float], list[str]]:
    out = subprocess.run([program, number, *(d.hex() for d in seeds)], capture_output=True, text=True, check=True)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    return [line["us"] for line in lines], [line["pk8"] for line in lines]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated set numbers (default all ten)")
    ap.add_argument("--seeds", type=int, default=8, help="deltas per set (default 8)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reference", help="the reference's timing program (see above)")
    ap.add_argument("--reference-name", default="liboqs")
    ap.add_argument("--reference-build", default="", help="how the reference was built (for the meta line)")
    ap.add_argument("--commit", default="", help="pqforge's commit (for the meta line)")
    ap.add_argument("--out", help="write the rows as a results file")
    args = ap.parse_args(argv)
    seeds = deltas(args.seeds)
    numbers = args.sets.split(",")
    counted = {}
    for number in numbers:
        name = f"Classic-McEliece-{number}"
        algorithms.get(name).keypair(lambda n: seeds[0])          # compiles, once
        counted[number] = sum(attempts(name, d) for d in seeds)
        print(f"{name}: {counted[number]} attempts for {len(seeds)} keys", file=sys.stderr)
    rows = []
    start = time.gmtime()
    for rnd in range(1, args.rounds + 1):
        for number in numbers:
            sides = []
            if args.reference:
                sides.append((args.reference_name, reference_times(args.reference, number, seeds)))
            sides.append(("pqforge", pqforge_times(f"Classic-McEliece-{number}", seeds)))
            if len({tuple(heads) for _, (_, heads) in sides}) != 1:
                raise SystemExit(f"{number}: the public keys differ between the sides under the same seeds")
            for impl, (times, _) in sides:
                total_ms = sum(times) / 1000
                row = {"round": rnd, "alg": number, "impl": impl,
                       "ms": {"per key": round(total_ms / len(seeds), 2),
                              "per attempt": round(total_ms / counted[number], 2)}}
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.out:
        isa = "NUMBA_CPU_NAME=... NUMBA_CPU_FEATURES=... " if "NUMBA_CPU_NAME" in os.environ else ""
        meta = {"comparison": "mceliece-keygen-seeds", "machine": machine(), "date": time.strftime("%Y-%m-%d", start),
                "time_utc": time.strftime("%H:%M", start) + "-" + time.strftime("%H:%M", time.gmtime()),
                "unit": "ms (per key: the mean over the deltas; per attempt: their sum over the attempts; "
                        "least over rounds in tables)",
                "reference": args.reference_name,
                "command": f"`{isa}taskset -c 1 python benchmarks/mceliece_keygen_seeds.py --seeds "
                           f"{len(seeds)} --rounds {args.rounds} --reference PROGRAM`",
                "method": f"the same {len(seeds)} seeds delta (SHA-256 of \"pqforge keygen seed i\") on both sides, "
                          "so both run the same attempts (the public keys' first bytes checked equal); per round "
                          "and set the reference's program, then pqforge in this process (compiled and warm)",
                "reference_build": args.reference_build, "commit": args.commit,
                "note": "attempts for the deltas: " + "; ".join(f"{n}: {counted[n]}" for n in numbers)}
        with open(args.out, "w") as f:
            f.write(json.dumps({"meta": {k: v for k, v in meta.items() if v}}) + "\n")
            f.writelines(json.dumps(r) + "\n" for r in rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
