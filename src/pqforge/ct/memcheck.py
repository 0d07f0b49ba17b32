"""The machine-code check ("ctgrind"): compiled kernels run under valgrind's memcheck with their
secret inputs marked undefined.

Memcheck follows, bit by bit, which values derive from undefined memory, and reports each
conditional jump, memory address and masked store that such a value decides. With the secrets
marked undefined, every report is a place where the machine code (as LLVM emitted it, not as
the source reads) makes time or memory traffic depend on a secret. Timing campaigns and the
trace check of the Python twins cannot see that code; this check sees nothing else.

One check (``check``):

1. valgrind's virtual CPU is asked for its name and features (it hides what it cannot run, such
   as AVX-512 and GFNI), and numba compiles every target's kernels for exactly that CPU
   (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``) in native processes that call each target once;
   compiling under valgrind would take many minutes;
2. processes under memcheck load the kernels from the cache and call each target three
   times: once to load it, once with nothing marked (the baseline, which must be clean), once
   with the secret arguments marked undefined. A small C helper, compiled by the check with
   the system's C compiler, makes valgrind's client requests; error reporting is on only during
   the last two calls. Both steps run one process per core, each with a share of the targets;
3. each call's errors are read from memcheck's XML, and compiled frames (which valgrind cannot
   name) are named by the nearest symbol of the code numba loaded.

Values that are public by design pass through ``pqforge._barrier.declassify`` in the kernels,
which tells memcheck that the value is defined from there on; each target names its
declassifications with the reason (``Target.declassified``). Anything else reported fails.

What it cannot see: code for instructions valgrind does not emulate (the GFNI kernel set, and
what LLVM emits for AVX-512 CPUs: the check runs the code compiled for valgrind's virtual CPU),
and secrets passed by value (a scalar argument cannot be marked; those kernels are inlined into
the array kernels that are checked).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..jit.units import cores
from ..errors import InvalidInput
from .target import Target

_HELPER_SOURCE = r"""
#include <stddef.h>
#include <valgrind/valgrind.h>
#include <valgrind/memcheck.h>
int pq_running(void) { return RUNNING_ON_VALGRIND; }
void pq_undefined(void *p, size_t n) { VALGRIND_MAKE_MEM_UNDEFINED(p, n); }
unsigned long pq_errors(void) { return VALGRIND_COUNT_ERRORS; }
void pq_report(int on) { if (on) VALGRIND_ENABLE_ERROR_REPORTING; else VALGRIND_DISABLE_ERROR_REPORTING; }
void pq_say(const char *s) { VALGRIND_PRINTF("%s\n", s); }
"""

_MARK = "pqforge-memcheck"
"""Prefix of the client messages that separate the calls in memcheck's log."""

_PHASES = ("baseline", "marked")

_VALGRIND_SETS = ("avx2", "portable")
"""Kernel sets whose instructions valgrind emulates (not GFNI's affine instruction)."""


@dataclass
class Site:
    """One distinct place memcheck reported: what kind, where (innermost frame first)."""
    kind: str
    what: str
    frames: list[str]
    count: int = 1

    @property
    def where(self) -> str:
        return " <- ".join(self.frames[:4]) or "?"


@dataclass
class Result:
    target: str
    alg: str | None
    errors: dict[str, int] = field(default_factory=dict)          # phase -> memcheck's error count
    sites: dict[str, list[Site]] = field(default_factory=dict)    # phase -> sites first seen there
    unmarked: list[str] = field(default_factory=list)             # secret arguments passed by value
    declassified: tuple[str, ...] = ()
    skipped: str = ""

    @property
    def ok(self) -> bool:
        return not self.skipped and not any(self.errors.values())

    def summary(self) -> str:
        name = self.target + (f" {self.alg}" if self.alg else "")
        if self.skipped:
            return f"{name}: skipped, {self.skipped}"
        text = (f"{name}: {self.errors.get('marked', 0)} reports with the secrets marked "
                f"(baseline {self.errors.get('baseline', 0)})")
        if self.unmarked:
            text += f"; passed by value, not marked: {', '.join(self.unmarked)}"
        for reason in self.declassified:
            text += f"\n    declassified: {reason}"
        for phase in _PHASES:
            for site in self.sites.get(phase, []):
                text += f"\n    {phase}: {site.count} x {site.what}\n      at {site.where}"
        return text


# -- the parent: tools, the valgrind CPU, the native compile, the run under memcheck ---------------

def available() -> str | None:
    """None when the check can run here, else what is missing."""
    if sys.platform != "linux" or os.uname().machine != "x86_64":
        return "the memcheck check runs on x86-64 Linux"
    if shutil.which("valgrind") is None:
        return "valgrind is not installed (Debian: apt-get install valgrind)"
    if _compiler() is None:
        return "no C compiler (cc or gcc) for the client-request helper"
    if not Path("/usr/include/valgrind/memcheck.h").exists():
        return "valgrind's headers are missing (/usr/include/valgrind/memcheck.h)"
    return None


def _compiler() -> str | None:
    return shutil.which("cc") or shutil.which("gcc")


def _build_helper(directory: Path) -> Path:
    source = directory / "requests.c"
    source.write_text(_HELPER_SOURCE)
    out = directory / "requests.so"
    subprocess.run([_compiler() or "cc", "-O1", "-shared", "-fPIC", "-o", str(out), str(source)],
                   check=True, capture_output=True)
    return out


def valgrind_cpu(python: str = sys.executable) -> tuple[str, str]:
    """(name, features) of the CPU that valgrind presents, in llvmlite's terms."""
    code = ("import llvmlite.binding as ll; print(ll.get_host_cpu_name()); "
            "print(ll.get_host_cpu_features().flatten())")
    out = subprocess.run(["valgrind", "-q", "--tool=none", python, "-c", code], check=True,
                         capture_output=True, text=True).stdout.split()
    return out[0], out[1]


def _environment(cpu: tuple[str, str], kernels: str | None) -> dict[str, str]:
    # the parent's module path, so that targets given as module:ATTRIBUTE import the same way
    env = dict(os.environ, NUMBA_CPU_NAME=cpu[0], NUMBA_CPU_FEATURES=cpu[1], PYTHONMALLOC="malloc",
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    env.pop("PQFORGE_KERNELS", None)        # none given: the fastest set valgrind's CPU runs
    if kernels:
        env["PQFORGE_KERNELS"] = kernels
    return env


def check(targets: Sequence[Target], alg: str | None = None, kernels: str | None = None,
          timeout: float = 1800, log: Callable[[str], None] | None = None) -> list[Result]:
    """Run ``targets`` (at ``alg``, else each one's first parameter set) under memcheck with the
    kernel set ``kernels`` (``PQFORGE_KERNELS`` for the operations; None: the fastest set
    valgrind's CPU runs, AVX2 on x86-64), one result each. Kernel targets name their set."""
    missing = available()
    if missing:
        raise InvalidInput(f"pqforge ct memcheck: {missing}")
    if kernels and kernels not in _VALGRIND_SETS and kernels != "auto":
        raise InvalidInput(f"pqforge ct memcheck: valgrind cannot run the {kernels} kernel set; "
                           f"it runs {', '.join(_VALGRIND_SETS)}")
    say = log or (lambda text: None)
    plan = [{"target": _name(t), "alg": t.resolve_params(alg)[0] if t.algs else None} for t in targets]
    steps: list[dict] = [{}] * len(plan)
    sites: dict[tuple[str, str], list[Site]] = {}
    with tempfile.TemporaryDirectory(prefix="pqforge-memcheck-") as tmp:
        work = Path(tmp)
        helper = str(_build_helper(work))
        # the steps of one parameter set share their kernels: one process compiles (and later
        # loads under valgrind, which costs most of a minute a set) them once
        shares = _by_set(plan, cores())
        paths = [work / f"plan{i}.json" for i in range(len(shares))]
        for share, path in zip(shares, paths):
            path.write_text(json.dumps({"plan": [plan[j] for j in share], "helper": helper,
                                        "out": str(path.with_suffix(".calls.json"))}))
        cpu = valgrind_cpu()
        env = _environment(cpu, kernels)
        child = [sys.executable, "-m", "pqforge.ct.memcheck"]
        say(f"compiling the kernels for valgrind's CPU ({cpu[0]}) natively")
        for run in _side_by_side([child + [str(p), "--native"] for p in paths], env, timeout):
            if run.returncode != 0:
                raise RuntimeError(f"compiling the targets failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
        say("running them under memcheck")
        memcheck = ["valgrind", "--tool=memcheck", "--error-limit=no", "--leak-check=no", "--xml=yes"]
        runs = _side_by_side([memcheck + [f"--xml-file={p.with_suffix('.xml')}", *child, str(p)] for p in paths],
                             env, timeout)
        for share, path, run in zip(shares, paths, runs):
            calls_file = path.with_suffix(".calls.json")
            if run.returncode != 0 or not calls_file.exists():
                raise RuntimeError(f"the run under memcheck failed (exit {run.returncode}):\n{run.stderr[-4000:]}")
            calls = json.loads(calls_file.read_text())
            sites.update(_read_sites(path.with_suffix(".xml"), calls["symbols"]))
            for j, step in zip(share, calls["results"]):
                steps[j] = step
    results = []
    for step, t in zip(steps, targets):
        r = Result(t.name, step["alg"], errors=step.get("errors", {}), unmarked=step.get("unmarked", []),
                   declassified=t.declassified, skipped=step.get("skipped", ""))
        r.sites = {phase: sites.get((step["target"], phase), []) for phase in _PHASES}
        results.append(r)
    return results


def _by_set(plan: list[dict], count: int) -> list[list[int]]:
    """The plan's indices in at most ``count`` shares, the steps of one parameter set together,
    the largest set first into the smallest share."""
    groups: dict[Any, list[int]] = {}
    for i, step in enumerate(plan):
        groups.setdefault(step["alg"], []).append(i)
    shares: list[list[int]] = [[] for _ in range(max(1, count))]
    for group in sorted(groups.values(), key=len, reverse=True):
        min(shares, key=len).extend(group)
    return [sorted(share) for share in shares if share]


def _side_by_side(commands: list[list[str]], env: dict[str, str], timeout: float) -> list[subprocess.CompletedProcess]:
    """Run ``commands`` at once, each in a process of its own; their results in order."""
    procs = [subprocess.Popen(c, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for c in commands]
    done = []
    try:
        for c, proc in zip(commands, procs):
            out, err = proc.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(c, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return done


def _name(t: Target) -> str:
    """How the process under memcheck finds ``t``: its registered name, or module:ATTRIBUTE."""
    from . import registry
    if any(r is t for r in registry.all_targets()):
        return t.name
    module = getattr(t.func, "__module__", None) or ""
    for attr, value in vars(sys.modules[module]).items() if module in sys.modules else ():
        if value is t:
            return f"{module}:{attr}"
    raise InvalidInput(f"target {t.name} is neither registered nor an attribute of its kernel's module")


def _read_sites(xml: Path, symbols: list[list]) -> dict[tuple[str, str], list[Site]]:
    """Memcheck's distinct errors, by (target, phase) of the call in which each first appeared."""
    starts = np.array([s[0] for s in symbols], dtype=np.uint64)
    names = [s[1] for s in symbols]

    def frame_name(frame: ET.Element) -> str:
        fn = frame.findtext("fn")
        if fn:
            return fn
        ip = int(frame.findtext("ip") or "0", 16)
        at = int(np.searchsorted(starts, np.uint64(ip), side="right")) - 1
        return f"{names[at]}+{ip - int(starts[at]):#x} (compiled)" if at >= 0 else f"{ip:#x}"

    root = ET.parse(xml).getroot()
    counts = {pair.findtext("unique"): int(pair.findtext("count") or 1)
              for pair in root.iter("pair")}
    out: dict[tuple[str, str], list[Site]] = {}
    current = None
    for node in root:
        if node.tag == "clientmsg":
            text = (node.findtext("text") or "").split()
            if len(text) == 3 and text[0] == _MARK:
                current = None if text[2] == "end" else (text[1], text[2])
        elif node.tag == "error" and current is not None:
            # valgrind cannot unwind compiled frames: past the first, only named ones count
            frames = [frame_name(f) for k, f in enumerate(node.iter("frame")) if k == 0 or f.findtext("fn")]
            out.setdefault(current, []).append(Site(node.findtext("kind") or "", node.findtext("what") or "",
                                                    frames, counts.get(node.findtext("unique"), 1)))
    return out


# -- the child: one process that calls every target (natively, or under memcheck) ----------------

class _Requests:
    """valgrind's client requests through the compiled helper (no-ops outside valgrind)."""

    def __init__(self, path: str):
        lib = ctypes.CDLL(path)
        lib.pq_errors.restype = ctypes.c_ulong
        lib.pq_undefined.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.pq_say.argtypes = [ctypes.c_char_p]
        lib.pq_report.argtypes = [ctypes.c_int]
        self.lib = lib
        self.running = bool(lib.pq_running())

    def undefined(self, value: Any) -> bool:
        """Mark the memory of ``value`` undefined; False for a value passed by value."""
        if isinstance(value, np.ndarray):
            if value.nbytes:
                self.lib.pq_undefined(value.ctypes.data, value.nbytes)
            return True
        if isinstance(value, bytearray):
            self.lib.pq_undefined(ctypes.addressof((ctypes.c_char * len(value)).from_buffer(value)), len(value))
            return True
        if isinstance(value, bytes):        # c_char_p of a bytes object points into it, no copy
            self.lib.pq_undefined(ctypes.cast(ctypes.c_char_p(value), ctypes.c_void_p).value, len(value))
            return True
        if isinstance(getattr(value, "data", None), bytes):   # a secret source of random bytes
            return self.undefined(value.data)
        return False

    def call(self, label: str, func: Callable, args: tuple) -> int:
        """``func(*args)`` with error reporting on; memcheck's error count of the call."""
        self.lib.pq_say(f"{_MARK} {label}".encode())
        before = self.lib.pq_errors()
        self.lib.pq_report(1)
        try:
            func(*args)
        finally:
            self.lib.pq_report(0)
            self.lib.pq_say(f"{_MARK} - end".encode())
        return int(self.lib.pq_errors() - before)


def _inputs(t: Target, params: Any, seed: int) -> tuple:
    return t.make_inputs(params, np.random.default_rng(seed), False)


def _compiled_symbols() -> list[list]:
    """[address, name] of every function numba has loaded, sorted (to name compiled frames)."""
    from numba.core.registry import cpu_target
    engine = cpu_target.target_context.codegen()._engine
    out = []
    for symbol in list(engine._defined_symbols):
        if symbol.startswith(".const") or "NumbaEnv" in symbol:
            continue
        address = engine.get_function_address(symbol)
        if address:
            out.append([address, demangle(symbol)])
    return sorted(out)


def demangle(symbol: str) -> str:
    """``pqforge.mayo.kernels.solve._echelon_form`` from numba's mangled name (the rest dropped)."""
    body = symbol[len("cfunc."):] if symbol.startswith("cfunc.") else symbol
    if not body.startswith("_ZN"):
        return symbol
    parts, i = [], 3
    while i < len(body) and body[i].isdigit():
        digits = re.match(r"\d+", body[i:])
        assert digits is not None
        size = int(digits.group())
        i += len(digits.group())
        parts.append(body[i:i + size])
        i += size
        while i < len(body) and body[i] == "B":       # numba's ABI tags: B<len><tag>
            tag = re.match(r"B(\d+)", body[i:])
            if tag is None:
                break
            i += len(tag.group()) + int(tag.group(1))
    # numba escapes other characters as _XX but leaves "_" alone: undo only the usual ones
    return re.sub(r"_(3c|3e|2e)", lambda m: chr(int(m.group(1), 16)), ".".join(parts))


def _child(plan_path: str, native: bool) -> None:
    from . import registry
    request = json.loads(Path(plan_path).read_text())
    requests = _Requests(request["helper"])
    if requests.running:
        requests.lib.pq_report(0)
    results = []
    known = {t.name: t for t in registry.all_targets()}
    for step in request["plan"]:
        result: dict[str, Any] = {"target": step["target"], "alg": step["alg"]}
        results.append(result)
        t = registry.get(step["target"]) if ":" in step["target"] else known.get(step["target"])
        if t is None:
            result["skipped"] = "its kernels need CPU features valgrind does not emulate (such as GFNI)"
            continue
        alg, params = t.resolve_params(step["alg"]) if t.algs else (None, None)
        t.func(*_inputs(t, params, 1))              # compiled (natively) or loaded from the cache
        if native:
            continue
        result["errors"] = {"baseline": requests.call(f"{step['target']} baseline", t.func,
                                                      _inputs(t, params, 2))}
        args = _inputs(t, params, 3)
        positions = t.secret_positions()
        names = _argument_names(t)
        result["unmarked"] = [names[i] for i in positions if not requests.undefined(args[i])]
        if len(result["unmarked"]) == len(positions):
            result["skipped"] = "every secret argument is passed by value (checked inside the kernels that inline it)"
            continue
        result["errors"]["marked"] = requests.call(f"{step['target']} marked", t.func, args)
    if not native:
        Path(request["out"]).write_text(json.dumps({"results": results, "symbols": _compiled_symbols()}))


def _argument_names(t: Target) -> list[str]:
    import inspect
    fn = t.python_twin() or t.func
    try:
        return list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return [str(i) for i in range(64)]


if __name__ == "__main__":
    _child(sys.argv[1], native="--native" in sys.argv[2:])
