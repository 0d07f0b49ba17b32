"""The FastAPI application: routes under /v1, auth, dynamic batching, errors, metrics, lifespan."""

from __future__ import annotations

import asyncio
import base64
import functools
import gc
import hashlib
import logging
import os
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._memory import retain_freed_heap
from ..errors import PQForgeError
from . import models, tokens
from .batcher import Batcher, QueueFull
from .config import Settings
from .keys import KeyRing, KeyUnusable, algorithm
from .metrics import Metrics
from .sealing import Sealer, load_master_key
from .store import StoreUnavailable, open_store

log = logging.getLogger("pqforge.service")


# A request waits at most max_wait_ms in its queue before its batch is computed. Watching each
# request for a client hang-up (a task per request on the event loop) cost about a third of the
# event loop's time per single-message request in a measurement, far more than computing the few
# requests whose client leaves within a short wait; so requests are watched only when that wait
# can be long.
WATCH_HANGUP_FROM_MS = 10.0


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, field: str | None = None, headers=None):
        super().__init__(message)
        self.status, self.kind, self.field, self.headers = status, kind, field, headers


class ClientGone(Exception):
    """The client closed the connection while its request waited for a batch."""


def _error(status: int, kind: str, message: str, field: str | None = None, headers=None) -> JSONResponse:
    body = {"error": {"kind": kind, "message": message, "field": field}}
    return JSONResponse(body, status_code=status, headers=headers)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class Principal:
    __slots__ = ("token_id", "scopes")

    def __init__(self, token_id: str | None, scopes):
        self.token_id, self.scopes = token_id, scopes

    def require_token(self) -> None:
        if self.token_id is None:
            raise ApiError(401, "unauthenticated", "Authorization: expected 'Bearer <token>'", "Authorization",
                           {"WWW-Authenticate": "Bearer"})

    def require(self, scope: str) -> None:
        self.require_token()
        if not tokens.allows(self.scopes, scope):
            raise ApiError(403, "forbidden", f"this token lacks the scope {scope!r}")


class Service:
    """Everything a request needs: store, keys, batcher, metrics, settings."""

    def __init__(self, settings: Settings, submit=None):
        self.settings = settings
        self.store = open_store(settings.store)
        master_key, self.master_key_source = load_master_key(settings.master_key_path())
        self.keys = KeyRing(self.store, Sealer(master_key), settings.cache_ttl_s)
        del master_key
        self.metrics = Metrics(settings.backend)
        workers = max(2, os.cpu_count() or 1)
        self.executor = ThreadPoolExecutor(workers, thread_name_prefix="pqforge-batch")
        self.batcher = Batcher(self.executor, settings.max_batch, settings.max_wait_ms, settings.max_queue,
                               observe=self.metrics.observe_batch)
        # submit(queue key, payload, run) -> future of this payload's result; Ray Serve replicas
        # pass one built on @serve.batch instead of this process's batcher
        self.submit = submit or self.batcher.submit
        self.warmed = threading.Event()
        self.drained = threading.Event()    # set once shutdown finished the queued requests
        self._tokens: dict[str, tuple[float, str, list]] = {}
        self._compute = {"backend": settings.backend, "threads": settings.compute_threads}

    # --- blocking helpers, run in worker threads -----------------------------------------------
    def warm_up(self) -> None:
        names = set(self.settings.warm_up)
        try:
            names.update(self.store.key_algorithms())
        except StoreUnavailable:
            log.warning("store unavailable at start; warming up only the configured algorithms")
        for name in sorted(names):
            started = time.monotonic()
            algorithm(name, "warm_up").warm_up()
            log.info("warmed up %s in %.1f s", name, time.monotonic() - started)
        self.warmed.set()

    def authenticate(self, header: str | None, cached_only: bool = False) -> Principal | None:
        """The caller's Principal; with ``cached_only``, None when the store must be asked (the
        caller then repeats the call in a worker thread)."""
        if not header:
            return Principal(None, ())
        scheme, _, token = header.partition(" ")
        parsed = tokens.parse(token.strip()) if scheme.lower() == "bearer" else None
        if parsed is None:
            raise ApiError(401, "unauthenticated", "Authorization: expected 'Bearer pqf_<id>_<secret>'",
                           "Authorization", {"WWW-Authenticate": "Bearer"})
        token_id, secret = parsed
        cached = self._tokens.get(token_id)
        if cached is None or time.monotonic() - cached[0] >= self.settings.cache_ttl_s:
            if cached_only:
                return None
            row = self.store.token_hash(token_id)
            if row is None:
                self._tokens.pop(token_id, None)
                raise ApiError(401, "unauthenticated", "unknown or revoked token", "Authorization",
                               {"WWW-Authenticate": "Bearer"})
            cached = self._tokens[token_id] = (time.monotonic(), row[0], row[1])
        if not tokens.matches(cached[1], secret):
            raise ApiError(401, "unauthenticated", "unknown or revoked token", "Authorization",
                           {"WWW-Authenticate": "Bearer"})
        return Principal(token_id, cached[2])

    def sign_batch(self, key_id: str, items) -> list[bytes]:
        """items: (message, token id). Signs, writes the audit rows, then answers."""
        sk = self.keys.private_key(key_id, "signature")
        messages = [m for m, _ in items]
        signatures = sk.sign_many(messages, **self._compute)
        now = time.time()
        self.store.audit([(now, t, key_id, "sign", hashlib.sha256(m).hexdigest()) for m, t in items])
        return signatures

    def verify_batch(self, pk, items) -> list[bool]:
        return pk.verify_many([m for m, _ in items], [s for _, s in items], **self._compute).tolist()

    # --- async helpers ---------------------------------------------------------------------------
    async def batched(self, receive, queue_key: tuple, payload, run):
        """This request's own result from a batch; ``receive`` is the request's ASGI receive channel,
        watched for the client hanging up when requests may wait long (see WATCH_HANGUP_FROM_MS)."""
        try:
            future = self.submit(queue_key, payload, run)
        except QueueFull as exc:
            retry = max(1, round(exc.retry_after_s + 0.5))
            raise ApiError(429, "queue_full", f"too many requests waiting for {queue_key[0]}; retry later",
                           headers={"Retry-After": str(retry)}) from None
        if self.settings.max_wait_ms < WATCH_HANGUP_FROM_MS:
            return await future
        # a client that hangs up cancels its future, and the batcher skips cancelled futures
        gone = asyncio.get_running_loop().create_task(_disconnected(receive))
        gone.add_done_callback(lambda _: future.cancel())
        try:
            return await future
        except asyncio.CancelledError:
            if gone.done() and not gone.cancelled():
                raise ClientGone() from None
            raise
        finally:
            gone.cancel()

    async def principal(self, header: str | None) -> Principal:
        """The caller; the token cache answers without leaving the event loop while it is fresh."""
        return self.authenticate(header, cached_only=True) or await run_in_threadpool(self.authenticate, header)

    async def usable_key(self, key_id: str, kind: str):
        """The key's record; from memory while fresh, else read from the store in a worker thread."""
        return self.keys.usable(key_id, kind, cached_only=True) or \
            await run_in_threadpool(self.keys.usable, key_id, kind)

    async def sign_one(self, key_id: str, body: models.Sign, who: Principal, receive) -> bytes:
        """The JSON answer to one single-message signing request."""
        who.require(f"sign:{key_id}")
        await self.usable_key(key_id, "signature")
        signature = await self.batched(receive, ("sign", key_id), (body.message, who.token_id),
                                       lambda items: self.sign_batch(key_id, items))
        return b'{"signature":"%s"}' % base64.b64encode(signature)

    async def verify_one(self, body: models.Verify, who: Principal, receive) -> bytes:
        """The JSON answer to one single-message verification request."""
        if not self.settings.public_verify:
            who.require("verify")
        key_ref, pk = self.public_key_for(body, cached_only=True) or \
            await run_in_threadpool(self.public_key_for, body)
        if len(body.signature) != pk.algorithm.signature_size:
            return b'{"valid":false}'       # as the library answers: not a valid signature
        queue_key = ("verify", key_ref or (pk.algorithm.name, pk.public_bytes_raw()))
        valid = await self.batched(receive, queue_key, (body.message, body.signature),
                                   lambda items: self.verify_batch(pk, items))
        return b'{"valid":true}' if valid else b'{"valid":false}'

    def public_key_for(self, body: models._KeyChoice, cached_only: bool = False):
        """(key id or None, library public key) for a verify request; with ``cached_only``, None
        when the store must be asked."""
        if body.key_id is not None:
            if body.public_key is not None or body.alg is not None:
                raise ApiError(422, "invalid", "give key_id, or public_key and alg, not both", "key_id")
            record = self.keys.usable(body.key_id, "signature", cached_only)
            if record is None:
                return None
            return record.id, self.keys.public_key(record.alg, record.public_key)
        if body.public_key is None or body.alg is None:
            raise ApiError(422, "invalid", "expected key_id, or public_key and alg", "key_id")
        alg = algorithm(body.alg)
        if alg.kind != "signature":
            raise ApiError(422, "invalid", f"alg: {alg.name} is a KEM; expected a signature algorithm", "alg")
        if len(body.public_key) != alg.public_key_size:
            raise ApiError(422, "invalid", f"public_key: a {alg.name} public key is {alg.public_key_size} bytes, "
                                           f"got {len(body.public_key)}", "public_key")
        return None, self.keys.public_key(alg.name, body.public_key)

    def check_count(self, count: int, field: str) -> None:
        if count > self.settings.max_messages:
            raise ApiError(422, "too_many", f"{field}: at most {self.settings.max_messages} per request, got {count}",
                           field)


async def _disconnected(receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def _json_media(content_type: str | None) -> bool:
    """Whether a Content-Type declares JSON (or is absent), as FastAPI decides before parsing a body."""
    if content_type is None:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def _bad_body(content_type: str | None) -> ApiError:
    """The 400 for a body that is not a JSON object; when the request declared another media
    type, that is the reason and the message says so."""
    if not _json_media(content_type):
        media = content_type.split(";", 1)[0].strip()
        return ApiError(400, "bad_json", f"body: Content-Type must be application/json for a JSON body, "
                                         f"got {media!r}", "body")
    return ApiError(400, "bad_json", "body: expected a JSON object (Content-Type: application/json)", "body")


def error_response(service: Service, exc: Exception, method: str, path: str,
                   content_type: str | None = None) -> Response:
    """The JSON error answer for an exception raised while handling a request with ``content_type``."""
    count = service.metrics.errors.labels
    if isinstance(exc, ApiError):
        count(exc.kind).inc()
        return _error(exc.status, exc.kind, str(exc), exc.field, exc.headers)
    if isinstance(exc, (RequestValidationError, ValidationError)):
        first = exc.errors()[0]
        loc = [str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path")]
        field = ".".join(loc) or "body"
        if first.get("type") == "json_invalid" or (field == "body" and first.get("type") in
                                                   ("model_attributes_type", "dict_type", "model_type")):
            return error_response(service, _bad_body(content_type), method, path)
        message = first.get("msg", "invalid").removeprefix("Value error, ")
        if first.get("type") == "missing":
            message = "required field is missing"
        elif first.get("type") == "extra_forbidden":
            message = "unexpected field"
        count("invalid").inc()
        return _error(422, "invalid", f"{field}: {message}", field)
    if isinstance(exc, KeyUnusable):
        count(exc.kind).inc()
        return _error(exc.status, exc.kind, str(exc), "key_id")
    if isinstance(exc, StoreUnavailable):
        count("store_unavailable").inc()
        log.warning("%s", exc)
        return _error(503, "store_unavailable", "the key store is unavailable; retry later",
                      headers={"Retry-After": "1"})
    if isinstance(exc, PQForgeError):
        count("invalid").inc()
        message = str(exc)
        field = message.split(":", 1)[0] if re.match(r"^[a-z_]+:", message) else None
        return _error(422, "invalid", message, field)
    if isinstance(exc, StarletteHTTPException):
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
        return _error(exc.status_code, kind, str(exc.detail))
    if isinstance(exc, ClientGone):
        count("client_gone").inc()
        return Response(status_code=499)
    count("internal").inc()
    log.error("internal error %s in %s %s", type(exc).__name__, method, path)
    return _error(500, "internal", "internal error")


def _key_info(record) -> dict:
    info = record.public_dict()
    info["public_key"] = _b64(record.public_key)
    return info


_OPERATION = re.compile(r"^/v1/(?:keys/[^/]+/)?([a-z-]+)$")
_OPERATIONS = {"sign", "sign-many", "verify", "verify-many", "encapsulate", "decapsulate", "disable"}
_KEY_OPERATIONS = {"GET": "get-key", "POST": "create-key", "DELETE": "destroy-key"}


def _operation(method: str, path: str) -> str:
    """A metric label from a small fixed set (never a key id or any other part of the path)."""
    match = _OPERATION.match(path)
    if match and match.group(1) in _OPERATIONS:
        return match.group(1)
    if path == "/v1/keys":
        return "list-keys" if method == "GET" else "create-key"
    if path.startswith("/v1/keys/") and path.count("/") == 3:
        return _KEY_OPERATIONS.get(method, "other")
    return path[1:] if path in ("/healthz", "/readyz", "/metrics") else "other"


class Guard:
    """Pure ASGI middleware, in front of everything: body-size limit (413) and per-operation metrics."""

    def __init__(self, app, service: Service):
        self.app, self.service = app, service

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        limit = self.service.settings.max_body_bytes
        metrics = self.service.metrics
        operation = _operation(scope["method"], scope["path"])
        status = [500]      # until a response starts
        refused = [False]   # Guard answered 413 itself
        started = time.perf_counter()

        async def refuse(message: str):
            await _error(413, "too_large", message, "body")(scope, receive, send)
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
_PRINCIPAL = "pqforge.principal"     # the scope entry where TokenFirst leaves the caller


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
            scope[_PRINCIPAL] = who
        await self.app(scope, receive, send)


class FastPath:
    """Pure ASGI app in front of everything, answering the hot path, single-message sign and verify
    requests, in one coroutine: without Guard and TokenFirst as layers, and without FastAPI's
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
        if path == "/v1/verify":
            operation, key_id = "verify", None
        elif path.startswith("/v1/keys/") and path.endswith("/sign") and "/" not in path[9:-5] and len(path) > 14:
            operation, key_id = "sign", path[9:-5]
        else:
            return await self.app(scope, receive, send)
        service = self.service
        started = time.perf_counter()
        try:
            answer = await self._answer(scope, receive, key_id)
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

    async def _answer(self, scope, receive, key_id: str | None):
        """The answer's JSON body, or an error Response (a refused body) to send as it is."""
        service = self.service
        limit = service.settings.max_body_bytes
        authorization = content_type = None
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > limit:
                return _error(413, "too_large", f"body: at most {limit} bytes, got {int(value)}", "body")
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
                return _error(413, "too_large", f"body: at most {limit} bytes", "body")
            if not message.get("more_body"):
                break
        if not _json_media(content_type):
            raise _bad_body(content_type)
        if key_id is None:
            return await service.verify_one(models.Verify.model_validate_json(body), who, receive)
        return await service.sign_one(key_id, models.Sign.model_validate_json(body), who, receive)


class _ServiceApp(FastAPI):
    """FastAPI behind FastPath, Guard and TokenFirst: the hot path skips FastAPI's own per-request layers too
    (its telemetry check, error and body-limit middlewares), not only routing and validation."""

    front = None

    async def __call__(self, scope, receive, send):
        await self.front(scope, receive, send)


def create_app(settings: Settings, submit=None) -> FastAPI:
    retain_freed_heap()     # a service process (or worker, or replica) is pqforge's own
    service = Service(settings, submit)

    @asynccontextmanager
    async def lifespan(app):
        where = "loopback only" if settings.host in ("127.0.0.1", "::1", "localhost") else f"{settings.host}"
        log.info("store %s; master key from %s; listening on %s", _store_label(settings.store),
                 service.master_key_source, where)
        threading.Thread(target=_warm, args=(service,), name="pqforge-warm-up", daemon=True).start()
        reaper = asyncio.get_running_loop().create_task(_reap_compile_helpers())
        yield
        reaper.cancel()
        log.info("draining %d queued requests", service.batcher.depth())
        await service.batcher.drain()
        service.executor.shutdown(wait=True)
        service.store.close()
        service.drained.set()

    app = _ServiceApp(title="pqforge", version="1", lifespan=lifespan,
                  description="Post-quantum signing, verification and KEM with dynamically batched kernels.",
                  responses={401: {"model": models.Error}, 403: {"model": models.Error},
                             422: {"model": models.Error}, 503: {"model": models.Error}})
    app.state.service = service

    # Declares the token in /openapi.json; it refuses nothing (auto_error=False): TokenFirst and
    # Service.principal check the token, with the service's own error answers.
    bearer = HTTPBearer(scheme_name="bearer", bearerFormat="pqf_<id>_<secret>", auto_error=False,
                        description="an API token from `pqforge tokens create`, sent as "
                                    "`Authorization: Bearer pqf_<id>_<secret>`")

    async def principal(request: Request,
                        _: HTTPAuthorizationCredentials | None = Security(bearer)) -> Principal:
        return request.scope.get(_PRINCIPAL) or await service.principal(request.headers.get("authorization"))

    # verification without a token, when configured: the token is optional ({} is "no scheme")
    verify_security = {"openapi_extra": {"security": [{}]}} if settings.public_verify else {}

    # --- errors: one mapping from exception to answer, shared with FastPath -------------------
    async def any_error(request, exc: Exception):
        return error_response(service, exc, request.method, request.url.path,
                              request.headers.get("content-type"))

    for kind in (ApiError, RequestValidationError, KeyUnusable, StoreUnavailable, PQForgeError,
                 StarletteHTTPException, ClientGone, Exception):
        app.add_exception_handler(kind, any_error)

    # --- health and metrics ------------------------------------------------------------------
    @app.get("/healthz", tags=["health"])
    async def healthz():
        return {"status": "ok"}

    @app.get("/readyz", tags=["health"])
    async def readyz():
        try:
            await run_in_threadpool(service.store.ping)
            store_ok = True
        except StoreUnavailable:
            store_ok = False
        ready = store_ok and service.warmed.is_set()
        body = {"ready": ready, "store": store_ok, "warmed_up": service.warmed.is_set()}
        return JSONResponse(body, status_code=200 if ready else 503)

    @app.get("/metrics", tags=["health"])
    async def metrics():
        return Response(service.metrics.render(), media_type=service.metrics.content_type)

    # --- keys --------------------------------------------------------------------------------
    @app.post("/v1/keys", status_code=201, response_model=models.KeyInfo, tags=["keys"])
    async def create_key(body: models.CreateKey, who: Principal = Depends(principal)):
        who.require("admin")
        algorithm(body.alg)
        record = await asyncio.get_running_loop().run_in_executor(service.executor, service.keys.create,
                                                                   body.alg, body.label)
        log.info("key %s (%s) created by token %s", record.id, record.alg, who.token_id)
        return JSONResponse(_key_info(record), status_code=201)

    @app.get("/v1/keys", response_model=models.KeyList, tags=["keys"])
    async def list_keys(limit: int = Query(50, ge=1, le=1000), after: str | None = None,
                        who: Principal = Depends(principal)):
        who.require("admin")
        records = await run_in_threadpool(service.store.list_keys, limit + 1, after)
        more = len(records) > limit
        records = records[:limit]
        return JSONResponse({"keys": [_key_info(r) for r in records],
                             "next": records[-1].id if more else None})

    @app.get("/v1/keys/{key_id}", response_model=models.KeyInfo, tags=["keys"])
    async def get_key(key_id: str, who: Principal = Depends(principal)):
        who.require_token()                     # any valid token may read a public key
        return JSONResponse(_key_info(await run_in_threadpool(service.keys.record, key_id, True)))

    async def change_state(key_id: str, state: str, who: Principal) -> JSONResponse:
        who.require("admin")
        record = await run_in_threadpool(service.keys.set_state, key_id, state)
        log.info("key %s %s by token %s", key_id, state, who.token_id)
        return JSONResponse(_key_info(record))

    @app.post("/v1/keys/{key_id}/disable", response_model=models.KeyInfo, tags=["keys"])
    async def disable_key(key_id: str, who: Principal = Depends(principal)):
        return await change_state(key_id, "disabled", who)

    @app.delete("/v1/keys/{key_id}", response_model=models.KeyInfo, tags=["keys"])
    async def destroy_key(key_id: str, who: Principal = Depends(principal)):
        return await change_state(key_id, "destroyed", who)

    # --- signatures --------------------------------------------------------------------------
    @app.post("/v1/keys/{key_id}/sign", response_model=models.Signature, tags=["signatures"])
    async def sign(key_id: str, body: models.Sign, request: Request, who: Principal = Depends(principal)):
        # FastPath answers these requests; this route documents them (and serves them without it)
        return Response(await service.sign_one(key_id, body, who, request.receive), media_type="application/json")

    @app.post("/v1/keys/{key_id}/sign-many", response_model=models.Signatures, tags=["signatures"])
    async def sign_many(key_id: str, body: models.SignMany, who: Principal = Depends(principal)):
        who.require(f"sign:{key_id}")
        service.check_count(len(body.messages), "messages")
        items = [(m, who.token_id) for m in body.messages]
        signatures = await asyncio.get_running_loop().run_in_executor(service.executor, service.sign_batch,
                                                                       key_id, items)
        service.metrics.observe_batch("sign-many", len(items), service.batcher.depth())
        return JSONResponse({"signatures": [_b64(s) for s in signatures]})

    @app.post("/v1/verify", response_model=models.Verdict, tags=["signatures"], **verify_security)
    async def verify(body: models.Verify, request: Request, who: Principal = Depends(principal)):
        return Response(await service.verify_one(body, who, request.receive), media_type="application/json")

    @app.post("/v1/verify-many", response_model=models.Verdicts, tags=["signatures"], **verify_security)
    async def verify_many(body: models.VerifyMany, who: Principal = Depends(principal)):
        if not settings.public_verify:
            who.require("verify")
        service.check_count(len(body.messages), "messages")
        if len(body.signatures) != len(body.messages):
            raise ApiError(422, "invalid", f"signatures: expected one per message ({len(body.messages)}), "
                                           f"got {len(body.signatures)}", "signatures")
        _, pk = service.public_key_for(body, cached_only=True) or await run_in_threadpool(service.public_key_for, body)
        # a signature of the wrong length is not valid (False in its place), as in the library
        valid = await asyncio.get_running_loop().run_in_executor(
            service.executor, service.verify_batch, pk, list(zip(body.messages, body.signatures)))
        return JSONResponse({"valid": valid})

    # --- KEM -----------------------------------------------------------------------------------
    @app.post("/v1/keys/{key_id}/encapsulate", response_model=models.Encapsulation, tags=["kem"])
    async def encapsulate(key_id: str, who: Principal = Depends(principal)):
        who.require("kem")
        record = await service.usable_key(key_id, "kem")
        pk = service.keys.public_key(record.alg, record.public_key)
        ciphertext, shared = await asyncio.get_running_loop().run_in_executor(service.executor, pk.encapsulate)
        return JSONResponse({"ciphertext": _b64(ciphertext), "shared_secret": _b64(shared)})

    @app.post("/v1/keys/{key_id}/decapsulate", response_model=models.SharedSecret, tags=["kem"])
    async def decapsulate(key_id: str, body: models.Decapsulate, who: Principal = Depends(principal)):
        who.require("kem")

        def run():
            sk = service.keys.private_key(key_id, "kem")
            size = sk.algorithm.ciphertext_size
            if len(body.ciphertext) != size:
                raise ApiError(422, "invalid", f"ciphertext: a {sk.algorithm.name} ciphertext is {size} bytes, "
                                               f"got {len(body.ciphertext)}", "ciphertext")
            shared = sk.decapsulate(body.ciphertext)
            service.store.audit([(time.time(), who.token_id, key_id, "decapsulate",
                                  hashlib.sha256(body.ciphertext).hexdigest())])
            return shared
        shared = await asyncio.get_running_loop().run_in_executor(service.executor, run)
        return JSONResponse({"shared_secret": _b64(shared)})

    app.front = FastPath(Guard(TokenFirst(functools.partial(FastAPI.__call__, app), service), service), service)
    return app


def _warm(service: Service) -> None:
    try:
        service.warm_up()
    except Exception as exc:   # readiness stays red; the log says why
        log.error("warm-up failed: %s: %s", type(exc).__name__, exc)
    # The objects of the compiled kernels and the web stack live as long as the process; a full
    # garbage collection walking them all paused the event loop for about 60 ms, which was the p99
    # of single-message requests. Frozen, they are left out of every later collection.
    gc.collect()
    gc.freeze()


REAP_EVERY_S = 1.0


async def _reap_compile_helpers() -> None:
    """Reap the compile helpers (``pqforge._units``) that a first use started and that have ended
    since: otherwise each stays a zombie for as long as the server runs."""
    while True:
        await asyncio.sleep(REAP_EVERY_S)
        units = sys.modules.get("pqforge._units")     # (imported only where something compiles)
        if units is not None:
            units.reap_helpers()


def _store_label(url: str) -> str:
    """The store URL without any password."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)

