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
into the cache while this one goes on. ``prefetch`` starts helpers over a list of entries,
``obtain`` makes entries ready here; both go through their list in order and take only what no
other process has claimed (a marker file in the cache directory, created atomically, naming
the process), so this process and its helpers share the work like one queue, and a helper left
running by an earlier process (a ``pqforge keygen`` that has returned) is waited for, never
doubled. Units and ``Ahead`` entries (a kernel that Python code calls, with the argument types
of that call) are handled alike. Entries for later operations compile at low priority, on
idle cores only. A thread per helper reaps it as it ends (``start_helper``); a command's
helpers may outlive it, an owning process's (``pqforge serve``: ``own_helpers``) may not.
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

from . import cache as compile_cache
from .cache import JIT_CACHE


def _declaring_module() -> str:
    """The module whose code creates the ``Unit`` or ``Ahead`` calling this: where a helper looks
    for the entry (``compile_in_worker``), which need not be the kernel's own module."""
    return sys._getframe(2).f_globals["__name__"]


class Unit:
    """``kernel`` (an ``njit`` function) compiled on its own for ``signature`` (argument types
    exactly as callers pass them; a void, boolean or integer result)."""

    def __init__(self, kernel: Any, signature: Any):
        self.kernel = kernel
        self.signature = signature
        self._cfunc: Any = None
        self._address: int | None = None
        self.home = _declaring_module()
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

    def _in_index(self) -> bool:
        from numba.core.caching import FunctionCache
        return _indexed(FunctionCache(self._cfunc_source()), self.signature)

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
        # declared at module level (alone, or in tuples and dicts of them), where a worker finds it
        self.kernel = kernel
        self.args = tuple(args)
        self.home = _declaring_module()
        self.key = f"{kernel.py_func.__qualname__}{self.args}"

    def _compile_here(self) -> None:
        self.kernel.compile(self.args)

    def _ready(self) -> bool:
        return self.args in self.kernel.overloads

    def _in_cache(self) -> bool:
        # the key numba's dispatcher uses for a call: the tuple of argument types
        from numba.core.registry import cpu_target
        return self.kernel._cache.load_overload(self.args, cpu_target.target_context) is not None

    def _in_index(self) -> bool:
        return _indexed(self.kernel._cache, self.args)


def _indexed(cache: Any, signature: Any) -> bool:
    """Whether numba's cache ``cache`` lists an entry for ``signature`` whose data file exists:
    what ``load_overload`` would find, without loading it (reading the index only, so that
    asking costs milliseconds, not the load itself)."""
    from numba.core.registry import cpu_target
    context = cpu_target.target_context
    try:
        context.refresh()
        key = cache._index_key(signature, context.codegen())
        name = cache._cache_file._load_index().get(key)
        return name is not None and os.path.exists(cache._cache_file._data_path(name))
    except Exception:         # no cache (NullCache), an unreadable index: as if absent
        return False


Compilable = Union[Unit, Ahead]


def _declared(module: Any) -> list:
    """The units and ``Ahead`` entries a module holds: alone, or anywhere in tuples and dicts of
    them (a registry per kernel set and vector size, say)."""
    out = []
    stack = list(vars(module).values())
    while stack:
        value = stack.pop()
        if isinstance(value, (Unit, Ahead)):
            out.append(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, tuple):
            stack.extend(value)
    return out


def compile_in_worker(specs: Sequence[str]) -> None:
    """What a helper runs: compile the entries named "module:key" in order, each unless the
    cache has it or another process has claimed it; after ``LATER`` at low priority."""
    import importlib
    die_with_parent()
    for spec in specs:
        if spec == LATER:
            os.nice(10)
            continue
        home, key = spec.split(":", 1)
        for item in _declared(importlib.import_module(home)):
            if item.key == key:
                if not item._in_cache() and _claim(item):
                    _compile_claimed(item)
                break


# -- entries being compiled: a marker file each, holding the pid of the process compiling it ------

LATER = "--later"
"""In a helper's list: the entries after it are for later operations (low priority)."""


def _spec(item: Compilable) -> str:
    return f"{item.home}:{item.key}"


def _in_progress_marker(spec: str) -> Path | None:
    if compile_cache.CACHE_DIR is None:
        return None
    name = hashlib.sha256(spec.encode()).hexdigest()[:32]      # keys hold types: any characters
    return compile_cache.CACHE_DIR / "pqforge-compiling" / name


def _claim(item: Compilable) -> bool:
    """Mark ``item`` as compiled by this process, unless a live process has done so (False).
    Without a marker (nothing writable) this process compiles it: at worst twice, only slower."""
    marker = _in_progress_marker(_spec(item))
    if marker is None:
        return True
    for _ in range(2):
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            own = marker.with_name(f"{marker.name}.{os.getpid()}")
            own.write_text(f"{os.getpid()}\n")
        except OSError:
            return True
        try:
            os.link(own, marker)        # atomic: one process gets the marker, with its pid in it
            return True
        except FileExistsError:
            if _claimed_elsewhere(item):
                return False
            _remove(marker)             # stale: its process is gone
        except OSError:
            return True
        finally:
            _remove(own)
    return True


def _remove(path: Path) -> None:
    try:
        path.unlink()
    except OSError:
        pass


def _unmark(spec: str) -> None:
    marker = _in_progress_marker(spec)
    try:
        if marker is not None and marker.read_text().strip() == str(os.getpid()):
            marker.unlink()
    except (OSError, ValueError):
        pass


_helpers: dict[int, subprocess.Popen] = {}      # this process's helpers, by pid
_owning = False     # set by ``own_helpers``

HELPER_OF = "PQFORGE_HELPER_OF"
"""In the environment of a helper of an owning process: that process's pid (``die_with_parent``)."""


def own_helpers(owning: bool = True) -> bool:
    """Helpers started from now on end when this process ends, even when it is killed: their
    environment names this process, and each asks Linux for a signal when it does
    (``die_with_parent``). ``pqforge serve`` owns its helpers while it serves; a command's
    helpers go on after it has returned, filling the cache for the next command. Returns the
    setting it replaces (``own_helpers(False)`` undoes it)."""
    global _owning
    previous, _owning = _owning, owning
    return previous


def die_with_parent() -> None:
    """In a helper of an owning process (``HELPER_OF``): have Linux send this process SIGKILL
    when the thread that started it ends (it waits for this process: when its process ends,
    killed or not), and end at once where that process has already gone. This process then owns
    its own helpers too. Elsewhere than Linux nothing watches: the owner's ``stop_helpers`` does."""
    parent = os.environ.pop(HELPER_OF, None)
    if parent is None:
        return
    own_helpers()
    if sys.platform.startswith("linux"):
        import ctypes
        import signal
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)    # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass
    if str(os.getppid()) != parent:     # the owner ended before the signal was asked for
        os._exit(1)


def start_helper(args: Sequence[str], nice: int = 0) -> subprocess.Popen | None:
    """Start this Python with ``args`` as a helper of this process, with pqforge importable as
    here, its output discarded, at ``nice`` (lower priority); None where it cannot start. A thread of its own starts it and waits for it: it is
    reaped the moment it ends, with no polling, and on Linux that thread is the parent
    ``die_with_parent`` watches."""
    if not Path(sys.executable or "").name.lower().startswith(("python", "pypy")):
        return None     # Python embedded in another program (uwsgi, mod_wsgi): no interpreter to start
    argv = [sys.executable, *args]
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)        # pqforge importable as here
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    env.pop(HELPER_OF, None)
    if _owning:
        env[HELPER_OF] = str(os.getpid())
    started: list = []
    ready = threading.Event()

    def run() -> None:
        helper = None
        try:
            helper = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL,
                                      preexec_fn=(lambda: os.nice(nice)) if nice and hasattr(os, "nice") else None)
            _helpers[helper.pid] = helper
        except (OSError, ValueError):
            pass
        finally:
            started.append(helper)
            ready.set()
        if helper is not None:
            helper.wait()
    threading.Thread(target=run, name="pqforge-helper", daemon=True).start()
    ready.wait()
    return started[0]


def _alive(pid: int) -> bool:
    if pid in _helpers:
        return _helpers[pid].poll() is None       # (reaps it when it has ended)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:     # another user's process
        return True
    except OSError:
        return False
    return True


def _claimed_elsewhere(item: Compilable) -> bool:
    """Whether a live process other than this one (a helper of this process or of another) is
    compiling ``item``. A marker whose process is gone, or older than ``WORKER_SECONDS``, is stale."""
    marker = _in_progress_marker(_spec(item))
    if marker is None:
        return False
    try:
        pid = int(marker.read_text().strip())
        fresh = time.time() - marker.stat().st_mtime < WORKER_SECONDS
    except (OSError, ValueError):
        return False
    return fresh and pid != os.getpid() and _alive(pid)


_WORKER = "import sys; from pqforge.jit.units import compile_in_worker; compile_in_worker(sys.argv[1:])"


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux
        return os.cpu_count() or 1


def _start_helper(specs: Sequence[str]) -> None:
    """Start one process that compiles the entries ``specs`` (``compile_in_worker``); nothing when
    none can be started: each then compiles here when it is needed."""
    start_helper(["-c", _WORKER, *specs])


def running_helpers() -> list[int]:
    """The pids of this process's helpers that are still running, in order; those that have
    ended are reaped and forgotten."""
    for pid, helper in list(_helpers.items()):
        if helper.poll() is not None:
            _helpers.pop(pid, None)
    return sorted(_helpers)


STOP_GRACE_SECONDS = 5
"""How long a helper sent SIGTERM has to end before it is killed."""


def stop_helpers(timeout: float = 0.0) -> None:
    """Give this process's helpers ``timeout`` seconds to finish, then end those still running
    (SIGTERM, then SIGKILL after ``STOP_GRACE_SECONDS``; what they have put in the cache stays,
    and an entry cut short is compiled by whoever needs it next) and reap them all: nothing is
    left running, and no ``ResourceWarning`` about a subprocess still running comes at exit
    (test sessions, ``pqforge precompile``)."""
    deadline = time.monotonic() + timeout
    for pid in running_helpers():
        helper = _helpers.get(pid)
        if helper is None:      # (forgotten by another thread meanwhile)
            continue
        try:
            helper.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            helper.terminate()
            try:
                helper.wait(STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                helper.kill()
                helper.wait()
        _helpers.pop(pid, None)


def _missing(items: Sequence[Compilable]) -> list:
    """The entries neither compiled here, nor in the cache, nor being compiled elsewhere."""
    if not JIT_CACHE:
        return []
    return [i for i in items if not i._ready() and not i._in_cache() and not _claimed_elsewhere(i)]


MAX_HELPERS = 4


class _Listing(threading.local):
    """While ``will_compile`` runs a first-use hook in this thread: the entries the hook asks
    ``prefetch`` and ``obtain`` for now (None otherwise: they act)."""
    items: list | None = None


_listing = _Listing()


def will_compile(hook: Any, params: Any) -> bool | None:
    """Whether a first use whose hook ``hook(params)`` (a scheme's ``_prepare(path)``) makes
    entries ready here through ``prefetch`` and ``obtain`` will really compile one: an entry
    neither ready in this process nor in numba's cache (compiled by a helper of an earlier
    process, say), or being compiled by another process (this one then waits for it). The hook
    runs with ``prefetch`` and ``obtain`` only noting their entries (those for now, not
    ``later`` or ``meanwhile``), so nothing starts. None when the hook names none: the path's
    kernels are not listed, and only its marker can tell."""
    _listing.items = []
    try:
        hook(params)
    finally:
        items, _listing.items = _listing.items, None
    if not items:
        return None
    if not JIT_CACHE:
        return True
    return any(not item._ready() and not item._in_index() for item in items)


def _noted(items: Sequence[Compilable]) -> bool:
    """Inside ``will_compile``: note ``items`` (True: do nothing else)."""
    if _listing.items is None:
        return False
    _listing.items.extend(items)
    return True


def prefetch(items: Sequence[Compilable] = (), later: Sequence[Compilable] = ()) -> None:
    """Start compiling, in other processes, those of ``items`` and then of ``later`` (for
    operations after the current one: at low priority) that the cache lacks; returns at once.
    One helper per spare core (cores but this one, at most ``MAX_HELPERS`` helpers of this
    process running, at most one per entry), each going through the same list and taking the
    entries no process has claimed, as ``obtain`` does here: the work spreads over the
    processes without a plan. An earlier prefetch's helpers that still run use up the spare
    cores (they usually have the entries of the later operations on their lists)."""
    if _noted(items):
        return
    running = sum(1 for helper in _helpers.values() if helper.poll() is None)
    spare = min(cores() - 1, MAX_HELPERS) - running
    if spare < 1:
        return
    now, after = _missing(items), _missing(later)
    specs = [_spec(i) for i in now] + ([LATER] + [_spec(i) for i in after] if after else [])
    for _ in range(min(spare, len(now) + len(after))):
        _start_helper(specs)


_lock = threading.RLock()     # threads of a batch may ask at once: one compile, one wait


WORKER_SECONDS = 600
"""How long an entry may stay claimed by a live process; a claim that old is stale."""


POLL_SECONDS = 0.05
"""How often to look whether another process has delivered an entry."""


def obtain(items: Sequence[Compilable], meanwhile: Sequence[Compilable] = ()) -> None:
    """Make every one of ``items`` ready in this process: those no other process is compiling
    are compiled here (or loaded from the cache), in order, claiming each first, so that helpers
    going through the same list take the others; then the rest are waited for and loaded. While
    it waits, this process compiles the entries of ``meanwhile`` (those of the operation that
    usually follows) that no process has claimed, instead of idling."""
    if _noted(items):
        return
    with _lock:
        elsewhere = []
        for item in items:
            if item._ready():
                continue
            if not JIT_CACHE or _claim(item):
                _compile_claimed(item)
            else:
                elsewhere.append(item)
        spare = [m for m in meanwhile if not m._ready()] if elsewhere else []
        for item in elsewhere:
            deadline = time.monotonic() + WORKER_SECONDS
            while _claimed_elsewhere(item) and time.monotonic() < deadline:
                if spare:
                    other = spare.pop(0)
                    if _claim(other):
                        _compile_claimed(other)     # (from the cache, when a helper has delivered it)
                else:
                    time.sleep(POLL_SECONDS)
            item._compile_here()      # from the cache (compiled here if its process failed)


def _compile_claimed(item: Compilable) -> None:
    try:
        item._compile_here()
    finally:
        _unmark(_spec(item))


_known: dict[tuple[Unit, ...], tuple[int, ...]] = {}


def addresses(units: tuple[Unit, ...]) -> tuple[int, ...]:
    """The addresses of ``units`` in this process (``obtain``: when the cache lacks several, they
    compile here and in a helper side by side); remembered once known, as a unit's address stays
    for the life of the process (every signature and verification asks)."""
    known = _known.get(units)
    if known is not None:
        return known
    known = tuple([unit._address for unit in units])
    if None not in known:
        _known[units] = known
        return known
    with _lock:
        if sum(1 for unit in units if not unit._ready()) > 1:
            prefetch(units)         # (looks in the cache itself)
        obtain(units)
        return tuple(unit.address for unit in units)
