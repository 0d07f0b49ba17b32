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

Units missing from the cache compile side by side, in other processes that write them to the
cache: ``prefetch`` starts them early (an operation's first compile starts those of the
operations likely to follow), ``addresses`` waits for them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import types as pytypes
from pathlib import Path
from typing import Any, Sequence

import numba as nb
from llvmlite import ir
from numba.core import errors, types
from numba.extending import intrinsic, overload

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
        self.call = self._caller()

    @property
    def address(self) -> int:
        """The unit's entry point in this process (compiled, or loaded from the cache, on first use)."""
        if self._address is None:
            self._cfunc = nb.cfunc(self.signature, cache=JIT_CACHE)(self._twin_for_cache())
            self._address = int(self._cfunc.address)
        return self._address

    def _in_cache(self) -> bool:
        from numba.core.caching import FunctionCache
        from numba.core.registry import cpu_target
        cache = FunctionCache(self._twin_for_cache())
        return cache.load_overload(self.signature, cpu_target.target_context) is not None

    def _twin_for_cache(self) -> pytypes.FunctionType:
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


_WORKER = """
import importlib, sys
from pqforge._units import Unit
module = importlib.import_module(sys.argv[1])
unit, = [u for u in vars(module).values() if isinstance(u, Unit) and u.kernel.py_func.__qualname__ == sys.argv[2]]
unit.address
"""


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux
        return os.cpu_count() or 1


def _compile_elsewhere(unit: Unit) -> None:
    """Start a process that compiles ``unit`` into the cache (nothing when none can be started)."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)        # pqforge importable as here
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        unit._worker = subprocess.Popen([sys.executable, "-c", _WORKER, unit.kernel.py_func.__module__,
                                         unit.kernel.py_func.__qualname__], env=env, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, ValueError):       # no interpreter to start (an embedded one): compile here
        pass


def _missing(units: Sequence[Unit]) -> list[Unit]:
    """The units neither loaded here, nor in the cache, nor being compiled by a worker."""
    if not JIT_CACHE:
        return []
    return [u for u in units if u._address is None and u._worker is None and not u._in_cache()]


def prefetch(units: Sequence[Unit]) -> None:
    """Start compiling those of ``units`` that the cache lacks, each in a process of its own,
    when the machine has more than one core; returns at once."""
    if _cores() > 1:
        for unit in _missing(units):
            _compile_elsewhere(unit)


_lock = threading.Lock()     # threads of a batch may ask at once: one compile, one wait


def addresses(units: Sequence[Unit]) -> tuple[int, ...]:
    """The addresses of ``units``: units being compiled elsewhere are waited for; of those the
    cache lacks, all but one compile in other processes while this one compiles the first (on
    one core, all here); then the rest load from the cache (any a worker did not deliver
    compile here)."""
    if all(unit._address is not None for unit in units):
        return tuple(unit._address for unit in units)
    with _lock:
        missing = _missing(units)
        if _cores() > 1:
            for unit in missing[1:]:
                _compile_elsewhere(unit)
        for unit in missing[:1]:
            unit.address
        for unit in units:
            if unit._worker is not None:
                unit._worker.wait()
                unit._worker = None
        return tuple(unit.address for unit in units)
