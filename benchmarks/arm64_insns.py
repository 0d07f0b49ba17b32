"""Work per operation on aarch64 without an ARM machine: guest instructions counted under qemu-user.

Emulated time misleads (qemu runs NEON instructions through slow helpers and scalar code
quickly), so this counts the aarch64 instructions an operation executes, with a qemu TCG
plugin that prints "insns: N" at exit (an instruction counter of a few lines against qemu's
plugin API). Per parameter set and kernel set: a first process runs the set-up and each
operation once in the userland, compiling whatever the cache lacks (not counted); a second does
the same under the plugin (kernels loaded, caches warm); for each operation, another process
does the same
and then the operation K more times; the difference over K is one operation. Start-up, imports
and loading kernels cancel. Python's cyclic garbage collector is off after the set-up in every
process: when it runs depends on the whole process's allocation history, and with it on, a
change outside an operation's path (a few lines of ``keyfile.py``) moved MAYO-2 verification's
count by 10%. K is 200 by default: a process that runs operations after the set-up differs
from the next by a few hundred thousand instructions to a million (the set-up alone, by some
ten thousand in 2.7 billion), which over K = 20 moved MAYO-2 verification's count between 350k
and 425k from run to run; over K = 200, three runs gave 359k-361k.

    scripts/arm64/run.sh --host python benchmarks/arm64_insns.py --plugin libinsncount.so \\
        [--qemu /usr/bin/qemu-aarch64] [--alg MAYO-2 ...] [--sets neon,portable] [--k 200] \\
        [--peers counts.json] [--out FILE]

Runs on the x86-64 host, as root, with the arm64 userland of scripts/arm64/userland.sh and the
dynamic qemu-aarch64 (Debian's qemu-user: the static one loads no plugins). Writes a results file per scheme for benchmarks/tables.py
(``arm64-insns-SCHEME-MACHINE-DATE.jsonl``). ``--peers`` adds figures of C implementations counted
the same way (a JSON file: {"impl name": {"build": "...", "ops": {"MAYO-2": {"keygen": N}}}}),
built outside the repository.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MAYO = ("MAYO-1", "MAYO-2", "MAYO-3", "MAYO-5")
MCELIECE = ("Classic-McEliece-348864", "Classic-McEliece-348864f", "Classic-McEliece-460896f",
            "Classic-McEliece-6688128", "Classic-McEliece-8192128")
OPS = {"mayo": ("keygen", "sign", "verify"), "mceliece": ("encaps", "decaps")}


def guest(alg: str, op: str, runs: int) -> None:
    """In the guest: set up ``alg``'s operations, run each once, then ``op`` ``runs`` times
    (``op`` "none": no more). The system randomness is replaced by a fixed stream, so that every
    process draws the same keys, messages and salts and its set-up costs the same: signing and
    McEliece's key generation retry at random, which would not cancel."""
    import hashlib
    import itertools
    draws = itertools.count()
    os.urandom = lambda n: hashlib.shake_256(b"draw %d" % next(draws)).digest(n)
    from pqforge import algorithms
    ops = algorithms.get(alg).benchmark_ops()
    for warm in ops.values():
        warm()
    import gc
    gc.collect()
    gc.disable()        # its runs follow the allocation history, not the operation (module docstring)
    for _ in range(runs if op != "none" else 0):
        ops[op]()


def _guest_command(args, alg: str, op: str, runs: int, kernels: str | None) -> tuple[list[str], dict[str, str]]:
    # What would differ from one process to the next: string hashes, OpenBLAS's threads spinning
    # (a TCG plugin's inline count races between threads), and addresses (setarch -R).
    env = {"PATH": "/usr/bin:/bin", "HOME": "/root", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
           "PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1", **args.guest_env}
    if kernels:
        env["PQFORGE_KERNELS"] = kernels
    return ["/opt/pqforge/benchmarks/arm64_insns.py", "--guest", alg, op, str(runs)], env


def warm(args, alg: str, kernels: str | None) -> None:
    """Run the set-up and each operation once in the userland (chroot, not counted), compiling
    what the cache lacks: under ``qemu-aarch64 -L`` the guest cannot create files in it."""
    script, env = _guest_command(args, alg, "none", 0, kernels)
    done = subprocess.run(["chroot", args.root, "env", "-i", *(f"{k}={v}" for k, v in env.items()), "python3", *script],
                          capture_output=True, text=True, timeout=7200)
    if done.returncode != 0:
        raise RuntimeError(f"{alg} ({kernels}): exit {done.returncode}\n{(done.stdout + done.stderr)[-2000:]}")


def count(args, alg: str, op: str, runs: int, kernels: str | None) -> int:
    """Guest instructions of one process that runs ``op`` ``runs`` times after the warm-up."""
    root = Path(args.root)
    script, env = _guest_command(args, alg, op, runs, kernels)
    command = ["setarch", "-R", args.qemu, "-L", str(root), "-plugin", args.plugin, str(root / "usr/bin/python3"), *script]
    done = subprocess.run(command, env=env, capture_output=True, text=True, cwd=str(root / "opt/pqforge"), timeout=3600)
    found = re.findall(r"insns: (\d+)", done.stdout + done.stderr)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"{alg} {op} x{runs} ({kernels}): exit {done.returncode}\n{(done.stdout + done.stderr)[-2000:]}")
    return int(found[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--guest", nargs=3, metavar=("ALG", "OP", "RUNS"), help=argparse.SUPPRESS)
    parser.add_argument("--plugin", help="the TCG plugin that prints 'insns: N' at exit")
    parser.add_argument("--qemu", default="/usr/bin/qemu-aarch64", help="a dynamic qemu-aarch64 (one that loads plugins)")
    parser.add_argument("--root", default=os.environ.get("PQFORGE_ARM64_ROOT", "/var/tmp/pqforge-arm64"),
                        help="the arm64 userland (set by scripts/arm64/run.sh)")
    parser.add_argument("--alg", action="append", help="parameter sets (default: every MAYO set and five McEliece sets)")
    parser.add_argument("--sets", default="neon,portable", help="MAYO kernel sets, comma-separated")
    parser.add_argument("--k", type=int, default=200, help="extra operations in the second process")
    parser.add_argument("--peers", help="figures of C implementations counted the same way (JSON)")
    parser.add_argument("--out", help="results file, SCHEME standing for mayo or mceliece "
                                      "(default benchmarks/results/arm64-insns-SCHEME-MACHINE-DATE.jsonl)")
    args = parser.parse_args()
    if args.guest:
        alg, op, runs = args.guest
        guest(alg, op, int(runs))
        return 0
    if not args.plugin:
        parser.error("--plugin is required")
    args.guest_env = _guest_env()
    algs = args.alg or [*MAYO, *MCELIECE]
    peers = json.loads(Path(args.peers).read_text()) if args.peers else {}
    rows: dict[str, list] = {"mayo": [], "mceliece": []}
    start = dt.datetime.now(dt.timezone.utc)
    for alg in algs:
        scheme = _scheme(alg)
        for kernels in (args.sets.split(",") if scheme == "mayo" else [None]):
            warm(args, alg, kernels)
            base = count(args, alg, "none", 0, kernels)
            figures = {op: round((count(args, alg, op, args.k, kernels) - base) / args.k) for op in OPS[scheme]}
            rows[scheme].append({"round": 1, "alg": alg, "impl": f"pqforge {kernels}" if kernels else "pqforge",
                                 "insns": figures})
            print(json.dumps(rows[scheme][-1]), flush=True)
    sys.path.insert(0, str(HERE))
    from tables import machine
    end = dt.datetime.now(dt.timezone.utc)
    today = start.date().isoformat()
    host = machine()
    for scheme, measured in rows.items():
        if not measured:
            continue
        # the peers' figures for the same parameter sets; the first peer with any is the reference
        theirs = {impl: {alg: figures for alg, figures in data["ops"].items() if alg in algs and _scheme(alg) == scheme}
                  for impl, data in peers.items()}
        theirs = {impl: ops for impl, ops in theirs.items() if ops}
        meta = {"comparison": f"arm64-insns-{scheme}", "machine": f"aarch64 under qemu-user on {host}",
                "date": today, "time_utc": f"{start:%H:%M}-{end:%H:%M}",
                "unit": "guest instructions per operation; not timings", "better": "lower",
                "command": "`scripts/arm64/run.sh --host python benchmarks/arm64_insns.py --plugin libinsncount.so "
                           + "".join(f"--alg {a} " for a in (args.alg or [])) + f"--sets {args.sets} --k {args.k}`",
                "method": (f"processes under qemu-aarch64 with an instruction-counting TCG plugin: one runs the set-up and "
                           f"each operation once; one per operation does the same, then the operation {args.k} more times; "
                           f"the difference over {args.k}; the cyclic garbage collector off after the set-up. "
                           f"pqforge compiled by numba for NUMBA_CPU_NAME="
                           f"{args.guest_env['NUMBA_CPU_NAME']} ({args.guest_env['NUMBA_CPU_FEATURES']}); functional API "
                           f"from compact keys (MAYO keygen: a compact key pair; sign and verify include the expansion)"),
                **({"reference": next(iter(theirs)), "reference_build": peers[next(iter(theirs))].get("build", "")}
                   if theirs else {})}
        out = Path(args.out.replace("SCHEME", scheme)) if args.out else \
            HERE / "results" / f"arm64-insns-{scheme}-{_short(host)}-{today}.jsonl"
        with open(out, "w") as f:
            f.write(json.dumps({"meta": meta}) + "\n")
            for row in measured + [{"round": 1, "alg": alg, "impl": impl, "insns": figures}
                                   for impl, ops in theirs.items() for alg, figures in ops.items()]:
                f.write(json.dumps(row) + "\n")
        print(f"wrote {out}")
    return 0


def _scheme(alg: str) -> str:
    return "mayo" if alg.startswith("MAYO") else "mceliece"


def _guest_env() -> dict[str, str]:
    """What scripts/arm64/run.sh --host gives the guest: the named CPU, the cache for these sources."""
    given = os.environ.get("PQFORGE_ARM64_GUEST")
    if not given:
        sys.exit("run this through scripts/arm64/run.sh --host (it mounts the repository in the userland)")
    return dict(item.split("=", 1) for item in given.split())


def _short(machine: str) -> str:
    for word, short in (("Zen 5", "zen5"), ("Zen 4", "zen4"), ("Zen 1", "zen1"), ("Intel", "intel")):
        if word in machine:
            return short
    return "x86"


if __name__ == "__main__":
    sys.exit(main())
