"""The aarch64 check, run inside the arm64 userland (``scripts/arm64/check.sh`` starts it there).

Every step is a command of its own, as a user would type it, with its kernel set forced by
PQFORGE_KERNELS; its output is kept and shown when it fails. The steps:

- the first official vector (KAT entry 0) of every MAYO set, with each set that runs on aarch64
  (neon, portable), regenerated from the NIST DRBG and checked against the official hash;
- the same for Classic-McEliece-348864 and -348864f (their kernels do not depend on the MAYO set);
- the neon set's kernels against their Python twins and a GF(16) reference (tests/mayo/test_gfni.py);
- the command line: a MAYO-2 key pair, a signature, its verification and the refusal of a changed
  message, and a Classic McEliece encapsulation and decapsulation, with the default set (neon);
- machine code built ahead of time: a MAYO-2 bundle built here for the profile that fits, and a
  first use from it that compiles nothing (tests/test_prebuilt.py);
- with --full instead of the entry 0 steps: every official vector of every set (MAYO with neon
  and portable, all ten Classic McEliece sets), which takes hours under emulation.

Compiling under qemu-user is 10-20x slower than natively, so the steps share one numba cache:
later steps reuse what earlier ones compiled. The last line is "aarch64: N passed, N failed".
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETS = ("neon", "portable")
MAYO = ("MAYO-1", "MAYO-2", "MAYO-3", "MAYO-5")
MCELIECE = ("Classic-McEliece-348864", "Classic-McEliece-348864f")
TWIN_TESTS = "tests/mayo/test_gfni.py"
TWIN_SELECTION = "row_products or products_on_the_encoding or signing_products or architecture"


def pqforge(*args: str) -> list[str]:
    return [sys.executable, "-m", "pqforge", *args]


class Steps:
    def __init__(self, timeout: float):
        self.timeout = timeout
        self.passed: list[str] = []
        self.failed: list[str] = []

    def run(self, name: str, command: list[str], kernels: str | None = None, expect: str | None = None,
            status: int = 0) -> None:
        """Run ``command``; the step passes when it exits with ``status`` and its output holds ``expect``."""
        env = dict(os.environ)
        if kernels:
            env["PQFORGE_KERNELS"] = kernels
        started = time.monotonic()
        try:
            done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            self.record(name, False, time.monotonic() - started, f"timed out after {self.timeout:.0f} s")
            return
        output = done.stdout + done.stderr
        ok = done.returncode == status and (expect is None or expect in output)
        why = f"exit {done.returncode} (expected {status})" + (
            f", no {expect!r} in the output" if expect and expect not in output else "")
        if ok:      # what the command said of itself, where it ends with a count (pytest, kat)
            last = output.replace("\r", "\n").strip().splitlines()[-1:] or [""]
            why = last[0].strip("= ") if any(w in last[0] for w in (" passed", "MATCH")) else ""
        self.record(name, ok, time.monotonic() - started, why, output)

    def record(self, name: str, ok: bool, seconds: float, why: str = "", output: str = "") -> None:
        (self.passed if ok else self.failed).append(name)
        print(f"{'ok  ' if ok else 'FAIL'} {seconds:7.1f} s  {name}" + (f" ({why})" if ok and why else
                                                                     f": {why}" if why else ""), flush=True)
        if not ok and output:
            tail = output.replace("\r", "\n").strip().splitlines()[-25:]
            print("\n".join("       | " + line for line in tail), flush=True)


def kat_steps(steps: Steps, full: bool) -> None:
    for kernels in SETS:
        for alg in MAYO:
            count = [] if full else ["--count", "1"]
            steps.run(f"{alg} KAT {'all entries' if full else 'entry 0'}, {kernels}", pqforge("kat", "--alg", alg, *count),
                      kernels=kernels, expect=f"MATCH: official {alg} KAT")
    if full:
        from pqforge.mceliece import ALGORITHMS
        mceliece = tuple(ALGORITHMS)
    else:
        mceliece = MCELIECE
    for alg in mceliece:
        count = [] if full else ["--count", "1"]
        steps.run(f"{alg} KAT {'all entries' if full else 'entry 0'}", pqforge("kat", "--alg", alg, *count),
                  expect=f"MATCH: official {alg} KAT")


def cli_steps(steps: Steps) -> None:
    with tempfile.TemporaryDirectory(prefix="pqforge-cli-") as d:
        alice, doc, ss = f"{d}/alice", f"{d}/contract.txt", f"{d}/ss"
        Path(doc).write_bytes(b"pay 10 to bob\n")
        steps.run("cli: keygen MAYO-2", pqforge("keygen", "--alg", "MAYO-2", "--out", alice))
        steps.run("cli: sign", pqforge("sign", "--key", f"{alice}.sk", doc))
        steps.run("cli: verify", pqforge("verify", "--key", f"{alice}.pk", doc, f"{doc}.sig"))
        Path(doc).write_bytes(b"pay 99 to bob\n")
        steps.run("cli: verify refuses a changed message", pqforge("verify", "--key", f"{alice}.pk", doc, f"{doc}.sig"),
                  status=1)
        steps.run("cli: kem keygen", pqforge("kem", "keygen", "--alg", "Classic-McEliece-348864", "--out", f"{d}/bob"))
        steps.run("cli: kem encap", pqforge("kem", "encap", "--key", f"{d}/bob.pk", "-o", f"{d}/m.ct", "--secret", f"{ss}.a"))
        steps.run("cli: kem decap", pqforge("kem", "decap", "--key", f"{d}/bob.sk", f"{d}/m.ct", "--secret", f"{ss}.b"))
        same = Path(f"{ss}.a").is_file() and Path(f"{ss}.a").read_bytes() == Path(f"{ss}.b").read_bytes()
        steps.record("cli: both sides hold the same shared secret", same, 0.0,
                      "" if same else "the decapsulated secret differs")


def end_compile_helpers() -> None:
    """End the compile helpers (``pqforge.jit.units``) that the steps' commands left running: they
    outlive a command to fill the cache for the next one, and there is no next one. Only those
    of this userland (the root they see is this one's; /proc shows the host's processes too)."""
    import signal
    here = os.stat("/")
    for proc in Path("/proc").iterdir():
        try:
            if (proc.name.isdigit() and b"pqforge.jit.units import compile_in_worker" in (proc / "cmdline").read_bytes()
                    and os.path.samestat(os.stat(proc / "root"), here)):
                os.kill(int(proc.name), signal.SIGTERM)
        except OSError:
            pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="every official vector of every set (hours)")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds one step may take")
    parser.add_argument("--only", choices=("kat", "twins", "cli", "prebuilt"), action="append",
                        help="run only these groups of steps (repeatable)")
    args = parser.parse_args()
    groups = set(args.only or ("kat", "twins", "cli", "prebuilt"))
    import platform
    print(f"aarch64 check on {platform.machine()}, Python {platform.python_version()}, "
          f"NUMBA_CPU_NAME={os.environ.get('NUMBA_CPU_NAME', 'host')}", flush=True)
    if platform.machine() != "aarch64":
        print("aarch64: 0 passed, 1 failed (not an aarch64 machine)")
        return 1
    steps = Steps(args.timeout)
    started = time.monotonic()
    if "kat" in groups:
        kat_steps(steps, args.full)
    if "twins" in groups:
        steps.run("neon kernels against their twins", [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                                                        TWIN_TESTS, "-k", TWIN_SELECTION],
                  kernels="neon", expect=" passed")
    if "cli" in groups:
        cli_steps(steps)
    if "prebuilt" in groups:
        steps.run("machine code built ahead of time, installed at a first use", [
            sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_prebuilt.py"], expect=" passed")
    end_compile_helpers()
    print(f"{len(steps.passed) + len(steps.failed)} steps in {time.monotonic() - started:.0f} s")
    print(f"aarch64: {len(steps.passed)} passed, {len(steps.failed)} failed")
    return 1 if steps.failed else 0


if __name__ == "__main__":
    sys.exit(main())
