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
    the same answer whatever its body; the caller it finds is left in the scope for the routes."""

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
    (single- and many-message), in one coroutine: without Guard and TokenFirst as layers, and without FastAPI's
    routing, dependency and response machinery (together they cost more than the signing itself
    per request). The same checks in the same order (body size, token, Content-Type, the same
    pydantic models), the same batching, error answers and metrics; the FastAPI routes keep
    documenting these endpoints. Every other request goes on to ``app`` (Guard, TokenFirst, FastAPI)."""

    def __init__(self, app, service: Service):
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        path = scope["path"]
        operation, key_id = route("POST", path)
        if (operation, key_id is None) not in _FAST:
            return await self.app(scope, receive, send)
        service = self.service
        started = time.perf_counter()
        try:
            answer = await self._answer(scope, receive, operation, key_id)
        except Exception as exc:
            answer = error_response(service, exc, "POST", path)
        if isinstance(answer, bytes):
            status = 200
            await send({"type": "http.response.start", "status": 200,
                        "headers": _JSON_HEADERS + [(b"content-length", b"%d" % len(answer))]})
            await send({"type": "http.response.body", "body": answer})
        else:
            status = answer.status_code
            await answer(scope, receive, send)
        service.metrics.record(operation, status, time.perf_counter() - started)

    async def _answer(self, scope, receive, operation: str, key_id: str | None):
        """The answer's JSON body, or an error Response (a refused body) to send as it is."""
        service = self.service
        limit = service.settings.max_body_bytes
        authorization = content_type = None
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                return error_answer(413, "too_large", f"body: at most {limit} bytes, got {int(value)}", "body")
            if name == b"authorization" and authorization is None:
                authorization = value.decode("latin-1")
            elif name == b"content-type" and content_type is None:
                content_type = value.decode("latin-1")
        # the token before the body: an unauthenticated request gets 401 whatever its body
        who = service.authenticate(authorization, cached_only=True) or \
            await run_in_threadpool(service.authenticate, authorization)
        if key_id is not None or not service.settings.public_verify:
            who.require_token()
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise ClientGone()
            body += message.get("body", b"")
            if len(body) > limit:      # a chunked body grew past the limit
                return error_answer(413, "too_large", f"body: at most {limit} bytes", "body")
            if not message.get("more_body"):
                break
        if not json_media(content_type):
            raise bad_body(content_type)
        if operation == "sign":
            return await service.sign_one(key_id, models.Sign.model_validate_json(body), who, receive)
        if operation == "verify":
            return await service.verify_one(models.Verify.model_validate_json(body), who, receive)
        if operation == "sign-many":
            return await service.sign_many(key_id, models.SignMany.model_validate_json(body), who)
        return await service.verify_many(models.VerifyMany.model_validate_json(body), who)
