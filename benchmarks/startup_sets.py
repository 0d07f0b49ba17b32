"""First use from an empty cache under each kernel set, as a results file for BENCHMARKS.md.

    python benchmarks/startup_sets.py [--alg NAME ...] [--sets SET,...] [--rounds N] [--prebuilt DIR] [--out FILE]
    python benchmarks/startup_sets.py --serve [--busy N] [--ready-only] [--sets SET,...] [--rounds N] [--prebuilt DIR] [--out FILE]

For each round, algorithm and kernel set in turn (interleaved), ``pqforge.bench.startup`` runs
a new interpreter with an empty numba cache (the first key, then the rest of the round trip:
keygen + sign + verify, or keygen + encap + decap), then one with the cache it filled, then
numba's floor (a process that calls one cached one-line kernel). Writes one JSON Lines file in
the format of ``benchmarks/results/README.md``: seconds, the least over the rounds in the table.

With ``--serve``: ``pqforge serve`` (default settings: MAYO-2 warmed up) started with an empty
cache and a new SQLite file under each set in turn; the seconds until ``/readyz`` answers 200,
and until it reports that the background compile of the other paths has ended; meanwhile
``/readyz`` and ``/healthz`` are asked in turn, every 0.1 s, and the slowest answer of each is a
second results file (ms), from the first answer on (the port listens before the app has
loaded, and a request sent earlier waits for the start-up). ``--busy N``: a busy machine, N processes spinning in a Python loop
at normal priority from before the server starts until it has compiled everything. ``--ready-only``:
each run ends once the server is ready (two spinners leave the background compile, at nice 10,
about a tenth of a core: minutes a run, for a figure that is no target).

With ``--prebuilt DIR`` (bundles of ``pqforge precompile --prebuilt``, ``pqforge.jit.prebuilt``)
every set runs twice per round, interleaved: "SET set" compiling everything
(``PQFORGE_PREBUILT=none``) and "SET set, prebuilt" installing the bundle that fits from DIR.
Without it, ``PQFORGE_PREBUILT`` is left as the environment has it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

from pqforge.bench.service import free_port
from tables import machine, quota_prefix  # (benchmarks/ is on the path of a script run from it)

HERE = Path(__file__).resolve().parent


def _get(url: str) -> tuple[dict | None, float | None]:
    """(the JSON answer of ``url`` or None, seconds it took or None where none came)."""
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as answer:        # /readyz answers 503 until ready
        body = json.loads(answer.read())
    except (urllib.error.URLError, OSError, ValueError):
        return None, None
    return body, time.perf_counter() - start


BUSY_LOOP = "while True: pass"


def variants(chosen: list[str], prebuilt: Path | None) -> list[tuple[str, str, dict]]:
    """(set, column name, environment) of each variant a round runs, in order."""
    if prebuilt is None:
        return [(name, f"{name} set", {}) for name in chosen]
    return [(name, f"{name} set{label}", {"PQFORGE_PREBUILT": where}) for name in chosen
            for label, where in (("", "none"), (", prebuilt", str(prebuilt.resolve())))]


def cold_serve(kernel_set: str, extra_env: dict, busy: int = 0, until_compiled: bool = True,
               limit_s: float = 900) -> tuple[dict, dict]:
    """Seconds from starting ``pqforge serve`` with an empty cache until ``/readyz`` is 200, and
    (``until_compiled``) until it no longer reports ``compiling``; and the slowest answer of
    ``/readyz`` and of ``/healthz`` meanwhile (ms). ``busy`` processes spin beside it all along."""
    spinners = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(busy)]
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        env = {**os.environ, "NUMBA_CACHE_DIR": str(Path(tmp) / "cache"), "PQFORGE_KERNELS": kernel_set, **extra_env}
        start = time.monotonic()
        server = subprocess.Popen([sys.executable, "-m", "pqforge.cli", "serve", "--store",
                                   f"sqlite:///{Path(tmp) / 'pqforge.db'}", "--port", str(port)],
                                  env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        ready, slowest = None, {"/readyz": 0.0, "/healthz": 0.0}
        try:
            # the port listens before the app is loaded: the first answer waits for the start-up
            while _get(f"http://127.0.0.1:{port}/healthz")[1] is None and time.monotonic() - start < limit_s:
                time.sleep(0.1)
            while time.monotonic() - start < limit_s:
                body, took = _get(f"http://127.0.0.1:{port}/readyz")
                now = time.monotonic() - start
                if took is not None:
                    slowest["/readyz"] = max(slowest["/readyz"], took)
                if body and body.get("ready") and ready is None:
                    ready = now
                if ready is not None and (not until_compiled or (body and not body.get("compiling"))):
                    return ({"serve: ready": round(ready, 1), **({"serve: all compiled": round(now, 1)}
                                                                   if until_compiled else {})},
                            {f"{path}: slowest answer": round(t * 1000, 1) for path, t in slowest.items()})
                time.sleep(0.1)
                _, took = _get(f"http://127.0.0.1:{port}/healthz")
                if took is not None:
                    slowest["/healthz"] = max(slowest["/healthz"], took)
                time.sleep(0.1)
            raise RuntimeError(f"pqforge serve ({kernel_set}) not ready and compiled in {limit_s} s")
        finally:
            for process in [server, *spinners]:
                process.terminate()
                process.wait(60)


def serve_main(args, chosen: list[str]) -> None:
    start = dt.datetime.now(dt.timezone.utc)
    rows, answers = [], []
    for round_ in range(1, args.rounds + 1):
        for name, impl, extra_env in variants(chosen, args.prebuilt):
            seconds, ms = cold_serve(name, extra_env, args.busy, not args.ready_only)
            rows.append({"round": round_, "alg": "MAYO-2", "impl": impl, "s": seconds})
            answers.append({"round": round_, "alg": "MAYO-2", "impl": impl, "ms": ms})
            print(json.dumps(rows[-1]), json.dumps(answers[-1]), file=sys.stderr, flush=True)
    until = "it is ready" if args.ready_only else "it has compiled everything"
    busy = (f"; a busy machine: {args.busy} processes spinning in a Python loop (`{BUSY_LOOP}`) at normal "
            f"priority from before the server starts until {until}") if args.busy else ""
    command = (f"`{quota_prefix()}python benchmarks/startup_sets.py --serve{f' --busy {args.busy}' if args.busy else ''}"
               f"{' --ready-only' if args.ready_only else ''} --sets {','.join(chosen)} --rounds {args.rounds}"
               f"{_prebuilt_option(args)}`")
    kernels = "each column names its set (`PQFORGE_KERNELS`)" + _prebuilt_note(args)
    comparison = "cold-serve-busy" if args.busy else "cold-serve"
    _write(comparison, start, rows, args.out, command=command, kernels=kernels,
           method="per round, each set in turn: `pqforge serve` with default settings (MAYO-2 warmed up), an "
                  "empty numba cache and a new SQLite file; seconds from the start of the process until "
                  "`/readyz` answers 200 (the paths requests take are compiled)"
                  + ("" if args.ready_only else ", and until it no longer reports `compiling` (the background "
                                                "compile of the other paths has ended)") + busy)
    _write(comparison + "-answers", start, answers, args.out and args.out.with_name(args.out.stem + "-answers.jsonl"),
           command=command, kernels=kernels, unit="ms",
           method=f"the same runs: from the first answer of `/healthz` (the app has loaded) until {until}, "
                  "`/readyz` and `/healthz` asked in turn every 0.1 s, one request at a time; the slowest answer of "
                  "each (ms, from sending the request to reading the whole answer)" + busy)


def _write(comparison: str, start: dt.datetime, rows: list, out: Path | None, **fields: str) -> None:
    """One results file (``benchmarks/results/README.md``): the run's meta line, then ``rows``."""
    end = dt.datetime.now(dt.timezone.utc)
    meta = {"comparison": comparison, "machine": machine(), "date": start.strftime("%Y-%m-%d"),
            "time_utc": f"{start:%H:%M}-{end:%H:%M}", "unit": "s", **fields, "python": platform.python_version()}
    out = out or HERE / "results" / f"{comparison}-{start:%Y-%m-%d-%H%M}.jsonl"
    with out.open("w", encoding="utf-8") as f:
        for record in [{"meta": meta}, *rows]:
            f.write(json.dumps(record) + "\n")
    print(out)


def _prebuilt_option(args) -> str:
    return f" --prebuilt {args.prebuilt}" if args.prebuilt else ""


def _prebuilt_note(args) -> str:
    return ("; \"prebuilt\": the bundle that fits, from `pqforge precompile --prebuilt`, installed at the "
            "first use, the others compile everything (`PQFORGE_PREBUILT=none`)") if args.prebuilt else ""


def main() -> None:
    from pqforge.bench import startup
    from pqforge.gf16 import sets

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alg", action="append", help="algorithm (repeatable; default MAYO-2)")
    parser.add_argument("--sets", default=",".join(sets.runnable()),
                        help="kernel sets, comma-separated (default: every set this CPU runs)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out", type=Path, help="results file (default: a new one under benchmarks/results)")
    parser.add_argument("--serve", action="store_true", help="time a cold `pqforge serve` until it is ready")
    parser.add_argument("--busy", type=int, default=0, metavar="N",
                        help="with --serve: N processes spinning in a Python loop beside the server all along")
    parser.add_argument("--ready-only", action="store_true",
                        help="with --serve: end each run once the server is ready, not once it has compiled everything")
    parser.add_argument("--prebuilt", type=Path, metavar="DIR",
                        help="also run each set with the bundles in DIR (pqforge precompile --prebuilt), interleaved")
    args = parser.parse_args()
    algs, chosen = args.alg or ["MAYO-2"], args.sets.split(",")
    if args.serve:
        return serve_main(args, chosen)
    start = dt.datetime.now(dt.timezone.utc)
    rows = []
    for round_ in range(1, args.rounds + 1):
        for alg in algs:
            # McEliece has one set of kernels: PQFORGE_KERNELS chooses only MAYO's
            for name, impl, extra_env in variants(chosen if alg.startswith("MAYO") else chosen[:1], args.prebuilt):
                os.environ.update({sets.ENV: name, **extra_env})
                t = startup.measure(alg)
                cold, warm = t["cold"], t["warm"]
                row = {"cold: first key": cold["one_op_s"], "cold: round trip": cold["import_s"] + cold["first_ops_s"],
                       "warm: first key": warm["one_op_s"], "numba floor": t["numba_floor_s"]}
                impl = impl if alg.startswith("MAYO") else impl.replace(f"{name} set", "its kernels")
                rows.append({"round": round_, "alg": alg, "impl": impl, "s": {k: round(v, 2) for k, v in row.items()}})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    _write("cold-start", start, rows, args.out,
           command=f"`{quota_prefix()}python benchmarks/startup_sets.py {' '.join('--alg ' + a for a in algs)} "
                   f"--sets {','.join(chosen)} --rounds {args.rounds}{_prebuilt_option(args)}`",
           method="per round, each algorithm and set in turn: a new interpreter with an empty numba cache "
                  "(the first key, then the whole round trip from the start of the import), the next one "
                  "with that cache, then numba's floor; the compile helpers use the other cores",
           kernels="each column names its set (`PQFORGE_KERNELS`; McEliece has one)" + _prebuilt_note(args))

if __name__ == "__main__":
    main()
