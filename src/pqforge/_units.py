"""Kernels compiled on their own and called from other compiled code through their address.

numba links the code of every compiled function a kernel calls into the kernel's own module
and optimises the whole module again, so a kernel high in the call tree (a signing attempt, a
batch loop) pays again for everything below it: most of a first signature's compile time.
A ``Unit`` cuts the tree: its kernel becomes a C-callable function (``numba.cfunc``, cached like
every kernel), and compiled callers reach it through ``unit.call(address, *args)``, an
indirect call whose address is an ordinary argument, known only at run time, so that nothing
of the unit is linked into the caller and the caller's cached code stays valid in every
process. Python code fetches the address with ``unit.address`` (compiling or loading the unit
on first use) and passes it down.

The call passes numba's own values (an array as its struct) to the unit's C wrapper, so the
argument types at the call site must be exactly the unit's signature; any other type is a
typing error when the caller compiles, never a wrong call. Outside compiled code (and for the
constant-time trace check) ``unit.call`` runs the kernel itself.

Compiling side by side: a first use can hand kernels to other processes, which compile them
into the cache while this one goes on; ``prefetch`` starts them (one process per call, its
items in order), ``wait`` and ``addresses`` wait for them. Units and ``Ahead`` entries (a kernel
that Python code calls, with the argument types of that call) can be handed over alike.
Processes that compile for later operations run at low priority, so they take idle cores
only. A helper outlives the process that started it (a ``pqforge keygen`` that has returned),
so each entry it has yet to deliver has a marker in the cache directory naming the helper's
pid; any process that needs the entry waits for that helper instead of compiling it again.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
import types as pytypes
from pathlib import Path
from typing import Any, Sequence, Union

import numba as nb
from llvmlite import ir
from numba.core import errors, types
from numba.extending import intrinsic, overload

from . import _compile_cache
from ._compile_cache import JIT_CACHE


class Unit:
    """``kernel`` (an ``njit`` function) compiled on its own for ``signature`` (argument types
    exactly as callers pass them; a void, boolean or integer result)."""

    def __init__(self, kernel: Any, signature: Any):
        self.kernel = kernel
        self.signature = signature
        self._cfunc: Any = None
        self._address: int | None = None
        self._worker: subprocess.Popen | None = None     # a process compiling this unit
        self.home = kernel.py_func.__module__
        self.key = kernel.py_func.__qualname__
        self.call = self._caller()

    def _compile_here(self) -> None:
        self.address        # compiles, or loads from the cache

    @property
    def address(self) -> int:
        """The unit's entry point in this process (compiled, or loaded from the cache, on first use)."""
        if self._address is None:
            self._cfunc = nb.cfunc(self.signature, cache=JIT_CACHE)(self._cfunc_source())
            self._address = int(self._cfunc.address)
        return self._address

    def _ready(self) -> bool:
        return self._address is not None

    def _in_cache(self) -> bool:
        from numba.core.caching import FunctionCache
        from numba.core.registry import cpu_target
        cache = FunctionCache(self._cfunc_source())
        return cache.load_overload(self.signature, cpu_target.target_context) is not None

    def _cfunc_source(self) -> pytypes.FunctionType:
        """The kernel's Python function under a name of its own (``<name>_unit``), so that the
        C wrapper has its own cache entry beside the kernel's."""
        f = self.kernel.py_func
        g = pytypes.FunctionType(f.__code__, f.__globals__, f.__name__ + "_unit", f.__defaults__, f.__closure__)
        g.__qualname__ = f.__qualname__ + "_unit"
        g.__module__ = f.__module__
        return g

    def _caller(self):
        kernel, sig = self.kernel, self.signature
        name = kernel.py_func.__qualname__

        @intrinsic
        def indirect(typingctx, address, args):
            if tuple(args) != tuple(sig.args):
                raise errors.TypingError(f"unit {name} takes {sig.args}, got {tuple(args)}")

            def codegen(context, builder, signature, llargs):
                void = sig.return_type == types.void
                result = ir.VoidType() if void else context.get_value_type(sig.return_type)
                fnty = ir.FunctionType(result, [context.get_value_type(t) for t in sig.args])
                fn = builder.inttoptr(llargs[0], fnty.as_pointer())
                value = builder.call(fn, [builder.extract_value(llargs[1], i) for i in range(len(sig.args))])
                return context.get_dummy_value() if void else value
            return sig.return_type(types.int64, args), codegen

        def call(address, *args):
            """``kernel(*args)`` (compiled: through the unit at ``address``)."""
            return kernel(*args)
        call.unit = self     # the trace check runs the kernel's twin instead

        @overload(call)
        def _compiled(address, *args):
            def impl(address, *args):
                return indirect(address, args)
            return impl
        return call


class Ahead:
    """A kernel that Python code calls with the argument types ``args`` (a tuple of numba types),
    listed so that a first use can have it compiled elsewhere before the call (``prefetch``,
    ``wait``): the call then finds it in the cache. Types that no call uses cost a compile,
    never a result."""

    def __init__(self, kernel: Any, args: tuple):
        # declared at module level (alone or in a tuple), where a worker can find it
        self.kernel = kernel
        self.args = tuple(args)
        self._worker: subprocess.Popen | None = None
        self.home = sys._getframe(1).f_globals["__name__"]     # where workers find this entry
        self.key = f"{kernel.py_func.__qualname__}{self.args}"

    def _compile_here(self) -> None:
        self.kernel.compile(self.args)

    def _ready(self) -> bool:
        return self.args in self.kernel.overloads

    def _in_cache(self) -> bool:
        # the key numba's dispatcher uses for a call: the tuple of argument types
        from numba.core.registry import cpu_target
        return self.kernel._cache.load_overload(self.args, cpu_target.target_context) is not None


Compilable = Union[Unit, Ahead]


def _declared(module: Any) -> list:
    """The units and ``Ahead`` entries a module holds, alone or in tuples."""
    out = []
    for value in vars(module).values():
        for item in (value if isinstance(value, tuple) else (value,)):
            if isinstance(item, (Unit, Ahead)):
                out.append(item)
    return out


def compile_in_worker(specs: Sequence[str]) -> None:
    """What a worker runs: compile the entries named "module:key", in order, removing each
    one's in-progress marker as it lands (and all that are left when it stops)."""
    import importlib
    try:
        for spec in specs:
            home, key = spec.split(":", 1)
            for item in _declared(importlib.import_module(home)):
                if item.key == key:
                    item._compile_here()
                    break
            _unmark(spec)
    finally:
        for spec in specs:
            _unmark(spec)


# -- entries in progress in some process: a marker file each, holding the helper's pid ---------

def _spec(item: Compilable) -> str:
    return f"{item.home}:{item.key}"


def _in_progress_marker(spec: str) -> Path | None:
    if _compile_cache.CACHE_DIR is None:
        return None
    name = hashlib.sha256(spec.encode()).hexdigest()[:32]      # keys hold types: any characters
    return _compile_cache.CACHE_DIR / "pqforge-compiling" / name


def _mark(specs: Sequence[str], pid: int) -> None:
    for spec in specs:
        marker = _in_progress_marker(spec)
        if marker is None:
            return
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{pid}\n")
        except OSError:     # without a marker another process may compile the entry too: only slower
            return


def _unmark(spec: str) -> None:
    marker = _in_progress_marker(spec)
    try:
        if marker is not None and marker.read_text().strip() == str(os.getpid()):
            marker.unlink()
    except (OSError, ValueError):
        pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # another user's process
        return True
    except OSError:
        return False
    return True


def _compiling_elsewhere(item: Compilable) -> bool:
    """Whether a live helper (started by this process or another) has yet to deliver ``item``.
    A marker whose helper is gone, or older than ``WORKER_SECONDS``, is stale."""
    marker = _in_progress_marker(_spec(item))
    if marker is None:
        return False
    try:
        pid = int(marker.read_text().strip())
        fresh = time.time() - marker.stat().st_mtime < WORKER_SECONDS
    except (OSError, ValueError):
        return False
    return fresh and pid != os.getpid() and _alive(pid)


_WORKER = "import sys; from pqforge._units import compile_in_worker; compile_in_worker(sys.argv[1:])"
_LATER = "import os, sys; os.nice(10); from pqforge._units import compile_in_worker; compile_in_worker(sys.argv[1:])"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux
        return os.cpu_count() or 1


def _compile_elsewhere(items: Sequence[Compilable], later: bool = False) -> None:
    """Start one process that compiles ``items`` into the cache in order (nothing when none can be
    started: each then compiles here when it is needed); ``later``: at low priority."""
    if not Path(sys.executable or "").name.lower().startswith(("python", "pypy")):
        return      # Python embedded in another program (uwsgi, mod_wsgi): no interpreter to start
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)        # pqforge importable as here
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        worker = subprocess.Popen([sys.executable, "-c", _LATER if later else _WORKER,
                                   *(_spec(item) for item in items)], env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, ValueError):
        return
    _mark([_spec(item) for item in items], worker.pid)
    for item in items:
        item._worker = worker


def _missing(items: Sequence[Compilable]) -> list:
    """The entries neither compiled here, nor in the cache, nor being compiled by a worker
    (this process's or another's)."""
    if not JIT_CACHE:
        return []
    return [i for i in items if not i._ready() and i._worker is None and not i._in_cache()
            and not _compiling_elsewhere(i)]


def prefetch(items: Sequence[Compilable], later: bool = False) -> None:
    """Start compiling those of ``items`` that the cache lacks, in order, in one other process,
    when the machine has more than one core; returns at once. ``later``: for operations after
    the current one (the process runs at low priority)."""
    if _cores() > 1:
        missing = _missing(items)
        if missing:
            _compile_elsewhere(missing, later)


_lock = threading.RLock()     # threads of a batch may ask at once: one compile, one wait


WORKER_SECONDS = 600
"""How long to wait for a helper process; one that takes longer is stopped (what it did not
deliver then compiles here)."""


POLL_SECONDS = 0.05
"""How often to look whether another process's helper has delivered an entry."""


def wait(items: Sequence[Compilable], own: bool = True) -> None:
    """Wait for the processes compiling any of ``items``: this process's helpers (unless ``own``
    is false), and those that other processes started and left running (their markers)."""
    with _lock:
        for item in items:
            worker = item._worker
            if worker is not None:
                if not own:
                    continue
                try:
                    worker.wait(timeout=WORKER_SECONDS)
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()
                item._worker = None
            elif JIT_CACHE and not item._ready():
                deadline = time.monotonic() + WORKER_SECONDS
                while _compiling_elsewhere(item) and time.monotonic() < deadline:
                    time.sleep(POLL_SECONDS)


def addresses(units: Sequence[Unit]) -> tuple[int, ...]:
    """The addresses of ``units``: units being compiled elsewhere are waited for; when the
    cache lacks several, the rest compile in another process while this one compiles the
    first; then they load from the cache (any a worker did not deliver compiles here)."""
    known = tuple([unit._address for unit in units])
    if None not in known:
        return known
    with _lock:
        missing = _missing(units)
        if len(missing) > 1 and _cores() > 1:
            _compile_elsewhere(missing[1:])
        for unit in missing[:1]:
            unit._compile_here()
        wait(units)
        return tuple(unit.address for unit in units)
