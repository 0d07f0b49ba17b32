"""The service's HTTP protocol on a raw socket: the sign and verify requests that skip ASGI keep
HTTP/1.1's rules (pipelined answers in order, keep-alive and close, the same headers as every
other answer), and the requests it leaves to uvicorn's own way still work."""

from __future__ import annotations

import base64
import json
import socket

import pytest

from pqforge.mayo import MAYO2

from .conftest import Server


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("protocol"), settings={"max_body_bytes": 4096})
    srv.admin = srv.token("admin")
    srv.start()
    import httpx
    key = httpx.post(srv.url + "/v1/keys", json={"alg": "MAYO-2"},
                     headers={"Authorization": f"Bearer {srv.admin}"}).json()
    yield srv, key
    srv.stop()


def _request(srv, path: str, body: dict | None = None, method: str = "POST", version: str = "1.1",
             extra: str = "") -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    head = (f"{method} {path} HTTP/{version}\r\nHost: x\r\nAuthorization: Bearer {srv.admin}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n{extra}\r\n")
    return head.encode() + data


def _read_answers(sock: socket.socket, count: int) -> list[tuple[int, dict, bytes]]:
    """``count`` answers (status, lower-case headers, body) read off the socket in order."""
    buffer, answers = b"", []
    while len(answers) < count:
        while b"\r\n\r\n" not in buffer:
            chunk = sock.recv(65536)
            assert chunk, f"connection closed after {len(answers)} answers"
            buffer += chunk
        head, buffer = buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if status == 100:         # an interim answer: the final one follows
            continue
        length = int(headers["content-length"])
        while len(buffer) < length:
            buffer += sock.recv(65536)
        answers.append((status, headers, buffer[:length]))
        buffer = buffer[length:]
    return answers


def _connect(srv) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", int(srv.url.rsplit(":", 1)[1])), timeout=30)
    return sock


def test_pipelined_requests_are_answered_in_order(served):
    srv, key = served
    messages = [b"first", b"second", b"third"]
    requests = [_request(srv, f"/v1/keys/{key['id']}/sign", {"message": base64.b64encode(m).decode()})
                for m in messages]
    requests.insert(1, _request(srv, "/healthz", method="GET"))      # uvicorn's own way, in between
    requests.append(_request(srv, "/v1/verify", {"key_id": key["id"], "message": base64.b64encode(b"x").decode(),
                                                  "signature": base64.b64encode(b"\0" * 10).decode()}))
    with _connect(srv) as sock:
        sock.sendall(b"".join(requests))                # all at once: pipelined
        answers = _read_answers(sock, len(requests))
    assert [status for status, _, _ in answers] == [200] * 5
    assert json.loads(answers[1][2]) == {"status": "ok"}
    assert json.loads(answers[4][2]) == {"valid": False}
    pk = MAYO2.public_key_from_bytes(base64.b64decode(key["public_key"]))
    signatures = [base64.b64decode(json.loads(answers[i][2])["signature"]) for i in (0, 2, 3)]
    assert list(pk.verify_many(messages, signatures)) == [True] * 3


def test_a_hot_answer_has_the_headers_of_every_other_answer(served):
    srv, key = served
    with _connect(srv) as sock:
        sock.sendall(_request(srv, f"/v1/keys/{key['id']}/sign", {"message": "AA=="})
                     + _request(srv, f"/v1/keys/{key['id']}/get-nothing", {"message": "AA=="}))
        (status, hot, body), (_, other, _) = _read_answers(sock, 2)
    assert status == 200 and hot["content-type"] == "application/json"
    assert int(hot["content-length"]) == len(body)
    assert set(other) - {"content-length", "content-type"} <= set(hot)     # date and server too
    assert f'POST /v1/keys/{key["id"]}/sign HTTP/1.1\\" 200' in srv.log()    # the access log, as JSON


def test_connection_close_and_http_1_0_end_the_connection_after_the_answer(served):
    srv, key = served
    sign = f"/v1/keys/{key['id']}/sign"
    for version, extra in (("1.1", "Connection: close\r\n"), ("1.0", "")):
        with _connect(srv) as sock:
            sock.sendall(_request(srv, sign, {"message": "AA=="}, version=version, extra=extra))
            [(status, headers, _)] = _read_answers(sock, 1)
            assert status == 200 and headers.get("connection") == "close"
            assert sock.recv(1) == b""                  # closed by the server


def test_errors_on_the_hot_path_keep_the_connection(served):
    srv, key = served
    sign = f"/v1/keys/{key['id']}/sign"
    too_long = _request(srv, sign, {"message": base64.b64encode(b"x" * 4096).decode()})
    unauthenticated = _request(srv, sign, {"message": "AA=="}).replace(srv.admin.encode(), b"pqf_00_nope")
    with _connect(srv) as sock:
        sock.sendall(too_long + unauthenticated + _request(srv, sign, {"mess": 1}) + _request(srv, sign, {"message": "AA=="}))
        answers = _read_answers(sock, 4)
    assert [status for status, _, _ in answers] == [413, 401, 422, 200]
    assert answers[1][1]["www-authenticate"] == "Bearer"
    assert json.loads(answers[2][2])["error"]["field"] == "message"


def test_expect_100_continue_gets_its_interim_answer(served):
    srv, key = served
    request = _request(srv, f"/v1/keys/{key['id']}/sign", {"message": "AA=="}, extra="Expect: 100-continue\r\n")
    head, body = request.split(b"\r\n\r\n", 1)
    with _connect(srv) as sock:
        sock.sendall(head + b"\r\n\r\n")
        assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(body)
        [(status, _, answer)] = _read_answers(sock, 1)
    assert status == 200 and "signature" in json.loads(answer)


def test_a_chunked_body_past_the_limit_gets_413(served):
    srv, key = served
    head = (f"POST /v1/keys/{key['id']}/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {srv.admin}\r\n"
            f"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").encode()
    chunk = b"A" * 1000
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(6)) + b"0\r\n\r\n"
    with _connect(srv) as sock:
        sock.sendall(head + body + _request(srv, "/healthz", method="GET"))
        answers = _read_answers(sock, 2)
    assert [status for status, _, _ in answers] == [413, 200]
    assert json.loads(answers[0][2])["error"]["kind"] == "too_large"


class _Transport:
    """A socket's transport that records what is written."""

    def __init__(self):
        self.data, self.closed = b"", False

    def write(self, data):
        self.data += data

    def close(self):
        self.closed = True

    def is_closing(self):
        return self.closed

    def get_extra_info(self, name):
        return None

    def get_write_buffer_size(self):
        return 0

    def pause_reading(self):
        pass

    def resume_reading(self):
        pass


def test_the_hot_path_reaches_fastpath_respond_without_asgi():
    import asyncio

    import uvicorn
    from uvicorn.server import ServerState

    from pqforge.service.middleware import FastPath
    from pqforge.service.protocol import ServiceProtocol

    class Hot:
        answers = staticmethod(FastPath.answers)
        service = type("S", (), {"settings": type("T", (), {"max_body_bytes": 100}), "batches_here": False})

        def __init__(self):
            self.calls = []

        async def respond(self, operation, key_id, authorization, content_type, length, read_body):
            self.calls.append((operation, key_id, authorization, content_type, length, await read_body()))
            return 200, b'{"signature":"c2ln"}'

    class App:
        fast_path = Hot()

        async def __call__(self, scope, receive, send):
            raise AssertionError(f"{scope['path']} went the ASGI way")

    async def scenario():
        config = uvicorn.Config(App(), lifespan="off", log_config=None)
        protocol = ServiceProtocol(config, ServerState(), {}, asyncio.get_running_loop())
        transport = _Transport()
        protocol.connection_made(transport)
        protocol.data_received(b'POST /v1/keys/k1/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n'
                               b'Content-Type: application/json\r\nContent-Length: 12\r\n\r\n{"message"')
        protocol.data_received(b":")                        # the body in three pieces
        for _ in range(5):
            await asyncio.sleep(0)
        assert transport.data == b""                        # waits for the rest of the body
        protocol.data_received(b"}")
        for _ in range(5):
            await asyncio.sleep(0)
        return App.fast_path.calls, transport.data

    calls, written = asyncio.run(scenario())
    assert calls == [("sign", "k1", "Bearer t", "application/json", 12, b'{"message":}')]
    assert written.startswith(b"HTTP/1.1 200 OK\r\n") and written.endswith(b'\r\n\r\n{"signature":"c2ln"}')
    assert b"content-length: 20\r\n" in written


def test_a_single_request_goes_to_the_batcher_as_its_own_future():
    """A sign request whose job needs nothing from the store is handed to the batcher with the
    request itself as the future, with no task: the batch's result is written from set_result;
    a client that hangs up while its request waits makes it done, and it counts as 499."""
    import asyncio

    import uvicorn
    from uvicorn.server import ServerState

    from pqforge.service.middleware import FastPath
    from pqforge.service.protocol import ServiceProtocol

    recorded, submitted = [], []

    class Metrics:
        errors = type("E", (), {"labels": staticmethod(lambda kind: type("C", (), {"inc": lambda self: None})())})

        def record(self, operation, status, seconds):
            recorded.append((operation, status))

    class Batcher:
        def submit(self, queue_key, payload, run, future):
            submitted.append((queue_key, payload, future))

    class Service:
        settings = type("T", (), {"max_body_bytes": 100})
        batches_here = True
        metrics = Metrics()
        batcher = Batcher()

    class Hot:
        answers = staticmethod(FastPath.answers)
        service = Service

        def job_now(self, operation, key_id, authorization, content_type, body):
            return ("sign", key_id), body, None, lambda signature: b'{"signature":"%s"}' % signature

        async def respond(self, *args):
            raise AssertionError("the request took the task's way")

    class App:
        fast_path = Hot()

    request = (b'POST /v1/keys/k1/sign HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n'
               b'Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{}')

    async def scenario():
        config = uvicorn.Config(App(), lifespan="off", log_config=None)
        loop = asyncio.get_running_loop()
        answered = ServiceProtocol(config, ServerState(), {}, loop)
        answered.connection_made(_Transport())
        answered.data_received(request)
        gone = ServiceProtocol(config, ServerState(), {}, loop)
        gone.connection_made(_Transport())
        gone.data_received(request)
        assert not answered.tasks and not gone.tasks and len(submitted) == 2
        (queue_key, payload, first), (_, _, second) = submitted
        assert queue_key == ("sign", "k1") and payload == b"{}" and not first.done()
        gone.connection_lost(None)
        assert second.done()                            # the batcher drops it
        first.set_result(b"c2ln")
        await asyncio.sleep(0)                          # the joined write leaves at the end of the pass

        slow = ServiceProtocol(config, ServerState(), {}, loop)     # a client that reads slowly
        slow.connection_made(_Transport())
        slow.data_received(request)
        slow.pause_writing()
        submitted[-1][2].set_result(b"c2xvdw==")
        await asyncio.sleep(0.01)
        assert slow.transport._transport.data == b""     # held until the transport drains
        slow.resume_writing()
        await asyncio.sleep(0.01)
        return answered.transport._transport.data, slow.transport._transport.data

    written, slowly = asyncio.run(scenario())
    assert written.startswith(b"HTTP/1.1 200 OK\r\n") and written.endswith(b'\r\n\r\n{"signature":"c2ln"}')
    assert slowly.endswith(b'\r\n\r\n{"signature":"c2xvdw=="}')
    assert recorded == [("sign", 499), ("sign", 200), ("sign", 200)]
