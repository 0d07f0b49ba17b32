"""The shared thread pool of batch calls, and how a batch is cut into chunks for it.

Batch work runs as ``fn(lo, hi)`` over chunks of ``range(size)``: compiled, GIL-free loops in
the chunk functions let the pool's threads run on separate cores. One pool serves every call
of the process (it grows when a call asks for more threads than it has).
"""

from __future__ import annotations

import concurrent.futures
import os
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Callable

import numpy as np

from ...errors import InvalidInput, InvalidType

MAX_THREADS = 1024

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def cpu_threads() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_threads(threads: Any) -> int:
    """The thread count of a call: all cores for None, else a positive int up to MAX_THREADS."""
    if threads is None:
        return cpu_threads()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise InvalidType(f"threads must be a positive int or None, not {type(threads).__name__}")
    if not 1 <= threads <= MAX_THREADS:
        raise InvalidInput(f"threads must be between 1 and {MAX_THREADS}, got {threads}")
    return int(threads)


def _executor(threads: int) -> ThreadPoolExecutor:
    """The shared pool, with at least ``threads`` workers (call with ``_lock`` held). A call
    asking for more replaces it by a larger one; work already handed to the old pool still runs
    there, and nothing is handed to it afterwards (submissions happen under the same lock)."""
    global _pool, _pool_size
    if _pool is None or _pool_size < threads:
        if _pool is not None:
            _pool.shutdown(wait=False)
        _pool_size = max(threads, cpu_threads())
        _pool = ThreadPoolExecutor(max_workers=_pool_size, thread_name_prefix="pqforge-batch")
    return _pool


# Elements a chunk should have at least: each chunk pays for its own inputs and compiled call
# (tens of microseconds), a visible part of a chunk of a few signatures.
MIN_CHUNK = 16


def chunks(size: int, threads: int, most: int | None = None) -> list[tuple[int, int]]:
    """Index ranges covering 0..size: one per thread at least, up to four per thread so that
    uneven chunks even out where each still holds ``MIN_CHUNK`` elements; one chunk on one
    thread; none longer than ``most``."""
    if size == 0:
        return []
    count = min(size, threads * 4, max(threads, size // MIN_CHUNK)) if threads > 1 else 1
    count = max(count, -(-size // most) if most else 1)
    bounds = np.linspace(0, size, count + 1).astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def start_chunks(fn: Callable[[int, int], Any], size: int, threads: int, most: int | None = None) -> list[Future[Any]]:
    """Start fn(lo, hi) over chunks of range(size) (at most ``most`` long) on ``threads`` workers
    of the shared pool, each taking the next chunk until none is left or one has failed; the
    futures to hand to ``finish_chunks``. One thread: run here."""
    worker, count = _split(fn, size, threads, most)
    return _pool_workers(worker, count) if worker else []


def finish_chunks(futures: list[Future[Any]]) -> None:
    """Wait for every worker of ``start_chunks``, then raise the first error if one failed (so no
    work of the call is still running when it returns or raises)."""
    concurrent.futures.wait(futures)
    for f in futures:
        f.result()


def run_chunks(fn: Callable[[int, int], Any], size: int, threads: int, most: int | None = None) -> None:
    """fn(lo, hi) over chunks of range(size) on ``threads`` threads (``check_threads``'s count):
    the calling thread is one of them, so a call wakes one thread fewer."""
    worker, count = _split(fn, size, threads, most)
    if worker:
        helpers = _pool_workers(worker, count - 1)
        try:
            worker()
        finally:
            finish_chunks(helpers)


def _split(fn: Callable[[int, int], Any], size: int, threads: int,
           most: int | None) -> tuple[Callable[[], None] | None, int]:
    """(a worker that the threads share, taking the next chunk until none is left or one has
    failed, and how many threads run it); (None, 0) when the work is one chunk or one thread,
    which it has then done here."""
    parts = chunks(size, threads, most)
    if threads == 1 or len(parts) <= 1:
        for lo, hi in parts:
            fn(lo, hi)
        return None, 0
    todo, take, failed = iter(parts), threading.Lock(), threading.Event()

    def worker() -> None:
        while not failed.is_set():
            with take:
                part = next(todo, None)
            if part is None:
                return
            try:
                fn(*part)
            except BaseException:
                failed.set()              # the other workers take no further chunk
                raise
    return worker, min(threads, len(parts))


def _pool_workers(worker: Callable[[], None], count: int) -> list[Future[Any]]:
    with _lock:
        pool = _executor(count)
        return [pool.submit(worker) for _ in range(count)]
