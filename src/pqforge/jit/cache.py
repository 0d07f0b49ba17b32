"""Where numba keeps the compiled kernels, and the one-line notice before a first compile.

Chosen when ``pqforge`` is imported, before any kernel module is decorated (and before numba
reads its configuration, when numba is not imported yet), without creating it:

1. ``NUMBA_CACHE_DIR``, when set, wins (not writable: as 4.);
2. else beside the sources (numba's default), when the package directory is writable;
3. else the user's cache directory (``platformdirs.user_cache_dir("pqforge")``, on Linux
   ``$XDG_CACHE_HOME/pqforge`` or ``~/.cache/pqforge``), for read-only installations;
4. else nowhere: every kernel is compiled in every process (``JIT_CACHE`` false), with one
   warning.

Compiling takes seconds, so the first operation of each kind (algorithm, path) announces it on
stderr unless a marker in the cache directory says that this version of the kernels has
already been compiled there, or numba's cache already holds every kernel listed for the path
(compiled by another process's helper, which writes no marker). The marker is written after the
operation succeeded. Before a first compile, machine code built ahead of time is installed
into the cache where a bundle fits this process (``pqforge.jit.prebuilt``); it writes the
markers of the operations it covers.
"""

from __future__ import annotations

import functools
import os
import platform
import re
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, TypeVar, cast

from . import PACKAGE_DIR


def _writable(path: Path) -> bool:
    """Whether ``path`` is a directory this process can write in, or can be made one: decided on
    the nearest directory that exists (``path`` or one above it) by an anonymous temporary file,
    so that nothing is left behind. The folders are made later, by numba when a scheme's kernel
    modules are imported with caching on, and by ``mark_compiled`` after a compile."""
    existing = path.absolute()
    while not os.path.exists(existing) and existing.parent != existing:
        existing = existing.parent
    try:
        tempfile.TemporaryFile(dir=existing).close()
        return True
    except OSError:
        return False


def _choose() -> tuple[Path | None, str]:
    """(directory of the cache, or None; how it was chosen)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        chosen = Path(os.environ["NUMBA_CACHE_DIR"])
        return (chosen, "NUMBA_CACHE_DIR") if _writable(chosen) else (None, "none")
    if _writable(PACKAGE_DIR / "__pycache__"):
        return PACKAGE_DIR / "__pycache__", "package"
    import platformdirs
    user = Path(platformdirs.user_cache_dir("pqforge"))
    if _writable(user):
        return user, "user"
    return None, "none"


def _configure() -> tuple[Path | None, str]:
    directory, source = _choose()
    if source == "user":
        os.environ["NUMBA_CACHE_DIR"] = str(directory)
        if "numba" in sys.modules:      # imported before pqforge: its configuration is read
            sys.modules["numba"].config.CACHE_DIR = str(directory)
    elif source == "none":
        where = ("NUMBA_CACHE_DIR is not writable" if os.environ.get("NUMBA_CACHE_DIR") else
                 "neither the package directory nor the user's cache directory is writable")
        warnings.warn(f"pqforge: no writable cache directory ({where}); kernels are compiled again in "
                      "every process", RuntimeWarning, stacklevel=3)
    return directory, source


CACHE_DIR, CACHE_SOURCE = _configure()
JIT_CACHE = CACHE_DIR is not None
"""The ``cache=`` argument of every ``numba.njit`` in pqforge."""


# -- the notice before a first compile ------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _kernels_stamp() -> str:
    """Identifies the compiled code: pqforge's sources and numba's version."""
    import numba
    newest = max(p.stat().st_mtime_ns for p in PACKAGE_DIR.rglob("*.py"))
    return f"numba {numba.__version__}, sources {newest}\n"


def _marker(key: str) -> Path | None:
    return None if CACHE_DIR is None else CACHE_DIR / "pqforge-compiled" / re.sub(r"[^A-Za-z0-9]+", "-", key)


def is_compiled(key: str) -> bool:
    """Whether the kernels of ``key`` (e.g. "mayo-sign") are in the cache, as far as its marker says."""
    marker = _marker(key)
    try:
        return marker is not None and marker.read_text() == _kernels_stamp()
    except OSError:
        return False


def mark_compiled(key: str) -> None:
    marker = _marker(key)
    if marker is None:
        return
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(_kernels_stamp())
    except OSError:     # the cache works without markers; only the notice comes again
        pass


def compiled(key: str) -> bool:
    """Whether the kernels of ``key`` were compiled (or loaded) in this process, or are in the cache."""
    return key in _seen or is_compiled(key)


_seen: set[str] = set()
_lock = threading.RLock()     # reentrant: a first call may make the first call of another path
NOTICES = True
"""Whether a first compile prints its notice (``pqforge precompile`` shows a progress bar instead)."""

PACE_FROM = 2.0
"""Announced seconds from which a first compile's duration tells this machine's pace."""
_pace: list[float] = []
"""The first such compile's duration over its estimate, in this process: its helpers start with
it at the earliest, so no earlier helper has done part of its work, and it measures the machine."""
PACE_BAND = (0.25, 4.0)
"""A first compile whose duration over its estimate falls outside this band measured something
else: a compile that helpers of an earlier command had mostly done already, or a machine busy
with other work. It sets no pace."""
_remembered: list[float | None] = []
"""The pace that an earlier process measured on this machine (read once, from the cache)."""


def paced(seconds: float) -> float:
    """``seconds`` (an estimate for an idle 2-core x86-64 machine) scaled by this machine's pace,
    held within 0.5 .. 2: that of this process's first compile, or before it, the one an earlier
    process measured here (a command after ``pqforge keygen`` announces at the pace its
    compile showed); then by how busy the machine is now (``_load``). A fast machine's notices
    announce less, and a slow or busy one's more."""
    pace = _pace[0] if _pace else _remembered_pace()
    return (seconds * min(2.0, max(0.5, pace)) if pace else seconds) * _load()


def _load() -> float:
    """How much longer than on an idle machine a compile takes now: the processes of the last
    minute's load average, plus this one, per core, at least 1 (1 where no load average is
    known). Two busy processes on two cores make it 1.5 to 2, as a compile there took."""
    try:
        load = os.getloadavg()[0]
    except (OSError, AttributeError):
        return 1.0
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        cores = os.cpu_count() or 1
    return max(1.0, (load + 1) / cores)


def _pace_record() -> Path | None:
    return None if CACHE_DIR is None else CACHE_DIR / "pqforge-compile-pace"


def _machine() -> str:
    """The machine a pace was measured on: its architecture, CPU count and model."""
    from ..bench import cpu_name
    return f"{platform.machine()}, {os.cpu_count()} CPUs, {cpu_name()}"


def _remembered_pace() -> float | None:
    if not _remembered:
        pace = None
        record = _pace_record()
        try:
            machine, value = record.read_text().splitlines() if record is not None else ("", "0")
            pace = float(value) if machine == _machine() else None
        except (OSError, ValueError):
            pass
        _remembered.append(pace if pace and PACE_BAND[0] <= pace <= PACE_BAND[1] else None)
    return _remembered[0]


def _remember_pace(pace: float) -> None:
    record = _pace_record()
    if record is None:
        return
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text(f"{_machine()}\n{pace:.3f}\n")
    except OSError:     # the notices only announce at the estimates' pace again
        pass


Operation = TypeVar("Operation", bound=Callable[..., Any])


NOTICE_LOG: Any = None
"""Where notices go instead of stderr: a ``logging.Logger`` (``pqforge serve``, whose log lines
are JSON objects, sets its own)."""


def _say(line: str) -> None:
    """``line`` on stderr; above the progress bars, when tqdm has some on screen (``pqforge kat``,
    the ``ct`` commands), so that the line does not run into a bar. With ``NOTICE_LOG``, a log
    record there instead."""
    if NOTICE_LOG is not None:
        NOTICE_LOG.info("%s", line.removeprefix("pqforge: "))
        return
    tqdm = getattr(sys.modules.get("tqdm"), "tqdm", None)
    if getattr(tqdm, "_instances", None):
        tqdm.write(line, file=sys.stderr)
    else:
        print(line, file=sys.stderr, flush=True)


def _will_compile(prefetch: Callable[[Any], None] | None, params: Any) -> bool:
    """For a first use without a marker: whether anything will really be compiled, asked of the
    kernels that ``prefetch(params)`` lists (``pqforge.jit.units.will_compile``); True when it
    lists none, or there is no cache. A marker is missing where another process's helper filled
    the cache (``pqforge sign`` compiles verification's kernels in one; ``pqforge verify`` then
    loads them and must not announce a compile)."""
    units = sys.modules.get("pqforge.jit.units")   # loaded by every module with a prefetch hook;
    if prefetch is None or not JIT_CACHE or units is None:     # no import here: units imports this one
        return True
    try:
        return units.will_compile(prefetch, params) is not False
    except Exception:       # asking must never cost the operation: the notice, as before
        return True


def compiling(path: str, seconds: float | Callable[[Any], float], kernels: Callable[[Any], str],
              prefetch: Callable[[Any], None] | None = None) -> Callable[[Operation], Operation]:
    """Decorator for an operation ``fn(params, ...)`` whose first call in a process may compile
    the kernels of ``path``: that call prints "pqforge: compiling MAYO-2 sign kernels for this
    CPU, once, about N s" (N: ``seconds``, or ``seconds(params)``, at this machine's pace:
    ``paced``) on stderr unless the marker ``kernels(params)`` says the cache holds
    them, or numba's cache holds every kernel ``prefetch`` lists for it (``_will_compile``),
    and writes that marker when it returns. The marker names what was compiled: kernels
    shared by every parameter set of a scheme have one marker, kernels specialised per size one
    each. With the notice, ``prefetch(params)`` (if given) may start compiling, elsewhere, what
    the next operations will need (``pqforge.jit.units.prefetch``). Later calls pay one dictionary
    lookup."""
    def wrap(fn: Operation) -> Operation:
        ready: dict[int, Any] = {}      # id(params) -> params, once its kernels are in this process

        @functools.wraps(fn)
        def call(params: Any, *args: Any, **kwargs: Any) -> Any:
            if ready.get(id(params)) is params:     # (the marker's string costs more than the lookup)
                return fn(params, *args, **kwargs)
            key = kernels(params)
            if key in _seen:
                ready[id(params)] = params
                return fn(params, *args, **kwargs)
            with _lock:     # one notice, and one compile, when threads start together
                if key not in _seen:
                    estimate, load = 0.0, 1.0
                    first = not is_compiled(key)
                    unfit = None
                    if first and CACHE_DIR is not None:     # machine code built ahead of time, if it fits
                        from . import prebuilt
                        first = prebuilt.install_once(CACHE_DIR, mark_compiled) is None or not is_compiled(key)
                        unfit = prebuilt.not_used()
                    if first and _will_compile(prefetch, params):
                        once = "once" if JIT_CACHE else "uncached"
                        estimate = seconds(params) if callable(seconds) else seconds
                        load = _load()
                        if NOTICES:
                            _say(f"pqforge: compiling {params.name} {path} kernels for this CPU, {once}, "
                                 f"about {max(1, round(paced(estimate)))} s" + (f" ({unfit})" if unfit else ""))
                        if prefetch is not None:
                            prefetch(params)
                    start = time.perf_counter()
                    result = fn(params, *args, **kwargs)
                    # the machine's pace, the load of the moment left out (``paced`` adds it)
                    pace = (time.perf_counter() - start) / (estimate * load) if estimate >= PACE_FROM else 0.0
                    if not _pace and PACE_BAND[0] <= pace <= PACE_BAND[1]:
                        _pace.append(pace)
                        if NOTICES:     # (``precompile`` compiles everything at once: not a pace)
                            _remember_pace(pace)
                    mark_compiled(key)
                    _seen.add(key)
                    return result
            return fn(params, *args, **kwargs)
        return cast(Operation, call)
    return wrap
