"""Many concurrent clients, each getting exactly its own answer; queue bounds; clients that leave;
kill -9 durability; SIGTERM drain."""

from __future__ import annotations

import asyncio
import base64
import re
import signal
import socket
import sqlite3
import time

import pytest

from pqforge.client import AsyncClient, Client
from pqforge.mayo import MAYO2

from .conftest import Server, bearer, httpx


def test_concurrent_clients_each_get_their_own_answer(server):
    with Client(server.url, server.admin) as c:
        key = c.create_key("MAYO-2")
    pk = MAYO2.public_key_from_bytes(key["public_key"])
    clients, per_client = 48, 4
    messages = [[f"client {i} message {j}".encode() for j in range(per_client)] for i in range(clients)]

    async def one_client(mine):
        async with AsyncClient(server.url, server.admin) as c:
            return [await c.sign(key["id"], m) for m in mine]

    async def everyone():
        return await asyncio.gather(*(one_client(mine) for mine in messages))

    answers = asyncio.run(everyone())
    flat_messages = [m for mine in messages for m in mine]
    flat_sigs = [s for mine in answers for s in mine]
    assert list(pk.verify_many(flat_messages, flat_sigs)) == [True] * len(flat_messages)
    # and each signature belongs to its own request only: it fails on the neighbour's message
    shifted = flat_messages[1:] + flat_messages[:1]
    assert not any(pk.verify_many(shifted, flat_sigs))
    batches = re.search(r'pqforge_batch_size_count\{operation="sign"\} (\S+)', httpx.get(server.url + "/metrics").text)
    assert float(batches.group(1)) < len(flat_messages)       # requests were really batched

    # concurrent verification: valid and invalid requests interleaved, each verdict its own
    expected = [(i % 3) != 0 for i in range(len(flat_messages))]
    claims = [m if ok else m + b"!" for m, ok in zip(flat_messages, expected)]

    async def verify_all():
        async with AsyncClient(server.url, server.admin) as c:
            async def _verdict(c, m, s):
                try:
                    await c.verify(s, m, key_id=key["id"])
                    return True
                except Exception as exc:   # InvalidSignature
                    return type(exc).__name__
            return await asyncio.gather(*(_verdict(c, m, s) for m, s in zip(claims, flat_sigs)))

    verdicts = asyncio.run(verify_all())
    assert verdicts == [True if ok else "InvalidSignature" for ok in expected]


def test_full_queue_answers_429_with_retry_after(tmp_path):
    srv = Server(tmp_path, settings={"max_queue": 2, "max_batch": 64, "max_wait_ms": 1500.0})
    token = srv.token("admin")
    srv.start()
    try:
        with Client(srv.url, token) as c:
            key = c.create_key("MAYO-2")

        async def burst():
            async with httpx.AsyncClient(base_url=srv.url, headers=bearer(token), timeout=30) as h:
                body = {"message": base64.b64encode(b"m").decode()}
                return await asyncio.gather(*(h.post(f"/v1/keys/{key['id']}/sign", json=body) for _ in range(6)))

        statuses = sorted(r.status_code for r in asyncio.run(burst()))
        assert statuses == [200, 200, 429, 429, 429, 429]
        refused = [r for r in asyncio.run(burst()) if r.status_code == 429]
        assert all(int(r.headers["Retry-After"]) >= 1 and r.json()["error"]["kind"] == "queue_full" for r in refused)
    finally:
        srv.stop()


def test_request_of_a_client_that_went_away_is_not_computed(tmp_path):
    srv = Server(tmp_path, settings={"max_batch": 64, "max_wait_ms": 1500.0})
    token = srv.token("admin")
    srv.start()
    try:
        with Client(srv.url, token) as c:
            key = c.create_key("MAYO-2")
        body = ('{"message": "%s"}' % base64.b64encode(b"abandoned").decode()).encode()
        host, port = srv.url.rsplit(":", 1)
        with socket.create_connection(("127.0.0.1", int(port))) as sock:
            sock.sendall(b"POST /v1/keys/%s/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
                         b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                         % (key["id"].encode(), token.encode(), len(body), body))
            time.sleep(0.3)
        time.sleep(2.0)        # past max_wait: the queue has been flushed
        metrics = httpx.get(srv.url + "/metrics").text
        assert 'pqforge_errors_total{kind="client_gone"} 1.0' in metrics
        assert 'pqforge_batch_size_count{operation="sign"}' not in metrics
        rows = sqlite3.connect(srv.store[len("sqlite:///"):]).execute("SELECT COUNT(*) FROM audit").fetchone()
        assert rows == (0,)
    finally:
        srv.stop()


def test_acknowledged_key_survives_kill_9(tmp_path):
    srv = Server(tmp_path)
    token = srv.token("admin")
    srv.start()
    try:
        with Client(srv.url, token) as c:
            key = c.create_key("MAYO-2")
            kem = c.create_key("Classic-McEliece-348864")
            ct, shared = c.encapsulate(kem["id"])
        assert srv.kill(signal.SIGKILL) == -signal.SIGKILL
        srv.start()
        with Client(srv.url, token) as c:
            assert c.get_key(key["id"]) == key
            signature = c.sign(key["id"], b"after restart")
            assert c.decapsulate(kem["id"], ct) == shared
        MAYO2.public_key_from_bytes(key["public_key"]).verify(signature, b"after restart")
    finally:
        srv.stop()


def test_sigterm_finishes_queued_requests_then_exits(tmp_path):
    srv = Server(tmp_path, settings={"max_batch": 64, "max_wait_ms": 1000.0})
    token = srv.token("admin")
    srv.start()
    try:
        with Client(srv.url, token) as c:
            key = c.create_key("MAYO-2")
    except BaseException:
        srv.stop()
        raise
    pk = MAYO2.public_key_from_bytes(key["public_key"])

    async def requests_then_sigterm():
        async with AsyncClient(srv.url, token) as c:
            pending = [asyncio.ensure_future(c.sign(key["id"], bytes([i]))) for i in range(8)]
            await asyncio.sleep(0.4)            # queued, waiting for max_wait
            srv.proc.send_signal(signal.SIGTERM)
            return await asyncio.gather(*pending)

    signatures = asyncio.run(requests_then_sigterm())
    assert list(pk.verify_many([bytes([i]) for i in range(8)], signatures)) == [True] * 8
    assert srv.proc.wait(timeout=60) == 0        # a clean drain is an orderly stop
    assert "draining" in srv.log() and "Application shutdown complete" in srv.log()
    with pytest.raises(httpx.ConnectError):
        httpx.get(srv.url + "/healthz")


def test_several_worker_processes_share_the_port_and_the_store(tmp_path):
    srv = Server(tmp_path, settings={"workers": 2, "max_wait_ms": 5.0})
    token = srv.token("admin")
    srv.start()
    try:
        with Client(srv.url, token) as c:
            key = c.create_key("MAYO-2")
        messages = [b"worker message %d" % i for i in range(40)]

        async def concurrent():
            clients = [AsyncClient(srv.url, token) for _ in range(8)]   # separate connections
            try:
                return await asyncio.gather(*(clients[i % 8].sign(key["id"], m) for i, m in enumerate(messages)))
            finally:
                await asyncio.gather(*(c.aclose() for c in clients))
        signatures = asyncio.run(concurrent())
        pk = MAYO2.public_key_from_bytes(key["public_key"])
        assert list(pk.verify_many(messages, signatures)) == [True] * len(messages)
        assert len(set(re.findall(r"Started server process \[(\d+)\]", srv.log()))) == 2
    finally:
        srv.stop()
