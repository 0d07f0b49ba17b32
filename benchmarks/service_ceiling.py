"""How fast single requests could go through the service if signing and verifying cost nothing,
beside the floor of any Python HTTP server on this machine and the library's own `sign_many`.

    python benchmarks/service_ceiling.py [--seconds 5] [--rounds 2]

Each round, interleaved, wrk with 64 connections on loopback (as in ``service_load.py``):

- bare: a do-nothing uvloop protocol in this process that answers every request with a fixed
  200 of a signature's size. What a Python server costs here at the least, with wrk on the same
  cores.
- free sign, free verify: the service app (``create_app``: a fresh SQLite store, one MAYO-2 key,
  one admin token) served by uvicorn with the service's HTTP protocol in this process, its batch
  work replaced by fixed answers. Requests still go through the token, the body's model, the
  batcher and its worker threads; no signature is computed and no audit row written.
- the library's ``sign_many`` (256 messages per call, every core), messages per second.

Single signing at 64 clients can go no faster than "free sign". A target of half of
``sign_many`` for single signing needs "free sign" above it, with room for the signatures.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import uvicorn

from pqforge import algorithms
from pqforge.bench.service import free_port, load_wrk
from pqforge.service import tokens
from pqforge.service.app import create_app
from pqforge.service.config import Settings
from pqforge.service.protocol import ServiceProtocol

CONNECTIONS = 64


def _answer(p) -> bytes:
    """A 200 carrying a MAYO signature's worth of base64, as the service's sign answer."""
    body = b'{"signature":"%s"}' % base64.b64encode(b"\1" * p.signature_size)
    return b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)


class _Bare(asyncio.Protocol):
    """Answers each complete request (headers, then Content-Length bytes) with ``answer``."""

    answer = b""

    def connection_made(self, transport):
        self.transport, self.buffer = transport, b""

    def data_received(self, data):
        buffer, count = self.buffer + data, 0
        while (end := buffer.find(b"\r\n\r\n")) >= 0:
            head = buffer[:end].lower()
            at = head.find(b"content-length:")
            length = int(head[at + 15:].split(b"\r\n", 1)[0]) if at >= 0 else 0
            if len(buffer) < end + 4 + length:
                break
            buffer, count = buffer[end + 4 + length:], count + 1
        self.buffer = buffer
        if count:
            self.transport.write(self.answer * count)


def serve_bare(port: int) -> None:
    """The bare server, in this process's main thread, on uvicorn's choice of event loop."""
    _Bare.answer = _answer(algorithms.get("MAYO-2"))

    async def main():
        server = await asyncio.get_running_loop().create_server(_Bare, "127.0.0.1", port)
        print(json.dumps({}), flush=True)
        await server.serve_forever()

    (uvicorn.Config(None).get_loop_factory() or asyncio.new_event_loop)().run_until_complete(main())


def serve_free(port: int, workdir: str) -> None:
    """The service app with free batch work, in this process's main thread, as ``pqforge serve``
    runs it; prints the token and the key id once the app is built."""
    p = algorithms.get("MAYO-2")
    signature = b"\1" * p.signature_size
    app = create_app(Settings(store=f"sqlite:///{Path(workdir) / 'ceiling.db'}", warm_up=[], compile_rest=False))
    service = app.state.service
    _, token = tokens.create(service.store, ["admin"])
    key = service.keys.create("MAYO-2")
    service.sign_batch = lambda key_id, items: [signature for _ in items]
    service.verify_batch = lambda pk, items: [True for _ in items]
    print(json.dumps({"token": token, "key": key.id}), flush=True)
    uvicorn.run(app, host="127.0.0.1", port=port, http=ServiceProtocol, log_level="warning", access_log=False)


def _start(*args: str) -> tuple[subprocess.Popen, dict]:
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
    return proc, json.loads(proc.stdout.readline())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=5, help="seconds per wrk run (default 5)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument("--serve", nargs="+", help=argparse.SUPPRESS)      # the servers' own processes
    args = parser.parse_args()
    if args.serve:
        serve_bare(int(args.serve[1])) if args.serve[0] == "bare" else serve_free(int(args.serve[1]), args.serve[2])
        return 0

    if shutil.which("wrk") is None:
        raise SystemExit("service_ceiling: needs wrk (apt-get install wrk)")
    p = algorithms.get("MAYO-2")
    sk = p.generate_private_key()
    messages = [os.urandom(32) for _ in range(256)]
    sk.sign_many(messages)
    with tempfile.TemporaryDirectory(prefix="pqforge-ceiling-") as tmp:
        port, bare_port = free_port(), free_port()
        free, made = _start("--serve", "free", str(port), tmp)
        bare, _ = _start("--serve", "bare", str(bare_port))
        try:
            message = base64.b64encode(b"ceiling message").decode()
            signature = base64.b64encode(b"\1" * p.signature_size).decode()
            runs = {"bare": (bare_port, "/v1/keys/k/sign", {"message": message}),
                    "free sign": (port, f"/v1/keys/{made['key']}/sign", {"message": message}),
                    "free verify": (port, "/v1/verify", {"key_id": made["key"], "message": message,
                                                         "signature": signature})}
            deadline = time.monotonic() + 60
            while True:         # uvicorn listening
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise SystemExit("service_ceiling: the free server did not start") from None
                    time.sleep(0.1)
            print(f"{CONNECTIONS} wrk connections, {args.seconds:g} s each; requests per second (messages for "
                  f"sign_many)", flush=True)
            for round_ in range(1, args.rounds + 1):
                figures = {}
                for name, (at, path, body) in runs.items():
                    figures[name] = load_wrk(at, made.get("token", ""), path, [json.dumps(body).encode()],
                                             CONNECTIONS, args.seconds, Path(tmp))
                    if figures[name]["errors"]:
                        raise SystemExit(f"service_ceiling: {figures[name]['errors']} errors in {name}")
                calls, start = 0, time.perf_counter()
                while time.perf_counter() - start < max(3.0, args.seconds / 2):
                    sk.sign_many(messages)
                    calls += 1
                sign_many = calls * len(messages) / (time.perf_counter() - start)
                line = "  ".join(f"{name} {f['per_s']:,.0f} (wrk CPU {f['gen_cpu_s'] / args.seconds:.2f} s/s)"
                                 for name, f in figures.items())
                print(f"round {round_}: {line}  sign_many {sign_many:,.0f} (half: {sign_many / 2:,.0f})", flush=True)
        finally:
            for proc in (free, bare):
                proc.terminate()
                proc.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
