"""The deterministic check: run a kernel's plain-Python twin on two secrets and compare what it did.

Two records are compared between a call with secret A and a call with secret B (the public
arguments being identical):

* the *control-flow trace*: the sequence of executed source lines (or, with ``opcodes=True``, of
  executed bytecode offsets, which also separates the two arms of a one-line conditional
  expression or a short-circuit ``and``/``or``) in the kernel and in every compiled kernel it
  calls, which are swapped for their own twins;
* the *index trace*: every subscript applied to an array argument, to an array the kernel
  allocates through ``np``, or to a module-level array, with its index values. Differing index
  values mean secret-dependent memory addresses (table look-ups, secret pivots).

What this cannot see is listed in docs/constant-time.md: work inside numpy and builtins,
subscripts of Python lists and tuples, arrays reached through another module's attribute, and the
machine code numba generates from the same source (which may differ in branches the source does
not have).
"""

from __future__ import annotations

import copy
import hashlib
import linecache
import pickle
import sys
import types
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

from .registry import Target

# -- twins ----------------------------------------------------------------------------------------


def _is_compiled(obj) -> bool:
    return hasattr(obj, "py_func") and isinstance(getattr(obj, "py_func"), types.FunctionType)


def _names(code: types.CodeType) -> set[str]:
    out = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out |= _names(const)
    return out


def _codes(code: types.CodeType) -> list[types.CodeType]:
    out = [code]
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out += _codes(const)
    return out


def _package_function(obj) -> bool:
    """A plain function of this package (one with an ``@overload`` for compiled callers, say):
    its twin is itself with its callees' twins, so that compiled kernels it calls run as Python."""
    return isinstance(obj, types.FunctionType) and (obj.__module__ or "").startswith("pqforge.")


class TwinBuilder:
    """Plain-Python versions of compiled kernels whose calls to other compiled kernels also run
    as Python, so that the tracer sees them. ``wrap_globals`` (used for the index trace) maps each
    module-level array or the numpy module to a replacement in the twins' globals."""

    def __init__(self, wrap_globals: Callable[[str, Any], Any] | None = None):
        self.wrap_globals = wrap_globals
        self.codes: set[types.CodeType] = set()
        self._memo: dict[int, types.FunctionType] = {}

    def twin(self, fn) -> Callable:
        unit = getattr(fn, "unit", None)
        if unit is not None:            # a call through a separately compiled unit (``pqforge.jit.units``)
            kernel = self.twin(unit.kernel)
            return lambda address, *args: kernel(*args)
        base = fn.py_func if _is_compiled(fn) else fn
        if not isinstance(base, types.FunctionType):
            return fn
        if id(base) in self._memo:
            return self._memo[id(base)]
        g = dict(base.__globals__)
        new = types.FunctionType(base.__code__, g, base.__name__, base.__defaults__, base.__closure__)
        new.__kwdefaults__ = base.__kwdefaults__
        self._memo[id(base)] = new
        self.codes.update(_codes(base.__code__))
        for name in _names(base.__code__):
            if name not in g:
                continue
            value = g[name]
            if _is_compiled(value) or getattr(value, "unit", None) is not None or _package_function(value):
                g[name] = self.twin(value)
            elif self.wrap_globals is not None:
                g[name] = self.wrap_globals(name, value)
        return new


# -- index recording ------------------------------------------------------------------------------

def _norm_index(idx) -> tuple:
    if not isinstance(idx, tuple):
        idx = (idx,)
    out = []
    for part in idx:
        if isinstance(part, IndexRecorder):
            part = part._base
        if isinstance(part, (bool, np.bool_)):
            out.append(("b", bool(part)))
        elif isinstance(part, (int, np.integer)):
            out.append(int(part))
        elif isinstance(part, slice):
            out.append(("s", part.start, part.stop, part.step))
        elif isinstance(part, np.ndarray):
            out.append(("a", part.shape, part.tobytes()))
        elif part is None or part is Ellipsis:
            out.append(repr(part))
        else:
            out.append(("?", repr(part)))
    return tuple(out)


BLOCK = 1 << 16
"""Steps per block of a record. A kernel of full size runs billions of steps under the tracer:
a record keeps one digest per block, and the steps themselves for one block only (the one to
be shown), so that its memory does not grow with the run."""


class Record:
    """The steps of one run (control-flow events or subscripts): their count, a digest of every
    block of ``BLOCK`` steps, and the steps of block ``keep`` (with a note each, e.g. its
    source line) in full. ``progress(n)`` hears of every n steps recorded."""

    def __init__(self, keep: int | None = None, progress: Callable[[int], Any] | None = None):
        self.progress = progress
        self.count = 0
        self.digests: list[bytes] = []
        self.keep = keep
        self.kept: list = []
        self.notes: list = []
        self._block: list = []
        self._keeping = keep == 0      # the block being filled is block keep

    def add(self, step: Any, note: Any = None) -> None:
        self._block.append(step)
        if self._keeping:
            self.notes.append(note)
        if len(self._block) == BLOCK:
            self._close()

    def _close(self) -> None:
        if self._keeping:
            self.kept = self._block
        self.digests.append(hashlib.blake2b(pickle.dumps(self._block, protocol=5), digest_size=16).digest())
        self.count += len(self._block)
        if self.progress is not None:
            self.progress(len(self._block))
        self._block = []
        self._keeping = self.keep == len(self.digests)

    def finish(self) -> Record:
        if self._block:
            self._close()
        return self


def _first_different_block(a: Record, b: Record) -> int | None:
    """The first block where two finished records differ (in steps or in length), or None."""
    for k, (x, y) in enumerate(zip(a.digests, b.digests)):
        if x != y:
            return k
    # equal as far as both go: the shorter ends on a block boundary, where the longer goes on
    return None if a.count == b.count else min(len(a.digests), len(b.digests))


class IndexLog:
    def __init__(self, keep: int | None = None, progress: Callable[[int], Any] | None = None):
        self.records = Record(keep, progress)   # (array label, normalised index, "get"/"set"); note (file, line)
        self._next = 0

    def label(self, hint: str) -> str:
        self._next += 1
        return f"{hint}#{self._next}"


class IndexRecorder(NDArrayOperatorsMixin):
    """A numpy array that logs every subscript's index values; arithmetic goes to the array."""

    def __init__(self, base: np.ndarray, log: IndexLog, label: str):
        object.__setattr__(self, "_base", base)
        object.__setattr__(self, "_log", log)
        object.__setattr__(self, "_label", label)

    def _note(self, idx, op):
        f = sys._getframe(2)
        self._log.records.add((self._label, _norm_index(idx), op), (f.f_code.co_filename, f.f_lineno))

    def _wrap(self, value, hint):
        if isinstance(value, np.ndarray) and not isinstance(value, IndexRecorder):
            return IndexRecorder(value, self._log, self._log.label(hint))
        return value

    def __getitem__(self, idx):
        self._note(idx, "get")
        raw = idx._base if isinstance(idx, IndexRecorder) else idx
        return self._wrap(self._base[raw], self._label + "[]")

    def __setitem__(self, idx, value):
        self._note(idx, "set")
        raw = idx._base if isinstance(idx, IndexRecorder) else idx
        self._base[raw] = value._base if isinstance(value, IndexRecorder) else value

    def __len__(self):
        return len(self._base)

    def __iter__(self):
        for i in range(len(self._base)):
            yield self[i]

    def __array__(self, dtype=None, copy=None):
        return self._base if dtype is None else self._base.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        unwrap = lambda v: v._base if isinstance(v, IndexRecorder) else v  # noqa: E731
        inputs = tuple(unwrap(v) for v in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(unwrap(v) for v in kwargs["out"])
        result = getattr(ufunc, method)(*inputs, **kwargs)
        return self._wrap(result, "ufunc") if not isinstance(result, tuple) else result

    def __getattr__(self, name):
        value = getattr(self._base, name)
        if callable(value):
            def method(*args, **kwargs):
                args = tuple(a._base if isinstance(a, IndexRecorder) else a for a in args)
                return self._wrap(value(*args, **kwargs), f"{self._label}.{name}")
            return method
        return self._wrap(value, f"{self._label}.{name}")

    def __repr__(self):
        return f"IndexRecorder({self._label}, {self._base!r})"


_ALLOCATORS = ("zeros", "empty", "ones", "full", "zeros_like", "empty_like", "ones_like",
               "full_like", "copy", "array", "arange", "ascontiguousarray")


class _NumpyShim(types.ModuleType):
    """``np`` as the twins see it during the index trace: allocations come back as recorders."""

    def __init__(self, log: IndexLog):
        super().__init__("numpy")
        self._log = log

    def __getattr__(self, name):
        value = getattr(np, name)
        if name in _ALLOCATORS:
            def alloc(*args, **kwargs):
                args = tuple(a._base if isinstance(a, IndexRecorder) else a for a in args)
                out = value(*args, **kwargs)
                return IndexRecorder(out, self._log, self._log.label(f"np.{name}")) \
                    if isinstance(out, np.ndarray) else out
            return alloc
        return value


# -- tracing --------------------------------------------------------------------------------------

class _Tracer:
    def __init__(self, codes: set[types.CodeType], opcodes: bool, keep: int | None = None,
                 progress: Callable[[int], Any] | None = None):
        self.table: dict[types.CodeType, int] = {}
        self.codes = codes
        self.opcodes = opcodes
        self.events = Record(keep, progress)

    def _code_index(self, code) -> int:
        idx = self.table.get(code)
        if idx is None:
            idx = self.table[code] = len(self.table)
        return idx

    def global_trace(self, frame, event, arg):
        if event != "call" or frame.f_code not in self.codes:
            return None
        if self.opcodes:
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
        self.events.add((self._code_index(frame.f_code) << 33) | (1 << 32))
        return self.local_trace

    def local_trace(self, frame, event, arg):
        if event == "line":
            self.events.add((self._code_index(frame.f_code) << 33) | frame.f_lineno)
        elif event == "opcode":
            self.events.add((self._code_index(frame.f_code) << 33) | (2 << 30) | frame.f_lasti)
        return self.local_trace

    def describe(self, event: int) -> str:
        codes = {v: k for k, v in self.table.items()}
        code = codes.get(event >> 33)
        if code is None:
            return "(end of trace)"
        low = event & ((1 << 33) - 1)
        if low == 1 << 32:
            return f"call {code.co_name}"
        if low >> 30 == 2:
            offset = low & ((1 << 30) - 1)
            line = next((ln for start, end, ln in code.co_lines() if start <= offset < end), None)
            text = linecache.getline(code.co_filename, line).strip() if line else ""
            return f"{code.co_name} offset {offset} (line {line}: {text})"
        text = linecache.getline(code.co_filename, low).strip()
        return f"{code.co_name} line {low}: {text}"


@dataclass
class Trace:
    events: Record
    tracer: _Tracer


def _copy_args(args: Sequence) -> tuple:
    return tuple(copy.deepcopy(a) for a in args)


def trace_call(fn: Callable, args: Sequence, opcodes: bool = False, keep: int | None = None,
               progress: Callable[[int], Any] | None = None) -> Trace:
    """Run the twin of ``fn`` on (copies of) ``args`` under the tracer (keeping the events of
    block ``keep``)."""
    builder = TwinBuilder()
    twin = builder.twin(fn)
    tracer = _Tracer(builder.codes, opcodes, keep, progress)
    args = _copy_args(args)
    old = sys.gettrace()
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        sys.settrace(tracer.global_trace)
        try:
            twin(*args)
        finally:
            sys.settrace(old)
    return Trace(tracer.events.finish(), tracer)


def index_call(fn: Callable, args: Sequence, keep: int | None = None,
               progress: Callable[[int], Any] | None = None) -> IndexLog:
    """Run the twin of ``fn`` with every array argument, module-level array and ``np`` allocation
    wrapped in an index recorder; the log of subscripts it made (those of block ``keep`` in full)."""
    log = IndexLog(keep, progress)

    def wrap_global(name, value):
        if isinstance(value, np.ndarray):
            return IndexRecorder(value, log, f"global {name}")
        if value is np:
            return _NumpyShim(log)
        return value

    twin = TwinBuilder(wrap_global).twin(fn)
    wrapped = tuple(IndexRecorder(a, log, f"arg{i}") if isinstance(a, np.ndarray) else a
                    for i, a in enumerate(_copy_args(args)))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        twin(*wrapped)
    log.records.finish()
    return log


@dataclass
class TraceCheck:
    name: str
    same_flow: bool
    events: tuple[int, int]
    divergence: str | None = None
    same_indices: bool | None = None
    index_records: tuple[int, int] | None = None
    index_divergence: str | None = None
    index_error: str | None = None
    pairs: int = 1
    opcodes: bool = False
    details: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Identical control flow (the index trace is reported, not required, see ``strict``)."""
        return self.same_flow

    @property
    def strict_ok(self) -> bool:
        return self.same_flow and self.same_indices is True

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("name", "same_flow", "events", "divergence",
                                              "same_indices", "index_records", "index_divergence",
                                              "index_error", "pairs", "opcodes")}

    def summary(self) -> str:
        flow = "identical control flow" if self.same_flow else f"CONTROL FLOW DIFFERS: {self.divergence}"
        if self.index_error:
            idx = f"index trace not available ({self.index_error})"
        elif self.same_indices is None:
            idx = "index trace not recorded"
        elif self.same_indices:
            idx = f"identical array indices ({self.index_records[0]} subscripts)"
        else:
            idx = f"ARRAY INDICES DIFFER: {self.index_divergence}"
        unit = "opcodes" if self.opcodes else "lines"
        return f"{self.name}: {flow} ({self.events[0]} {unit}, {self.pairs} secret pair(s)); {idx}"


def _first_difference(a: Sequence, b: Sequence) -> int | None:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return None if len(a) == len(b) else n


def _first_step(block: int, a: Record, b: Record) -> int:
    """The first different step of two records that keep block ``block`` (where they part)."""
    return block * BLOCK + (_first_difference(a.kept, b.kept) or 0)


def compare(fn: Callable, args_a: Sequence, args_b: Sequence, name: str | None = None,
            opcodes: bool = False, indices: bool = True, progress: Callable[[int], Any] | None = None) -> TraceCheck:
    """Trace ``fn``'s twin on two argument tuples and compare flow (and index values);
    ``progress(n)`` hears of every n steps traced."""
    name = name or getattr(fn, "__name__", "kernel")
    ta, tb = trace_call(fn, args_a, opcodes, progress=progress), trace_call(fn, args_b, opcodes, progress=progress)
    check = TraceCheck(name, True, (ta.events.count, tb.events.count), opcodes=opcodes)
    # where two runs part, both run again keeping that block (the twins are deterministic)
    block = _first_different_block(ta.events, tb.events)
    if block is not None:
        ta, tb = trace_call(fn, args_a, opcodes, block), trace_call(fn, args_b, opcodes, block)
        step = _first_step(block, ta.events, tb.events)

        def event(t: Trace) -> str:
            kept, at = t.events.kept, step % BLOCK
            return t.tracer.describe(kept[at]) if at < len(kept) else "(end of trace)"
        check.same_flow = False
        check.divergence = f"step {step}: secret A -> {event(ta)}; secret B -> {event(tb)}"
    if indices:
        try:
            la, lb = index_call(fn, args_a, progress=progress), index_call(fn, args_b, progress=progress)
        except Exception as exc:  # the proxy is best effort; say so instead of failing the flow check
            check.index_error = f"{type(exc).__name__}: {exc}"
            return check
        check.index_records = (la.records.count, lb.records.count)
        block = _first_different_block(la.records, lb.records)
        check.same_indices = block is None
        if block is not None:
            la, lb = index_call(fn, args_a, block), index_call(fn, args_b, block)
            j = _first_step(block, la.records, lb.records)

            def where(log: IndexLog) -> str:
                kept, at = log.records.kept, j % BLOCK
                if at >= len(kept):
                    return "(no more subscripts)"
                label, idx, op = kept[at]
                file, line = log.records.notes[at]
                return f"{op} {label}{list(idx)} at line {line}: {linecache.getline(file, line).strip()}"
            check.index_divergence = f"subscript {j}: secret A -> {where(la)}; secret B -> {where(lb)}"
    return check


def secret_pair(target: Target, params, rng: np.random.Generator,
                first_fixed: bool = False) -> tuple[tuple, tuple]:
    """Two argument tuples with identical public arguments and independently drawn secrets; with
    ``first_fixed`` the first draws from the target's fixed class (zero words, rank-deficient
    systems and the like), the second from its random class."""
    if target.trace_inputs is not None:
        return target.trace_inputs(params, rng)
    a = target.make_inputs(params, rng, first_fixed)
    donor = target.make_inputs(params, rng, False)
    secret = set(target.secret_positions())
    b = tuple(donor[i] if i in secret else copy.deepcopy(a[i]) for i in range(len(a)))
    return a, b


def check_target(target: Target, alg: str | None = None, pairs: int = 2, seed: int = 0,
                 opcodes: bool = False, indices: bool = True, params=None,
                 progress: Callable[[int], Any] | None = None) -> TraceCheck:
    """The trace check of a registered target over ``pairs`` secret pairs (the first pairs the
    fixed class with the random class, the others two random-class draws); the first failing
    pair is reported. ``params`` overrides the parameter object (smaller public sizes)."""
    if params is None:
        _, params = target.resolve_params(alg)
    rng = np.random.default_rng(seed)
    fn = target.twin if target.twin is not None else target.func
    worst = None
    for p in range(pairs):
        a, b = secret_pair(target, params, rng, first_fixed=(p == 0))
        c = compare(fn, a, b, target.name, opcodes=opcodes, indices=indices, progress=progress)
        c.pairs = p + 1
        if not c.ok:
            return c
        if worst is None or (worst.same_indices is not False and c.same_indices is False):
            worst = c
    worst.pairs = pairs
    return worst
