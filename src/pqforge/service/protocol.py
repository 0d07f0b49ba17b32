"""The service's HTTP/1.1 protocol: uvicorn's (httptools), with two changes.

Each response leaves in one write. An ASGI answer is two messages, its head and its body, and
uvicorn writes each to the socket at once: two system calls and two TCP segments per request,
which cost the server more than everything else uvicorn does for a small request (and wake the
client twice). Here the writes made during one pass of the event loop are joined and leave
together at its end.

The hot path skips ASGI. uvicorn spends about as much per request as a signature costs (a scope
dict, a request-response cycle with its event, an ASGI message per step, a check per header), so
the sign and verify requests that ``FastPath`` answers are handled by the protocol itself, with
their headers and body as the parser gives them. A single request whose token and key are in
memory goes straight to its batch queue, the request object standing for its future (no task,
no coroutine); every other one is a task running ``FastPath.respond``. The answer is written at
once. Pipelining, keep-alive, the graceful shutdown and the access log keep uvicorn's behaviour;
a hang-up takes the request out of its batch (its task is cancelled, or its queue drops it).
Requests with ``Expect: 100-continue``, HTTP/1.0 or an escaped path, and every other route, take
uvicorn's own way to the ASGI app.
"""

from __future__ import annotations

import asyncio
import time

from .batcher import QueueFull
from .middleware import request_headers

try:
    import httptools
    from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
    from uvicorn.protocols.utils import get_client_addr
except ImportError:          # uvicorn without httptools: its own choice of protocol
    HttpToolsProtocol = None


class OneWriteTransport:
    """A transport whose writes are held until the end of the current pass of the event loop and
    then written as one; everything else goes straight to the transport it wraps."""

    __slots__ = ("_transport", "_loop", "_pending")

    def __init__(self, transport, loop):
        self._transport, self._loop, self._pending = transport, loop, []

    def write(self, data) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def writelines(self, lines) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()           # a last answer before "connection: close" still leaves
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._pending)

    def __getattr__(self, name):
        return getattr(self._transport, name)


class _NoEvent:
    """Stands for a request-response cycle's message event, which uvicorn sets on new body data
    and on a hang-up: a hot request is told of both otherwise."""

    @staticmethod
    def set() -> None:
        pass


class HotRequest:
    """uvicorn's request-response cycle, for a request that ``FastPath`` answers: the attributes
    uvicorn's protocol reads and sets on its current cycle, and the body collected up to the limit
    (beyond it, dropped: the answer is 413).

    It is answered once it is the connection's current request and its body has come. A single
    request whose job needs nothing from the store goes to the batcher with the request itself as
    its future: the batch's result is written from ``set_result``, with no task and no coroutine
    per request. Every other request is answered by a task (``task``) running ``FastPath.respond``."""

    __slots__ = ("protocol", "operation", "key_id", "headers", "path", "limit", "keep_alive", "body", "over",
                 "complete", "started", "begun", "answer", "response_complete", "disconnected", "task")
    message_event = _NoEvent

    def __init__(self, protocol, operation, key_id, headers, path, limit, keep_alive):
        self.protocol, self.operation, self.key_id, self.headers, self.path = protocol, operation, key_id, headers, path
        self.limit, self.keep_alive = limit, keep_alive
        self.body = bytearray()
        self.over = self.complete = self.started = self.response_complete = self.disconnected = False
        self.begun = 0.0
        self.answer = self.task = None

    def feed(self, data: bytes) -> None:
        if not self.over:
            self.body += data
            if len(self.body) > self.limit:
                self.over, self.body = True, bytearray()

    def body_or_none(self) -> bytes | None:
        return None if self.over else bytes(self.body)

    async def read_body(self) -> bytes | None:       # (answered only once the body has come)
        return self.body_or_none()

    # --- the future of a job handed to the batcher -----------------------------------------
    def done(self) -> bool:
        """Answered already, or its client has gone: the batcher drops it."""
        return self.response_complete or self.disconnected or self.protocol.transport.is_closing()

    def set_result(self, result) -> None:
        self.protocol.finish(self, 200, self.answer(result))

    def set_exception(self, exc: BaseException) -> None:
        self.protocol.finish(self, *self.protocol.fast_path.error(exc, self.operation, self.key_id))


if HttpToolsProtocol is not None:
    class ServiceProtocol(HttpToolsProtocol):
        """uvicorn's protocol, its writes joined (``OneWriteTransport``) and the hot path answered
        without ASGI (``HotRequest``, ``FastPath.respond``)."""

        def connection_made(self, transport) -> None:
            super().connection_made(OneWriteTransport(transport, self.loop))
            self.fast_path = _fast_path(self.app) if _HOOKS_PRESENT else None

        def on_headers_complete(self) -> None:
            hot = self._hot_request()
            if hot is None:
                return super().on_headers_complete()
            existing, self.cycle = self.cycle, hot
            if existing is None or existing.response_complete:
                self._start_asgi_task(hot, None)
            else:                         # pipelined behind a request still being answered
                self.flow.pause_reading()
                self.pipeline.appendleft((hot, None))

        def _hot_request(self) -> HotRequest | None:
            fast_path = self.fast_path
            if (fast_path is None or self.expect_100_continue or self.limit_concurrency is not None
                    or self.parser.get_http_version() != "1.1" or self.parser.should_upgrade()):
                return None
            method = self.parser.get_method()
            path = httptools.parse_url(self.url).path
            if method != b"POST" or not path.startswith(b"/v1/") or b"%" in path or not path.isascii():
                return None
            path = path.decode("ascii")
            hot = fast_path.answers("POST", path)
            if hot is None:
                return None
            return HotRequest(self, *hot, self.headers, path, fast_path.service.settings.max_body_bytes,
                              self.parser.should_keep_alive())

        def _start_asgi_task(self, cycle, app) -> None:
            if type(cycle) is not HotRequest:
                return super()._start_asgi_task(cycle, app)
            cycle.started = True
            if cycle.complete:
                self._answer_now(cycle)      # else once the body has come (on_message_complete)

        def on_body(self, body: bytes) -> None:
            if type(self.cycle) is HotRequest:
                self.cycle.feed(body)
            else:
                super().on_body(body)

        def on_message_complete(self) -> None:
            cycle = self.cycle
            if type(cycle) is not HotRequest:
                return super().on_message_complete()
            cycle.complete = True
            if cycle.started:
                self._answer_now(cycle)

        def connection_lost(self, exc) -> None:
            cycle = self.cycle
            super().connection_lost(exc)
            if type(cycle) is HotRequest and not cycle.response_complete:
                if cycle.task is not None:
                    cycle.task.cancel()   # the client hung up: its request leaves the batch
                elif cycle.answer is not None:    # in a batch queue, which drops it (``done``)
                    self._gone(cycle)

        def _answer_now(self, cycle: HotRequest) -> None:
            """Hand a single request's job to the batcher, or answer it at once; else start its task."""
            fast_path = self.fast_path
            service = fast_path.service
            cycle.begun = time.perf_counter()
            if cycle.operation in ("sign", "verify") and service.batches_here:
                job = fast_path.job_now(cycle.operation, cycle.key_id, *request_headers(cycle.headers)[:2],
                                        cycle.body_or_none())
                if isinstance(job, bytes):
                    return self.finish(cycle, 200, job)
                if job is not None:
                    queue_key, payload, run, cycle.answer = job
                    try:
                        service.batcher.submit(queue_key, payload, run, cycle)
                        return
                    except QueueFull:     # the task below answers 429, as for every request
                        cycle.answer = None
            cycle.task = task = self.loop.create_task(self._answer(cycle))
            task.add_done_callback(self.tasks.discard)
            self.tasks.add(task)

        async def _answer(self, cycle: HotRequest) -> None:
            fast_path = self.fast_path
            try:
                status, answer = await fast_path.respond(cycle.operation, cycle.key_id,
                                                         *request_headers(cycle.headers), cycle.read_body)
            except asyncio.CancelledError:
                if cycle.disconnected:    # (else a shutdown past its drain timeout cancelled it)
                    self._gone(cycle)
                return
            if self.flow.write_paused and not cycle.disconnected:
                await self.flow.drain()
            self._write(cycle, status, answer)

        def _gone(self, cycle: HotRequest) -> None:
            metrics = self.fast_path.service.metrics
            metrics.errors.labels("client_gone").inc()
            metrics.record(cycle.operation, 499, 0.0)

        def finish(self, cycle: HotRequest, status: int, answer) -> None:
            """Record and write the answer of a request handed to the batcher (or answered at once)."""
            if cycle.done():
                return
            self.fast_path.service.metrics.record(cycle.operation, status, time.perf_counter() - cycle.begun)
            if self.flow.write_paused:    # the client reads slowly: wait, as uvicorn's own answers do
                # (a hang-up cancels the task; the answer was counted already)
                cycle.task = task = self.loop.create_task(self._write_drained(cycle, status, answer))
                task.add_done_callback(self.tasks.discard)
                self.tasks.add(task)
            else:
                self._write(cycle, status, answer)

        async def _write_drained(self, cycle: HotRequest, status: int, answer) -> None:
            await self.flow.drain()
            if not cycle.done():
                self._write(cycle, status, answer)

        def _write(self, cycle: HotRequest, status: int, answer) -> None:
            """Write an answer (a 200's JSON body, or an error Response) and end the request."""
            if cycle.disconnected:
                return
            if isinstance(answer, bytes):     # FastPath's 200: JSON
                headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(answer))]
                body = answer
            else:
                headers, body = answer.raw_headers, answer.body
            content = [STATUS_LINE[status]]
            for name, value in self.server_state.default_headers + headers:
                content += (name, b": ", value, b"\r\n")
            if not cycle.keep_alive:
                content.append(b"connection: close\r\n")
            content += (b"\r\n", body)
            if self.access_log:
                self.access_logger.info('%s - "%s %s HTTP/%s" %d', get_client_addr(self.scope), "POST",
                                        cycle.path, "1.1", status)
            cycle.response_complete = True
            self.transport.write(b"".join(content))
            if not cycle.keep_alive:
                self.transport.close()
            self.on_response_complete()

    # The uvicorn methods the hot path takes over or calls; without them (another uvicorn
    # version), every request takes uvicorn's own way.
    _HOOKS_PRESENT = all(hasattr(HttpToolsProtocol, name) for name in (
        "on_headers_complete", "on_body", "on_message_complete", "on_response_complete", "_start_asgi_task"))
else:
    ServiceProtocol = None


def _fast_path(app):
    """The ``FastPath`` of the service app under uvicorn's wrapping middleware, or None when the
    app is not the service's."""
    for _ in range(8):
        fast_path = getattr(app, "fast_path", None)
        if fast_path is not None:
            return fast_path
        app = getattr(app, "app", None)
    return None


def http_protocol():
    """What to give uvicorn as ``http``: the protocol above, or "auto" without httptools."""
    return ServiceProtocol or "auto"
