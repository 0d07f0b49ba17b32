"""Run the fuzz harnesses one after another and report each one's executions and coverage.

    python fuzz/run.py --seconds 10                 # every harness, 10 s each (after its seeds)
    python fuzz/run.py --runs 1000000 mayo kat      # those harnesses, a million inputs each
    python fuzz/run.py --regress                    # every seed once: the regression check

A harness is ``fuzz/fuzz_<target>.py`` with its seeds in ``fuzz/corpus/<target>/``. It starts
from its seeds and keeps the inputs that reach new coverage in ``--work`` (a temporary folder
unless given), never in the seed folder; an input that fails is written there too, as
``<target>-crash-...`` (its output also shows it in base64), with the harness's output in
``<target>.log``. The exit status is 1 when any harness failed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common

HERE = Path(__file__).resolve().parent
RSS_LIMIT_MB = 2048     # "never memory growth beyond a bound": libFuzzer stops a harness that grows past it
TIMEOUT_S = 120         # one input taking longer is a hang (a first use may compile a kernel: seconds)
_COVERAGE = re.compile(r"#\d+\s+\w+\s+cov: (\d+) ft: (\d+)")
_FINAL = re.compile(r"stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb):\s*(\d+)")


def targets() -> list[str]:
    return sorted(path.stem.removeprefix("fuzz_") for path in HERE.glob("fuzz_*.py"))


def command(target: str, work: Path | None, scratch: str, args) -> list[str]:
    harness = [sys.executable, str(HERE / f"fuzz_{target}.py")]
    limits = [f"-rss_limit_mb={RSS_LIMIT_MB}", f"-timeout={TIMEOUT_S}", "-print_final_stats=1",
              f"-artifact_prefix={work or scratch}/{target}-"]
    if work is None:                                        # the seeds, once each
        return harness + limits + ["-runs=0", str(HERE / "corpus" / target)]
    found = work / target
    found.mkdir(parents=True, exist_ok=True)
    budget = [f"-runs={args.runs}"] if args.runs is not None else [f"-max_total_time={args.seconds}"]
    seed = [f"-seed={args.seed}"] if args.seed is not None else []
    return harness + limits + budget + seed + [str(found), str(HERE / "corpus" / target)]


def run(target: str, work: Path | None, scratch: str, args) -> bool:
    started = time.monotonic()
    done = subprocess.run(command(target, work, scratch, args), capture_output=True, text=True, errors="replace",
                          env={**os.environ, common.SCRATCH_ENV: scratch})
    seconds = time.monotonic() - started
    output = done.stderr + done.stdout
    if work is not None:
        (work / f"{target}.log").write_text(output)
    coverage = _COVERAGE.findall(output)
    cov, ft = coverage[-1] if coverage else ("?", "?")
    final = dict(_FINAL.findall(output))
    runs, rate, rss = (final.get(name, "?") for name in ("number_of_executed_units", "average_exec_per_sec",
                                                         "peak_rss_mb"))
    verdict = "ok" if done.returncode == 0 else f"FAILED (exit {done.returncode})"
    print(f"{target:10} {verdict:18} runs {runs:>9}  cov {cov:>4}  ft {ft:>5}  exec/s {rate:>6}  rss {rss:>5} MB  "
          f"{seconds:7.1f} s", flush=True)
    if done.returncode != 0:
        lines = [line for line in output.splitlines() if not line.startswith("INFO: Instrumenting")]
        print("\n".join(lines[-40:]), file=sys.stderr)
    return done.returncode == 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help=f"harnesses to run (default all: {', '.join(targets())})")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--seconds", type=int, default=10, help="fuzzing time per harness (default 10)")
    budget.add_argument("--runs", type=int, help="inputs per harness instead of a time")
    budget.add_argument("--regress", action="store_true", help="run every seed once, nothing else")
    parser.add_argument("--seed", type=int, help="libFuzzer's random seed (default: a new one each run)")
    parser.add_argument("--work", type=Path, help="keep the inputs found, the logs and any failing input here")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.targets) - set(targets()))
    if unknown:
        parser.error(f"no harness {', '.join(unknown)}; the harnesses: {', '.join(targets())}")
    with tempfile.TemporaryDirectory(prefix="pqforge-fuzz-", dir=common.memory_folder()) as scratch:
        work = None if args.regress else (args.work or Path(scratch) / "found")
        results = [run(target, work, scratch, args) for target in args.targets or targets()]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
