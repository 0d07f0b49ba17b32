"""The service's pure ASGI layers in front of FastAPI: ``FastPath`` answers single-message sign and
verify requests in one coroutine, ``Guard`` limits bodies and records each request's metrics,
``TokenFirst`` answers 401 before a body is read. One route table (``route``) names the
operation of a request for all of them."""

from __future__ import annotations

import re
import time

from starlette.concurrency import run_in_threadpool

from . import models
from .core import ClientGone, Service, bad_body, error_answer, error_response, json_media


_ROUTE = re.compile(r"^/v1/(?:keys/([^/]+)/)?([a-z-]+)$")
_OPERATIONS = {"sign", "sign-many", "verify", "verify-many", "encapsulate", "decapsulate", "disable"}
_KEY_OPERATIONS = {"GET": "get-key", "POST": "create-key", "DELETE": "destroy-key"}


def route(method: str, path: str) -> tuple[str, str | None]:
    """(operation, key id or None) of a request, for the metrics (the operation is a label from
    a small fixed set, never a key id or any other part of the path) and for ``FastPath``."""
    match = _ROUTE.match(path)
    if match and match.group(2) in _OPERATIONS:
        return match.group(2), match.group(1)
    if path == "/v1/keys":
        return ("list-keys" if method == "GET" else "create-key"), None
    if path.startswith("/v1/keys/") and path.count("/") == 3:
        return _KEY_OPERATIONS.get(method, "other"), path[len("/v1/keys/"):]
    return (path[1:] if path in ("/healthz", "/readyz", "/metrics") else "other"), None


class Guard:
    """Pure ASGI middleware, in front of everything: body-size limit (413) and per-operation metrics."""

    def __init__(self, app, service: Service):
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.service.settings.max_body_bytes
        metrics = self.service.metrics
        operation, _ = route(scope["method"], scope["path"])
        status = [500]      # until a response starts
        refused = [False]   # Guard answered 413 itself
        started = time.perf_counter()

        async def refuse(message: str):
            await error_answer(413, "too_large", message, "body")(scope, receive, send)
            status[0], refused[0] = 413, True

        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                await refuse(f"body: at most {limit} bytes, got {int(value)}")
                metrics.record(operation, 413, time.perf_counter() - started)
                return
        seen = [0]

        async def limited_receive():
            message = await receive()
            if message["type"] == "http.request" and not refused[0]:
                seen[0] += len(message.get("body", b""))
                if seen[0] > limit:     # a chunked body grew past the limit: answer 413 now
                    await refuse(f"body: at most {limit} bytes")
                    return {"type": "http.disconnect"}
            return message

        async def guarded_send(message):
            if refused[0]:              # the app's own answer after Guard's 413 is dropped
                return
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, limited_receive, guarded_send)
        finally:
            metrics.record(operation, status[0], time.perf_counter() - started)


_JSON_HEADERS = [(b"content-type", b"application/json")]
PRINCIPAL = "pqforge.principal"     # the scope entry where TokenFirst leaves the caller


def _header(scope, name: bytes) -> str | None:
    return next((v.decode("latin-1") for k, v in scope["headers"] if k == name), None)


class TokenFirst:
    """Pure ASGI middleware: a /v1/ request that needs a token gets its 401 (no token, an unknown
    or revoked one) before anything reads its body, so that every unauthenticated request has
    the same answer whatever its content (only Guard's 413 for a declared size over the limit
    comes first); the caller it finds is left in the scope for the routes."""

    def __init__(self, app, service: Service):
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send):
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/v1/") and not (
                self.service.settings.public_verify and path in ("/v1/verify", "/v1/verify-many")):
            try:
                who = await self.service.principal(_header(scope, b"authorization"))
                who.require_token()
            except Exception as exc:
                return await error_response(self.service, exc, scope["method"], path)(scope, receive, send)
            scope[PRINCIPAL] = who
        await self.app(scope, receive, send)


# (operation, without a key id in the path) of the requests FastPath answers
_FAST = {("sign", False), ("verify", True), ("sign-many", False), ("verify-many", True)}


class FastPath:
    """Pure ASGI app in front of everything, answering the hot path, the sign and verify requests
    (single- and many-message): without Guard and TokenFirst as layers, and without FastAPI's
    routing, dependency and response machinery (together they cost more than the signing itself
    per request). The same checks in the same order (body size, token, body size again for a body
    of unannounced length, Content-Type, the same pydantic models), the same batching, error
    answers and metrics; the FastAPI routes keep documenting these endpoints. Every other request
    goes on to ``app`` (Guard, TokenFirst, FastAPI).

    ``respond`` is the hot path itself, apart from HTTP: the service's own HTTP protocol
    (``protocol.ServiceProtocol``) calls it directly, without an ASGI request at all."""

    def __init__(self, app, service: Service):
        self.app, self.service = app, service

    @staticmethod
    def answers(method: str, path: str) -> tuple[str, str | None] | None:
        """(operation, key id or None) of a request that FastPath answers; None for any other."""
        if method != "POST":
            return None
        operation, key_id = route("POST", path)
        return (operation, key_id) if (operation, key_id is None) in _FAST else None

    async def __call__(self, scope, receive, send):
        hot = scope["type"] == "http" and self.answers(scope["method"], scope["path"])
        if not hot:
            return await self.app(scope, receive, send)
        authorization, content_type, length = request_headers(scope["headers"])
        limit = self.service.settings.max_body_bytes

        async def read_body() -> bytes | None:
            body = b""
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    raise ClientGone()
                body += message.get("body", b"")
                if len(body) > limit:
                    return None
                if not message.get("more_body"):
                    return body

        status, answer = await self.respond(*hot, authorization, content_type, length, read_body, receive)
        if isinstance(answer, bytes):
            await send({"type": "http.response.start", "status": 200,
                        "headers": _JSON_HEADERS + [(b"content-length", b"%d" % len(answer))]})
            await send({"type": "http.response.body", "body": answer})
        else:
            await answer(scope, receive, send)

    async def respond(self, operation: str, key_id: str | None, authorization: str | None,
                      content_type: str | None, length: int | None, read_body, receive=None):
        """(status, answer) of one hot-path request, its metrics recorded: the answer is the JSON
        body of a 200, or an error Response. ``length`` is the declared Content-Length (None when
        absent); ``read_body()`` gives the body, or None when it grew past the limit; ``receive``,
        where there is one, is watched for the client hanging up while the request waits long."""
        started = time.perf_counter()
        try:
            answer = await self._answer(operation, key_id, authorization, content_type, length, read_body, receive)
            status = 200 if isinstance(answer, bytes) else answer.status_code
        except Exception as exc:
            status, answer = self.error(exc, operation, key_id)
        self.service.metrics.record(operation, status, time.perf_counter() - started)
        return status, answer

    def error(self, exc: BaseException, operation: str, key_id: str | None):
        """(status, error Response) of a hot-path request that raised ``exc``."""
        path = f"/v1/keys/{key_id}/{operation}" if key_id is not None else f"/v1/{operation}"
        answer = error_response(self.service, exc, "POST", path)
        return answer.status_code, answer

    def job_now(self, operation: str, key_id: str | None, authorization: str | None, content_type: str | None,
                body: bytes | None):
        """The job of a single-message sign or verify request whose body has come (None: grew past
        the limit), or its answer (bytes), as ``Service.sign_job`` and ``verify_job`` make them,
        when that needs nothing from the store; else None, and ``respond`` answers the request,
        its errors included (the checks here are those of ``_answer``, in its order)."""
        service = self.service
        try:
            who = service.authenticate(authorization, cached_only=True)
            if who is None or body is None or not json_media(content_type):
                return None
            if key_id is not None or not service.settings.public_verify:
                who.require_token()
            if operation == "sign":
                return service.sign_job(key_id, models.Sign.model_validate_json(body), who, cached_only=True)
            return service.verify_job(models.Verify.model_validate_json(body), who, cached_only=True)
        except Exception:       # the error answer comes from ``respond``, which makes them all
            return None

    async def _answer(self, operation, key_id, authorization, content_type, length, read_body, receive):
        service = self.service
        limit = service.settings.max_body_bytes
        if length is not None and length > limit:
            return error_answer(413, "too_large", f"body: at most {limit} bytes, got {length}", "body")
        # the token before the body: an unauthenticated request gets 401 whatever its content
        who = service.authenticate(authorization, cached_only=True) or \
            await run_in_threadpool(service.authenticate, authorization)
        if key_id is not None or not service.settings.public_verify:
            who.require_token()
        body = await read_body()
        if body is None:      # a body of unannounced length grew past the limit
            return error_answer(413, "too_large", f"body: at most {limit} bytes", "body")
        if not json_media(content_type):
            raise bad_body(content_type)
        if operation == "sign":
            return await service.sign_one(key_id, models.Sign.model_validate_json(body), who, receive)
        if operation == "verify":
            return await service.verify_one(models.Verify.model_validate_json(body), who, receive)
        if operation == "sign-many":
            return await service.sign_many(key_id, models.SignMany.model_validate_json(body), who)
        return await service.verify_many(models.VerifyMany.model_validate_json(body), who)


def request_headers(headers) -> tuple[str | None, str | None, int | None]:
    """(Authorization, Content-Type, Content-Length) of a request's (lower-case name, value) headers,
    the first of each; a Content-Length that is not a number counts as absent (the HTTP parser
    has refused such a request already)."""
    authorization = content_type = length = None
    for name, value in headers:
        if name == b"authorization":
            if authorization is None:
                authorization = value.decode("latin-1")
        elif name == b"content-type":
            if content_type is None:
                content_type = value.decode("latin-1")
        elif name == b"content-length" and length is None and value.isdigit():
            length = int(value)
    return authorization, content_type, length
