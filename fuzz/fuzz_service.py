"""The service's request parsing and validation, in process (no HTTP): a request's path
(``middleware.route``, ``FastPath.answers``), headers (``middleware.request_headers``), token
and body go through ``FastPath.respond``, the function that answers the sign and verify routes,
which runs the same checks and pydantic models as the FastAPI routes; the bodies of every route
are also validated by their model alone (``service.models``).

The service is real: an SQLite store in a scratch folder, a stored MAYO-2 key and a stored
Classic McEliece key, an admin token and a verify-only token. The input is read as choices (from
its end: a model, the path, headers among the tokens and other values) and a body (its front),
in which ``@key``, ``@kem``, ``@pk`` and ``@sig`` stand for the stored keys' ids, the MAYO-2
public key and a valid signature of the message "pqforge fuzz message" (base64). Batches are computed at once in
the calling thread (``Service``'s ``submit``, the hook Ray Serve uses), and the audit rows of
signatures are not written (they would grow the store with every accepted input).

What must hold:
- ``respond`` answers every request: a 200 whose JSON has the route's shape, or an error answer
  with the documented JSON error body and a 4xx status; never a 500 ("internal"), never an
  exception, no hang.
- Never a wrong accept: ``valid: true`` only for the stored key's own message and signature (by
  key id, or by its public key and algorithm); a signature answered is valid for the message
  under the stored key.
- A body that a model accepts round-trips: its JSON dump validates to an equal model.
- ``request_headers`` and ``route`` return for any headers and path.
"""

import asyncio
import base64
import json
import os

import atheris
from pydantic import ValidationError

import common

with common.instrumented():
    from pqforge.mayo import MAYO2
    from pqforge.service import models, tokens
    from pqforge.service.config import Settings
    from pqforge.service.core import Service
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


SERVICE = Service(SETTINGS, submit=_now)
SERVICE.store.audit = lambda rows: None
FAST = FastPath(None, SERVICE)
SIGNING = SERVICE.keys.create("MAYO-2")
KEM = SERVICE.keys.create("Classic-McEliece-348864")
_, ADMIN = tokens.create(SERVICE.store, ["admin"])
_, VERIFY = tokens.create(SERVICE.store, ["verify"])
PUBLIC = MAYO2.public_key_from_bytes(SIGNING.public_key)
MESSAGE = b"pqforge fuzz message"
SIGNATURE = SERVICE.keys.private_key(SIGNING.id, "signature").sign(MESSAGE)
STAND_INS = [(b"@key", SIGNING.id.encode()), (b"@kem", KEM.id.encode()),
             (b"@pk", base64.b64encode(SIGNING.public_key)), (b"@sig", base64.b64encode(SIGNATURE))]
"""Marks in a body that stand for the stored keys' ids, the public key and the valid signature
(which change with every start, or are larger than a fuzzer input)."""

MODELS = [models.CreateKey, models.NoFields, models.Sign, models.SignMany, models.Verify, models.VerifyMany,
          models.Decapsulate]
OPERATIONS = ["sign", "verify", "sign-many", "verify-many", "encapsulate", "decapsulate", "disable"]
ERROR_STATUSES = {400, 401, 403, 404, 409, 413, 422, 429}


def _text(fdp) -> str:
    return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 48)).decode("latin-1")


def _path(fdp) -> str:
    choice = fdp.ConsumeIntInRange(0, 3)
    operation = OPERATIONS[fdp.ConsumeIntInRange(0, len(OPERATIONS) - 1)]
    if choice == 0:
        return f"/v1/{operation}"
    if choice == 3:
        return _text(fdp)
    key_id = SIGNING.id if choice == 1 and fdp.ConsumeIntInRange(0, 1) else KEM.id if choice == 1 else _text(fdp)
    return f"/v1/keys/{key_id}/{operation}"


def _headers(fdp) -> list:
    headers = []
    for _ in range(fdp.ConsumeIntInRange(0, 4)):
        name = [b"authorization", b"content-type", b"content-length", b"x-other"][fdp.ConsumeIntInRange(0, 3)]
        value = [f"Bearer {ADMIN}".encode(), f"Bearer {VERIFY}".encode(), b"application/json",
                 None][fdp.ConsumeIntInRange(0, 3)]
        headers.append((name, value if value is not None else fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 32))))
    return headers


def _check_answer(operation, key_id, body: bytes, status: int, answer) -> None:
    assert status != 500, "an internal error"
    if status != 200:
        assert status in ERROR_STATUSES, f"status {status}"
        error = json.loads(answer.body)["error"]
        assert set(error) == {"kind", "message", "field"} and error["kind"] != "internal"
        return
    reply = json.loads(answer)
    if operation == "sign":
        PUBLIC.verify(base64.b64decode(reply["signature"]), models.Sign.model_validate_json(body).message)
    elif operation == "sign-many":
        messages = models.SignMany.model_validate_json(body).messages
        assert len(reply["signatures"]) == len(messages)
        for signature, message in zip(reply["signatures"], messages):
            PUBLIC.verify(base64.b64decode(signature), message)
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
    body = fdp.ConsumeBytes(fdp.remaining_bytes())      # the front of the input: a seed's JSON
    for mark, value in STAND_INS:
        body = body.replace(mark, value)

    try:
        parsed = model.model_validate_json(body)
    except ValidationError:
        pass
    else:
        assert model.model_validate_json(parsed.model_dump_json()) == parsed, "a model's dump validates otherwise"

    authorization, content_type, length = request_headers(headers)
    route("POST", path)
    hot = FastPath.answers("POST", path)
    if hot is None:
        return

    async def read_body():
        return None if len(body) > SETTINGS.max_body_bytes else body

    status, answer = LOOP.run_until_complete(FAST.respond(*hot, authorization, content_type, length, read_body))
    _check_answer(hot[0], hot[1], body, status, answer)


if __name__ == "__main__":
    common.main(test_one_input)
