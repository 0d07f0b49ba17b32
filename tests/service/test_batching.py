"""The batcher's order of batches and the one-write transport, without a server."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

from pqforge.service.batcher import Batcher
from pqforge.service.protocol import OneWriteTransport


def test_requests_that_come_while_a_batch_runs_go_as_the_next_batch():
    release = threading.Event()
    sizes = []

    def run(payloads):
        sizes.append(len(payloads))
        release.wait(30)            # the first batch runs until the test lets it end
        return [p * 2 for p in payloads]

    async def scenario():
        with ThreadPoolExecutor(2) as executor:
            batcher = Batcher(executor, max_batch=64, max_wait_ms=1.0, max_queue=1000)
            first = batcher.submit(("sign", "k"), 0, run)
            while not sizes:
                await asyncio.sleep(0.01)
            later = [batcher.submit(("sign", "k"), i, run) for i in range(1, 11)]
            await asyncio.sleep(0.1)          # far past max_wait: still no second batch beside the first
            assert sizes == [1]
            release.set()
            results = await asyncio.gather(first, *later)
            assert results == [i * 2 for i in range(11)]        # each request its own answer
            assert sizes == [1, 10]
            await batcher.drain()
            assert batcher.depth() == 0

    asyncio.run(scenario())


def test_the_next_batch_is_taken_before_the_answers_of_the_last_go_out():
    """Writing the answers of a batch keeps the event loop busy; the worker has taken the next
    batch by then, and computes it without waiting for the event loop."""
    release = threading.Event()
    sizes = []

    def run(payloads):
        sizes.append(len(payloads))
        release.wait(30)
        return payloads

    async def scenario():
        with ThreadPoolExecutor(2) as executor:
            batcher = Batcher(executor, max_batch=64, max_wait_ms=1.0, max_queue=1000)
            first = batcher.submit(("sign", "k"), 0, run)
            while not sizes:
                await asyncio.sleep(0.01)
            later = [batcher.submit(("sign", "k"), i, run) for i in range(1, 4)]
            waiting_at_first_answer = []
            first.add_done_callback(lambda _: waiting_at_first_answer.append(batcher.depth()))
            release.set()
            assert await asyncio.gather(first, *later) == [0, 1, 2, 3]
            assert waiting_at_first_answer == [0]      # the three later ones were the next batch already
            assert sizes == [1, 3]
            await batcher.drain()

    asyncio.run(scenario())


def test_queues_take_turns_for_the_workers():
    """A worker whose queue still has requests hands its thread to a queue waiting for one."""
    order = []
    release = threading.Event()

    def run_a(payloads):
        order.append(("a", payloads))
        release.wait(30)
        return payloads

    def run_b(payloads):
        order.append(("b", payloads))
        return payloads

    async def scenario():
        with ThreadPoolExecutor(1) as executor:
            batcher = Batcher(executor, max_batch=64, max_wait_ms=0.0, max_queue=1000)
            first = batcher.submit(("sign", "a"), 1, run_a)
            while not order:
                await asyncio.sleep(0.01)
            second = batcher.submit(("sign", "a"), 2, run_a)
            other = batcher.submit(("sign", "b"), 3, run_b)
            await asyncio.sleep(0.05)                 # b's queue waits for the one thread
            release.set()
            assert await asyncio.gather(first, second, other) == [1, 2, 3]
            assert order == [("a", [1]), ("b", [3]), ("a", [2])]

    asyncio.run(scenario())


def test_a_failed_batch_fails_its_requests_only():
    def run(payloads):
        if 0 in payloads:
            raise ValueError("a batch that fails")
        return payloads

    async def scenario():
        with ThreadPoolExecutor(2) as executor:
            batcher = Batcher(executor, max_batch=64, max_wait_ms=0.0, max_queue=1000)
            failing = batcher.submit(("sign", "k"), 0, run)
            try:
                await failing
            except ValueError as exc:
                assert str(exc) == "a batch that fails"
            else:
                raise AssertionError("the failure did not reach the request")
            assert await batcher.submit(("sign", "k"), 5, run) == 5

    asyncio.run(scenario())


class _Recorder:
    def __init__(self):
        self.writes, self.closed = [], False

    def write(self, data):
        assert not self.closed
        self.writes.append(bytes(data))

    def is_closing(self):
        return self.closed

    def close(self):
        self.closed = True

    def get_write_buffer_size(self):
        return 0

    def get_extra_info(self, name):
        return f"info {name}"


def test_a_response_leaves_in_one_write_and_before_the_close():
    async def scenario():
        inner = _Recorder()
        transport = OneWriteTransport(inner, asyncio.get_running_loop())
        transport.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n")
        transport.write(b"{}")
        assert inner.writes == [] and transport.get_write_buffer_size() == 40
        await asyncio.sleep(0)
        assert inner.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"]
        transport.write(b"last")
        transport.close()                  # what was written before the close still leaves
        assert inner.writes[-1] == b"last" and inner.closed
        assert transport.get_extra_info("peername") == "info peername"   # the rest goes through

    asyncio.run(scenario())


def test_batch_calls_running_at_once_divide_the_cores():
    from pqforge.service.core import CoreShare

    share = CoreShare(cores=4, fixed=None)
    with share.threads() as alone:
        assert alone == 4
        with share.threads() as second:
            assert second == 2
            with share.threads() as third, share.threads() as fourth, share.threads() as fifth:
                assert (third, fourth, fifth) == (1, 1, 1)     # never fewer than one
    assert share.running == 0
    with share.threads() as again:
        assert again == 4                                   # the calls that ended gave their cores back
    try:
        with share.threads():
            raise ValueError("a failed batch call")
    except ValueError:
        pass
    assert share.running == 0

    fixed = CoreShare(cores=4, fixed=3)      # compute_threads in the settings: that count, always
    with fixed.threads() as a, fixed.threads() as b:
        assert (a, b) == (3, 3)


def test_with_no_wait_the_requests_of_one_pass_of_the_event_loop_go_as_one_batch():
    """max_wait_ms 0 (the default): a queue is flushed once the event loop has taken in what came
    together, and a lone request waits for no timer: its batch is handed to the executor within
    a few passes of the loop, with no time for a timer to run out."""
    class Counting(ThreadPoolExecutor):
        submitted = 0

        def submit(self, *args, **kwargs):
            self.submitted += 1
            return super().submit(*args, **kwargs)

    sizes = []

    def run(payloads):
        sizes.append(len(payloads))
        return payloads

    async def passes(count: int) -> None:
        for _ in range(count):
            await asyncio.sleep(0)

    async def scenario():
        with Counting(2) as executor:
            batcher = Batcher(executor, max_batch=64, max_wait_ms=0.0, max_queue=1000)
            together = [batcher.submit(("sign", "k"), i, run) for i in range(5)]     # one pass
            await passes(5)
            assert executor.submitted == 1
            assert await asyncio.gather(*together) == list(range(5))
            assert sizes == [5]
            while batcher.depth() or batcher._queues:    # its worker has let the empty queue go
                await asyncio.sleep(0.001)
            lone = batcher.submit(("sign", "k"), 9, run)
            await passes(5)
            assert executor.submitted == 2
            assert await lone == 9
            assert sizes == [5, 1]

        with Counting(2) as executor:         # the same with a wait: nothing goes before the timer
            batcher = Batcher(executor, max_batch=64, max_wait_ms=10_000.0, max_queue=1000)
            waiting = batcher.submit(("sign", "k"), 1, run)
            await passes(5)
            assert executor.submitted == 0
            await batcher.drain()
            assert await waiting == 1

    asyncio.run(scenario())
