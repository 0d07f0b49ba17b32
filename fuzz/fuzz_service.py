"""The service's request parsing and validation, in process (no HTTP): requests go to the ASGI
app itself (``app.create_app``: ``FastPath``, which answers the sign and verify routes, then
``Guard``, ``TokenFirst`` and the FastAPI routes) with a fuzzed method, path, query, headers
and body, as uvicorn would hand them over; ``middleware.route`` and ``request_headers`` see the
same path and headers, and every route's body model validates the body on its own
(``service.models``).

The service is real: an SQLite store in a scratch folder, a stored MAYO-2 key and a stored
Classic McEliece key, an admin token and a verify-only token. The input is read as choices (from
its end: a model, the method and path, headers among the tokens and other values) and a body
(its front), in which ``@key``, ``@kem``, ``@pk`` and ``@sig`` stand for the stored keys' ids,
the MAYO-2 public key and a valid signature of the message "pqforge fuzz message" (base64).
Batches are computed at once in the calling thread (``Service``'s ``submit``, the hook Ray Serve
uses); audit rows are not written, and the routes that change the store (create, disable,
destroy a key) are not called, their bodies only validated: the store would grow, or lose the
keys, with the inputs.

What must hold:
- Every request is answered: a 2xx whose JSON has the route's shape, a 307 to the path without
  its trailing slash, or an error answer with the documented JSON error body and a 4xx status; never a 500 ("internal"), never an
  exception, no hang.
- The routes that ``FastPath`` answers are answered alike by the FastAPI routes behind it (the
  same status, error kind and field; the same verdicts).
- Never a wrong accept: ``valid: true`` only for the stored key's own message and signature (by
  key id, or by its public key and algorithm); a signature answered is valid for the message
  under the stored key; a shared secret answered is the stored key's decapsulation.
- A body that a model accepts round-trips: its JSON dump validates to an equal model.
- ``request_headers`` and ``route`` return for any headers and path.
"""

import asyncio
import base64
import json
import os
from urllib.parse import quote

import atheris
from pydantic import ValidationError

import common

with common.instrumented():
    from pqforge.mayo import MAYO2
    from pqforge.service import models, tokens
    from pqforge.service.app import create_app
    from pqforge.service.config import Settings
    from pqforge.service.middleware import FastPath, request_headers, route

_DIR = common.scratch("service")
SETTINGS = Settings(store=f"sqlite:///{os.path.join(_DIR, 'pqforge.db')}", max_messages=8, max_body_bytes=16384,
                    warm_up=[], compile_rest=False, compute_threads=1)
LOOP = asyncio.new_event_loop()


def _now(queue_key, payload, run):
    """Submit a job as a batch of one, computed now."""
    future = LOOP.create_future()
    try:
        future.set_result(run([payload])[0])
    except Exception as exc:
        future.set_exception(exc)
    return future


APP = create_app(SETTINGS, submit=_now)
SERVICE = APP.state.service
SERVICE.store.audit = lambda rows: None
SERVICE.warmed.set()                # /readyz: ready (no warm-up runs here)
SIGNING = SERVICE.keys.create("MAYO-2")
KEM = SERVICE.keys.create("Classic-McEliece-348864")
_, ADMIN = tokens.create(SERVICE.store, ["admin"])
_, VERIFY = tokens.create(SERVICE.store, ["verify"])
PUBLIC = MAYO2.public_key_from_bytes(SIGNING.public_key)
KEM_KEY = SERVICE.keys.private_key(KEM.id, "kem")
MESSAGE = b"pqforge fuzz message"
SIGNATURE = SERVICE.keys.private_key(SIGNING.id, "signature").sign(MESSAGE)
STAND_INS = [(b"@key", SIGNING.id.encode()), (b"@kem", KEM.id.encode()),
             (b"@pk", base64.b64encode(SIGNING.public_key)), (b"@sig", base64.b64encode(SIGNATURE))]
"""Marks in a body that stand for the stored keys' ids, the public key and the valid signature
(which change with every start, or are larger than a fuzzer input)."""

MODELS = [models.CreateKey, models.NoFields, models.Sign, models.SignMany, models.Verify, models.VerifyMany,
          models.Decapsulate]
OPERATIONS = ["sign", "verify", "sign-many", "verify-many", "encapsulate", "decapsulate", "disable"]
OTHER_PATHS = ["/v1/keys", "/healthz", "/readyz", "/metrics", "/openapi.json"]
CHANGES_STORE = {"create-key", "disable", "destroy-key"}
ERROR_STATUSES = {400, 401, 403, 404, 405, 409, 413, 422, 429}


def _text(fdp) -> str:
    return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 48)).decode("latin-1")


def _path(fdp) -> str:
    """A path, maybe with a query: a route's, with a stored key's id or any text, or any text."""
    choice = fdp.ConsumeIntInRange(0, 4)
    operation = OPERATIONS[fdp.ConsumeIntInRange(0, len(OPERATIONS) - 1)]
    if choice == 0:
        return f"/v1/{operation}"
    if choice == 3:
        return _text(fdp)
    if choice == 4:
        return OTHER_PATHS[fdp.ConsumeIntInRange(0, len(OTHER_PATHS) - 1)] + _text(fdp)
    key_id = SIGNING.id if choice == 1 and fdp.ConsumeIntInRange(0, 1) else KEM.id if choice == 1 else _text(fdp)
    return f"/v1/keys/{key_id}/{operation}"


def _headers(fdp) -> list:
    headers = []
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        name = [b"authorization", b"content-type", b"content-length", b"x-other"][fdp.ConsumeIntInRange(0, 3)]
        value = [f"Bearer {ADMIN}".encode(), f"Bearer {VERIFY}".encode(), b"application/json",
                 None][fdp.ConsumeIntInRange(0, 3)]
        value = value if value is not None else fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 32))
        if name == b"content-length":
            # the HTTP parsers refuse a Content-Length that is not a number, and a second one
            if not value.isdigit() or any(known == name for known, _ in headers):
                continue
        headers.append((name, value))
    return headers


async def _answer(method: str, path: str, headers: list, body: bytes, app=APP) -> tuple[int, bytes]:
    """(status, body) of one request to an ASGI app (the service's, unless another is named)."""
    path, _, query = path.partition("?")
    # the request line as the HTTP parsers let it through (ASCII; they refuse any other byte), and
    # the path percent-decoded, as uvicorn gives it
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
             "scheme": "http", "path": path, "raw_path": quote(path, safe="/").encode("ascii"), "root_path": "",
             "query_string": quote(query, safe="=&").encode("ascii"), "headers": headers,
             "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000)}
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    sent = []

    async def receive():
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message):
        sent.append(message)

    await app(scope, receive, send)
    start = [m for m in sent if m["type"] == "http.response.start"]
    assert len(start) == 1, "not one answer"
    return start[0]["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def _error(answer: bytes) -> tuple:
    error = json.loads(answer)["error"]
    return error["kind"], error["field"]


def _check_answer(operation: str, body: bytes, status: int, answer: bytes) -> None:
    assert status != 500, "an internal error"
    if status == 307:           # a path with a trailing slash: redirected to the route without it
        return
    if status >= 300:
        assert status in ERROR_STATUSES, f"status {status}"
        error = json.loads(answer)["error"]
        assert set(error) == {"kind", "message", "field"} and error["kind"] != "internal"
        return
    if operation not in OPERATIONS:
        return
    reply = json.loads(answer)
    if operation == "sign":
        PUBLIC.verify(base64.b64decode(reply["signature"]), models.Sign.model_validate_json(body).message)
    elif operation == "sign-many":
        messages = models.SignMany.model_validate_json(body).messages
        assert len(reply["signatures"]) == len(messages)
        for signature, message in zip(reply["signatures"], messages):
            PUBLIC.verify(base64.b64decode(signature), message)
    elif operation == "decapsulate":
        ciphertext = models.Decapsulate.model_validate_json(body).ciphertext
        assert base64.b64decode(reply["shared_secret"]) == KEM_KEY.decapsulate(ciphertext)
    elif operation == "encapsulate":
        ciphertext = base64.b64decode(reply["ciphertext"])
        assert base64.b64decode(reply["shared_secret"]) == KEM_KEY.decapsulate(ciphertext)
    else:
        many = operation == "verify-many"
        request = (models.VerifyMany if many else models.Verify).model_validate_json(body)
        ours = request.key_id == SIGNING.id or (request.public_key == SIGNING.public_key
                                                and request.alg is not None and request.key_id is None)
        pairs = zip(request.messages, request.signatures) if many else [(request.message, request.signature)]
        verdicts = reply["valid"] if many else [reply["valid"]]
        for verdict, (message, signature) in zip(verdicts, pairs):
            assert verdict is False or (ours and (message, signature) == (MESSAGE, SIGNATURE)), "a wrong accept"


def test_one_input(data: bytes) -> None:
    fdp = atheris.FuzzedDataProvider(data)
    model = MODELS[fdp.ConsumeIntInRange(0, len(MODELS) - 1)]
    path = _path(fdp)
    headers = _headers(fdp)
    method = "GET" if fdp.ConsumeIntInRange(0, 3) == 0 else "POST"
    body = fdp.ConsumeBytes(fdp.remaining_bytes())      # the front of the input: a seed's JSON
    for mark, value in STAND_INS:
        body = body.replace(mark, value)
        path = path.replace(mark.decode(), value.decode())

    try:
        parsed = model.model_validate_json(body)
    except ValidationError:
        pass
    else:
        assert model.model_validate_json(parsed.model_dump_json()) == parsed, "a model's dump validates otherwise"

    request_headers(headers)
    operation, _ = route(method, path.partition("?")[0])
    if operation in CHANGES_STORE:
        return
    status, answer = LOOP.run_until_complete(_answer(method, path, headers, body))
    _check_answer(operation, body, status, answer)
    if FastPath.answers(method, path.partition("?")[0]):
        # the routes FastPath answers, answered by FastAPI behind it: the same checks, the same answer
        status2, answer2 = LOOP.run_until_complete(_answer(method, path, headers, body, APP.fast_path.app))
        assert status2 == status, f"FastPath answered {status}, FastAPI {status2}"
        if status >= 300:
            assert _error(answer2) == _error(answer), f"FastPath answered {answer}, FastAPI {answer2}"
        elif operation.startswith("verify"):
            assert answer2 == answer, "FastPath and FastAPI verify otherwise"


if __name__ == "__main__":
    common.main(test_one_input)
