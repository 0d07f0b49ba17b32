"""Dynamic batching: single-message requests for the same (key, operation) wait in a bounded
queue, which is flushed into one batch call when it holds ``max_batch`` requests or its oldest
request has waited ``max_wait_ms``. The batch runs in a worker thread (the compiled chunks
release the GIL), so the event loop keeps accepting requests meanwhile. While a batch of a queue
is being computed, the requests that arrive meanwhile wait for it to end (or for ``max_batch``
of them) and then go as the next batch: a batch call already uses every core, so a second one
beside it would only split them, and under load the batches grow instead of the calls.
When a batch ends, the next one is handed to the cores before its answers go out: writing
them keeps the event loop busy for a while.

Each request owns a future; the batch function returns one result per item, in order, and the
i-th result goes to the i-th future, so every caller gets exactly its own answer. A request whose
future was cancelled (its client went away) is dropped before the batch is computed.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from concurrent.futures import Executor


class QueueFull(Exception):
    def __init__(self, retry_after_s: float):
        super().__init__(f"queue full; retry after {retry_after_s:.3f} s")
        self.retry_after_s = retry_after_s


class _Queue:
    __slots__ = ("items", "timer", "run", "running")

    def __init__(self, run):
        self.items = deque()      # (payload, future, enqueued_at)
        self.timer = None
        self.run = run            # blocking: list of payloads -> list of results
        self.running = 0          # batches of this queue being computed


class Batcher:
    def __init__(self, executor: Executor, max_batch: int, max_wait_ms: float, max_queue: int, observe=None):
        self.executor = executor
        self.max_batch = max_batch
        self.max_wait = max_wait_ms / 1000.0
        self.max_queue = max_queue
        self.observe = observe    # observe(operation, batch size, queue depth after the flush)
        self._queues: dict[tuple, _Queue] = {}
        self._running: set[asyncio.Task] = set()
        self._batch_seconds = 0.005   # running estimate of one batch's time, for Retry-After

    def depth(self) -> int:
        return sum(len(q.items) for q in self._queues.values())

    def submit(self, key: tuple, payload, run) -> asyncio.Future:
        """Queue ``payload`` under ``key`` (whose first element names the operation); ``run`` is the
        blocking batch function for that key. Raises QueueFull when the queue is at its bound."""
        queue = self._queues.get(key)
        if queue is None:
            queue = self._queues[key] = _Queue(run)
        if len(queue.items) >= self.max_queue:
            batches_ahead = len(queue.items) / self.max_batch + len(self._running)
            raise QueueFull(max(0.001, batches_ahead * self._batch_seconds))
        future = asyncio.get_running_loop().create_future()
        queue.items.append((payload, future, time.monotonic()))
        if len(queue.items) >= self.max_batch:
            self._flush(key, queue)
        elif queue.timer is None and not queue.running:     # else the running batch's end flushes
            queue.timer = asyncio.get_running_loop().call_later(self.max_wait, self._flush, key, queue)
        return future

    def _flush(self, key, queue: _Queue, everything: bool = False) -> None:
        if queue.timer is not None:
            queue.timer.cancel()
            queue.timer = None
        loop = asyncio.get_running_loop()
        while queue.items:
            batch = []
            while queue.items and len(batch) < self.max_batch:
                payload, future, _ = queue.items.popleft()
                if not future.done():          # cancelled: the client went away
                    batch.append((payload, future))
            if batch:
                queue.running += 1
                task = loop.create_task(self._run(key, queue, batch))
                self._running.add(task)
                task.add_done_callback(self._running.discard)
            if len(queue.items) < self.max_batch and not everything:
                break
        if queue.running:
            return        # what is left goes when the running batch ends
        if queue.items:   # fewer than max_batch left: flush when the oldest has waited max_wait
            waited = time.monotonic() - queue.items[0][2]
            queue.timer = loop.call_later(max(0.0, self.max_wait - waited), self._flush, key, queue)
        else:
            self._queues.pop(key, None)

    async def _run(self, key: tuple, queue: _Queue, batch) -> None:
        live = [(p, f) for p, f in batch if not f.done()]
        outcome: list | BaseException = []
        try:
            if live:
                outcome = await self._compute(key[0], queue.run, [p for p, _ in live])
        except BaseException as exc:  # every waiter learns of the failure; none hangs
            outcome = exc
        finally:
            queue.running -= 1
            if not queue.running:   # the requests that came meanwhile are the next batch
                if queue.items:
                    self._flush(key, queue)
                elif self._queues.get(key) is queue:
                    del self._queues[key]
        # The answers go out after the next batch has started: writing them keeps the event loop
        # busy for a while, and the cores would wait for it.
        if isinstance(outcome, BaseException):
            for _, future in live:
                if not future.done():
                    future.set_exception(outcome)
            if not isinstance(outcome, Exception):
                raise outcome
            return
        for (_, future), result in zip(live, outcome, strict=True):
            if not future.done():
                future.set_result(result)

    async def _compute(self, operation: str, run, payloads: list) -> list:
        if self.observe:
            self.observe(operation, len(payloads), self.depth())
        start = time.monotonic()
        try:
            return await asyncio.get_running_loop().run_in_executor(self.executor, run, payloads)
        finally:
            self._batch_seconds = 0.8 * self._batch_seconds + 0.2 * (time.monotonic() - start)

    async def drain(self) -> None:
        """Flush every queue now and wait for all batches (graceful shutdown)."""
        for key, queue in list(self._queues.items()):
            self._flush(key, queue, everything=True)
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)
