"""The event loop's CPU time per hot-path request, without the network and without the compute.

    python benchmarks/service_loop.py [--rounds 7] [--requests 200] [--op sign,verify,sign-many,verify-many]

Builds the service app (``create_app``, a fresh SQLite store, one MAYO-2 key, one admin token) in
this process and drives its HTTP protocol (``protocol.ServiceProtocol``) over 64 in-memory
connections: each round, every connection receives one request and the loop runs until every
answer is written. The batch work is replaced by fixed answers (no signing, no verification, no
audit rows; single requests' batches are answered in the loop, a many-message request's still
goes to a worker thread and back), so what is timed is what a request costs the event loop
thread: HTTP parsing, the token, the body's model, the batch handoff, the answer and its
metrics. Prints the process's CPU microseconds per request, least and median of the rounds.

Under real load the same thread also pays the system calls of the sockets and shares the cores
with the compute threads (``service_load.py --threads``); this is the part that the service's
own Python code decides.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import gc
import json
import statistics
import tempfile
import time
from pathlib import Path

import uvicorn
from uvicorn.server import ServerState

from pqforge import algorithms
from pqforge.service import tokens
from pqforge.service.app import create_app
from pqforge.service.config import Settings
from pqforge.service.protocol import ServiceProtocol

CONNECTIONS = 64
MANY = 256


class _Answers:
    """Counts the answers written to every connection; ``done`` ends when ``wanted`` have come."""

    def __init__(self):
        self.count, self.wanted, self.done = 0, 0, None

    def expect(self, count: int) -> asyncio.Future:
        self.count, self.wanted = 0, count
        self.done = asyncio.get_running_loop().create_future()
        return self.done

    def add(self) -> None:
        self.count += 1
        if self.count == self.wanted:
            self.done.set_result(None)


class _Transport:
    """An in-memory socket: tells ``answers`` of each answer written to it."""

    def __init__(self, answers: _Answers):
        self.answers, self.closing, self.last = answers, False, b""

    def write(self, data) -> None:
        self.last = data
        self.answers.add()

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def get_extra_info(self, name, default=None):
        return {"peername": ("127.0.0.1", 50000), "sockname": ("127.0.0.1", 8000)}.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0


class _Inline:
    """The batcher's executor without a worker thread: its batches run at once, in the event loop."""

    @staticmethod
    def submit(fn, *args):
        fn(*args)


def _request(path: str, token: str, body: dict) -> bytes:
    data = json.dumps(body).encode()
    return (b"POST %s HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nAuthorization: Bearer %s\r\n"
            b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % (path.encode(), token.encode(), len(data))
            + data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per operation (default 7)")
    parser.add_argument("--requests", type=int, default=200,
                        help=f"requests per connection per round (default 200; {CONNECTIONS} connections)")
    parser.add_argument("--op", default="sign,verify,sign-many,verify-many", help="operations (comma-separated)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="pqforge-loop-") as tmp:
        # every round's single requests are one batch, flushed by its last request, not by a timer
        settings = Settings(store=f"sqlite:///{Path(tmp) / 'loop.db'}", warm_up=[], compile_rest=False,
                            max_batch=CONNECTIONS)
        app = create_app(settings)
        service = app.state.service
        _, token = tokens.create(service.store, ["admin"])
        key = service.keys.create("MAYO-2")
        size = algorithms.get("MAYO-2").signature_size
        service.sign_batch = lambda key_id, items: [b"\1" * size for _ in items]
        service.verify_batch = lambda pk, items: [True for _ in items]
        service.batcher.executor = _Inline()
        b64 = lambda data: base64.b64encode(data).decode()
        messages = [b64(b"bench message %d" % i) for i in range(MANY)]
        requests = {
            "sign": _request(f"/v1/keys/{key.id}/sign", token, {"message": messages[0]}),
            "verify": _request("/v1/verify", token, {"key_id": key.id, "message": messages[0],
                                                     "signature": b64(b"\2" * size)}),
            "sign-many": _request(f"/v1/keys/{key.id}/sign-many", token, {"messages": messages}),
            "verify-many": _request("/v1/verify-many", token, {"key_id": key.id, "messages": messages,
                                                               "signatures": [b64(b"\2" * size)] * MANY}),
        }
        config = uvicorn.Config(app, http=ServiceProtocol, lifespan="off", log_level="warning")
        config.load()
        loop = (config.get_loop_factory() or asyncio.new_event_loop)()     # uvicorn's own choice: uvloop where installed
        try:
            loop.run_until_complete(_measure(config, requests, args))
        finally:
            loop.close()
        service.executor.shutdown()
        service.store.close()
    return 0


async def _measure(config, requests: dict[str, bytes], args) -> None:
    loop = asyncio.get_running_loop()
    state = ServerState()
    connections, answers = [], _Answers()
    for _ in range(CONNECTIONS):
        transport = _Transport(answers)
        protocol = ServiceProtocol(config=config, server_state=state, app_state={}, _loop=loop)
        protocol.connection_made(transport)
        connections.append((protocol, transport))

    async def one_round(request: bytes) -> None:
        done = answers.expect(len(connections))
        for protocol, _ in connections:
            protocol.data_received(request)
        await done

    print(f"{CONNECTIONS} connections, {args.requests} requests each per round, {args.rounds} rounds; "
          f"event loop CPU per request (compute replaced by fixed answers)", flush=True)
    gc.freeze()
    for op in [o.strip() for o in args.op.split(",")]:
        if op not in requests:
            raise SystemExit(f"service_loop: unknown operation {op!r}; expected one of {', '.join(requests)}")
        for _ in range(max(5, args.requests // 10)):
            await one_round(requests[op])
        for _, transport in connections:      # what is timed is the answer itself, not an error
            if not transport.last.startswith(b"HTTP/1.1 200 "):
                raise SystemExit(f"service_loop: {op} answered {transport.last[:300]!r}")
        figures = []
        for _ in range(args.rounds):
            start = time.process_time()
            for _ in range(args.requests):
                await one_round(requests[op])
            figures.append((time.process_time() - start) / (args.requests * CONNECTIONS) * 1e6)
        per = f" ({MANY} messages)" if op.endswith("-many") else ""
        print(f"  {op:<12} least {min(figures):7.1f} us/request   median {statistics.median(figures):7.1f}{per}",
              flush=True)
    for protocol, transport in connections:
        transport.closing = True
        protocol.connection_lost(None)


if __name__ == "__main__":
    raise SystemExit(main())
