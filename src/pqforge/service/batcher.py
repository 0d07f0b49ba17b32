"""Dynamic batching: single-message requests for the same (key, operation) wait in a bounded
queue, which is flushed into one batch call when it holds ``max_batch`` requests or its oldest
request has waited ``max_wait_ms``.

A queue's batches are computed one after another by one worker thread of the executor (the
compiled chunks release the GIL, so the event loop keeps accepting requests meanwhile): when a
batch ends, the worker takes what came meanwhile (up to ``max_batch``) as the next batch and
starts it at once, and only then hands the answers of the last one to the event loop. The
cores go from one batch to the next without waiting for the event loop, which is busy writing
answers and taking in requests. (Where what came is under half the last batch, the worker
leaves it to the event loop, which starts it once it has taken in what has come since: short
verification batches would otherwise shrink to a few requests each.) A batch call already uses every core, so a second batch of the
same queue beside it would only split them; under load the batches grow instead of the calls.
Queues take turns: a worker whose queue still has requests while another queue waits for a
worker, or after ``TURN_S``, hands its thread over after the batch and queues itself again.

Each request owns a future (or an object that answers like one); the batch function returns one
result per item, in order, and the i-th result goes to the i-th future, so every caller gets
exactly its own answer. A request whose future is done already (its client went away) is dropped
before its batch is computed. Results are set in the event loop's thread.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from concurrent.futures import Executor


# The longest a worker keeps its thread for one queue while the queue has requests: then other
# work handed to the executor (many-message requests, key creation) gets a thread.
TURN_S = 0.05


class QueueFull(Exception):
    def __init__(self, retry_after_s: float):
        super().__init__(f"queue full; retry after {retry_after_s:.3f} s")
        self.retry_after_s = retry_after_s


class _Queue:
    __slots__ = ("key", "items", "timer", "run", "running")

    def __init__(self, key: tuple, run):
        self.key = key
        self.items = deque()      # (payload, future, enqueued_at); appended by the loop, taken by a worker
        self.timer = None         # the pending flush, while no worker has the queue
        self.run = run            # blocking: list of payloads -> list of results
        self.running = False      # a worker has the queue (running or about to)


class Batcher:
    def __init__(self, executor: Executor, max_batch: int, max_wait_ms: float, max_queue: int, observe=None):
        self.executor = executor
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000.0
        self.max_queue = max_queue
        self.observe = observe    # observe(operation, batch size, requests waiting in every queue)
        self._queues: dict[tuple, _Queue] = {}
        self._lock = threading.Lock()   # each queue's items and running flag, between the loop and the workers
        self._waiting = 0               # queues handed to the executor whose worker has not started
        self._batch_seconds = 0.005     # running estimate of one batch's time, for Retry-After

    def depth(self) -> int:
        return sum(len(q.items) for q in list(self._queues.values()))

    def submit(self, key: tuple, payload, run, future=None):
        """Queue ``payload`` under ``key`` (whose first element names the operation); ``run`` is the
        blocking batch function for that key. The result goes to ``future``: a new asyncio future
        when None, else any object with ``done()``, ``set_result`` and ``set_exception`` (the HTTP
        protocol's request, which writes its answer from them). Raises QueueFull when the queue is
        at its bound."""
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = _Queue(key, run)
        if len(queue.items) >= self.max_queue:
            running = sum(q.running for q in list(self._queues.values()))
            batches_ahead = len(queue.items) / self.max_batch + running
            raise QueueFull(max(0.001, batches_ahead * self._batch_seconds))
        if future is None:
            future = asyncio.get_running_loop().create_future()
        with self._lock:
            queue.items.append((payload, future, time.monotonic()))
            if queue.running:     # its worker takes it with the next batch
                return future
        if len(queue.items) >= self.max_batch:
            self._start(queue)
        elif queue.timer is None:
            waited = time.monotonic() - queue.items[0][2]
            queue.timer = asyncio.get_running_loop().call_later(max(0.0, self.max_wait - waited),
                                                                self._start, queue)
        return future

    def _start(self, queue: _Queue) -> None:
        """Hand the queue to a worker of the executor (in the event loop's thread)."""
        if queue.timer is not None:
            queue.timer.cancel()
            queue.timer = None
        with self._lock:
            if queue.running or not queue.items:
                return
            queue.running = True
            self._waiting += 1
        self.executor.submit(self._work, queue, asyncio.get_running_loop())

    def _take(self, queue: _Queue) -> list:
        """The next batch of the queue: up to max_batch requests whose future is not done (under the lock)."""
        batch = []
        while queue.items and len(batch) < self.max_batch:
            payload, future, _ = queue.items.popleft()
            if not future.done():          # its client went away
                batch.append((payload, future))
        return batch

    def _work(self, queue: _Queue, loop) -> None:
        """A worker thread: the queue's batches one after another, until it is empty, another
        queue waits for a worker, or its turn (TURN_S) is over."""
        with self._lock:
            self._waiting -= 1
            batch = self._take(queue)
        turn_ends = time.monotonic() + TURN_S
        try:
            while batch:
                if self.observe:
                    self.observe(queue.key[0], len(batch), self.depth())
                start = time.monotonic()
                try:
                    outcome = queue.run([payload for payload, _ in batch])
                except BaseException as exc:    # every waiter learns of the failure; none hangs
                    outcome = exc
                end = time.monotonic()
                self._batch_seconds = 0.8 * self._batch_seconds + 0.2 * (end - start)
                with self._lock:
                    turn_over = self._waiting > 0 or end > turn_ends or isinstance(outcome, BaseException)
                    # a next batch much smaller than this one would pay a call's overhead for few
                    # requests: the event loop, taking in what has come since, starts it instead
                    few = 2 * len(queue.items) < len(batch)
                    following = [] if turn_over or few else self._take(queue)
                # the next batch is taken before these answers go out, and starts right after
                loop.call_soon_threadsafe(_settle, batch, outcome)
                batch = following
        finally:
            with self._lock:
                queue.running = False
                left = bool(queue.items)
            # its next turn (behind the work handed to the executor meanwhile), or nothing left
            loop.call_soon_threadsafe(self._start if left else self._forget, queue)

    def _forget(self, queue: _Queue) -> None:
        """Drop an idle, empty queue (in the event loop's thread, where queues are made)."""
        if not queue.running and not queue.items and queue.timer is None and self._queues.get(queue.key) is queue:
            del self._queues[queue.key]

    async def drain(self) -> None:
        """Start every queue's batches now and wait for all of them (graceful shutdown)."""
        while True:
            queues = list(self._queues.values())
            for queue in queues:
                if queue.items and not queue.running:
                    self._start(queue)
            if not any(queue.running or queue.items for queue in queues):
                await asyncio.sleep(0)       # the answers posted by the last workers
                return
            await asyncio.sleep(0.005)


def _settle(batch, outcome) -> None:
    """Give each waiting request its result, or every one the batch's failure (in the event loop)."""
    if isinstance(outcome, BaseException):
        for _, future in batch:
            if not future.done():
                future.set_exception(outcome)
        return
    for (_, future), result in zip(batch, outcome, strict=True):
        if not future.done():
            future.set_result(result)
