"""What every request of the service goes through: the ``Service`` object (store, keys, tokens,
batching), the caller it finds (``Principal``) and the one mapping from exceptions to the JSON
error answers, which the routes and the middleware share."""

from __future__ import annotations

import asyncio
import base64
import functools
import hashlib
import logging
import os
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..errors import PQForgeError
from ..jit.cache import JIT_CACHE
from ..mayo.engine import cpu_threads
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

READY_WAIT_S = 0.05
"""How long /readyz waits for the store's ping before it answers with the latest one's result."""


class ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, field: str | None = None, headers=None):
        super().__init__(message)
        self.status, self.kind, self.field, self.headers = status, kind, field, headers


class ClientGone(Exception):
    """The client closed the connection while its request waited for a batch."""


def error_answer(status: int, kind: str, message: str, field: str | None = None, headers=None) -> JSONResponse:
    body = {"error": {"kind": kind, "message": message, "field": field}}
    return JSONResponse(body, status_code=status, headers=headers)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class CoreShare:
    """Threads for each batch call: ``fixed`` where the settings name a count, else the cores
    divided among the batch calls running at that moment (one call alone takes them all). Two
    many-message requests at once, each on every core, had four threads contend for two cores
    and computed about a tenth slower than one thread each."""

    def __init__(self, cores: int, fixed: int | None):
        self.cores, self.fixed = cores, fixed
        self.running = 0
        self._lock = threading.Lock()

    @contextmanager
    def threads(self):
        with self._lock:
            self.running += 1
            count = self.fixed or max(1, self.cores // self.running)
        try:
            yield count
        finally:
            with self._lock:
                self.running -= 1


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
        self.batches_here = submit is None      # jobs may go to self.batcher directly
        self.warmed = threading.Event()
        self.rest_compile: subprocess.Popen | None = None    # the background compile (``warm_up``)
        self.stopping = threading.Event()       # set at shutdown: warm-up goes no further
        self._ping: asyncio.Future | None = None        # the store's latest ping (``store_reachable``)
        self._store_ok = False
        self._helper_lock = threading.Lock()
        self.drained = threading.Event()    # set once shutdown finished the queued requests
        self._tokens: dict[str, tuple[float, str, list]] = {}
        self.cores = CoreShare(cpu_threads(), settings.compute_threads)

    # --- blocking helpers, run in worker threads -----------------------------------------------
    def warm_up(self) -> None:
        """Compile what requests take (each algorithm's ``warm_up_serving``), then turn ready; the
        rest of each algorithm's paths (``pqforge precompile``) follows in a helper at low
        priority. Both compile in helper processes (``pqforge precompile``): a compile holds the
        GIL for up to about 0.4 s at a time, which in this process would stall the event loop
        and so /healthz and /readyz; this process then loads the served paths from the cache.
        A request for a path not compiled yet compiles it, or waits for it: nothing fails."""
        names = sorted(set(self.settings.warm_up) | self._stored_algorithms())
        algs = [a for n in names for a in ("--alg", n)]
        if names and JIT_CACHE:
            helper = self._helper(["-m", "pqforge.cli", "precompile", "--serving", *algs])
            if helper is not None:
                log.info("compiling the served paths of %s in a helper process (pid %d)", ", ".join(names), helper.pid)
                started = time.monotonic()
                if helper.wait() != 0:
                    if self.stopping.is_set():
                        return
                    log.warning("the helper compiling the served paths ended with status %d; compiling them here",
                                helper.returncode)
                else:
                    log.info("compiled the served paths of %s in %.1f s", ", ".join(names), time.monotonic() - started)
        for name in names:
            if self.stopping.is_set():
                return
            started = time.monotonic()
            algorithm(name, "warm_up").warm_up_serving()
            log.info("warmed up %s for serving in %.1f s", name, time.monotonic() - started)
        if names and self.settings.compile_rest and JIT_CACHE:
            self.rest_compile = self._helper(["-m", "pqforge.cli", "precompile", *algs], nice=10)
            if self.rest_compile is not None:
                log.info("compiling the other paths of %s in the background (pid %d)", ", ".join(names),
                         self.rest_compile.pid)
        self.warmed.set()

    def _stored_algorithms(self) -> set:
        try:
            return set(self.store.key_algorithms())
        except StoreUnavailable:
            log.warning("store unavailable at start; warming up only the configured algorithms")
            return set()

    def compiling(self) -> bool:
        """Whether the background compile of the other paths is still running (its helper's own
        thread reaps it as it ends: ``units.start_helper``)."""
        return self.rest_compile is not None and self.rest_compile.returncode is None

    def _helper(self, args: list, nice: int = 0) -> subprocess.Popen | None:
        """A helper process running pqforge with ``args`` (``units.start_helper``), unless the
        service is stopping."""
        from ..jit import units
        with self._helper_lock:
            return None if self.stopping.is_set() else units.start_helper(args, nice)

    def stop_helpers(self) -> None:
        """End every helper process of this service, and start none any more: at shutdown."""
        with self._helper_lock:
            self.stopping.set()
        units = sys.modules.get("pqforge.jit.units")       # (imported only where something compiles)
        if units is not None:
            units.stop_helpers()

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
        with self.cores.threads() as threads:
            signatures = sk.sign_many(messages, backend=self.settings.backend, threads=threads)
        now = time.time()
        self.store.audit([(now, t, key_id, "sign", hashlib.sha256(m).hexdigest()) for m, t in items])
        return signatures

    def verify_batch(self, pk, items) -> list[bool]:
        with self.cores.threads() as threads:
            return pk.verify_many([m for m, _ in items], [s for _, s in items], backend=self.settings.backend,
                                  threads=threads).tolist()

    # --- async helpers ---------------------------------------------------------------------------
    async def batched(self, receive, queue_key: tuple, payload, run):
        """This request's own result from a batch; ``receive`` is the request's ASGI receive channel,
        watched for the client hanging up when requests may wait long (see WATCH_HANGUP_FROM_MS),
        or None where a hang-up cancels the request's task instead (``protocol.ServiceProtocol``)."""
        try:
            future = self.submit(queue_key, payload, run)
        except QueueFull as exc:
            retry = max(1, round(exc.retry_after_s + 0.5))
            raise ApiError(429, "queue_full", f"too many requests waiting for {queue_key[0]}; retry later",
                           headers={"Retry-After": str(retry)}) from None
        if receive is None or self.settings.max_wait_ms < WATCH_HANGUP_FROM_MS:
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

    async def store_reachable(self) -> bool:
        """Whether the store answers (for /readyz): a ping in a worker thread, waited for at most
        ``READY_WAIT_S``. One that takes longer (the store busy with other writes, or a first
        connection creating the database) leaves the answer of the latest ping that ended (False
        before any), and later calls wait on it rather than queue another: readiness stays cheap."""
        if self._ping is None or self._ping.done():
            self._ping = asyncio.ensure_future(run_in_threadpool(self._ping_store))
        try:
            return await asyncio.wait_for(asyncio.shield(self._ping), READY_WAIT_S)
        except asyncio.TimeoutError:
            return self._store_ok

    def _ping_store(self) -> bool:
        try:
            self.store.ping()
            self._store_ok = True
        except StoreUnavailable:
            self._store_ok = False
        return self._store_ok

    async def principal(self, header: str | None) -> Principal:
        """The caller; the token cache answers without leaving the event loop while it is fresh."""
        return self.authenticate(header, cached_only=True) or await run_in_threadpool(self.authenticate, header)

    async def usable_key(self, key_id: str, kind: str):
        """The key's record; from memory while fresh, else read from the store in a worker thread."""
        return self.keys.usable(key_id, kind, cached_only=True) or \
            await run_in_threadpool(self.keys.usable, key_id, kind)

    # --- single-message requests: a job for the batcher, then its answer -----------------------
    # A job is (queue key, payload, batch function, answer of the batch's result); ``None`` where
    # ``cached_only`` and the store must be read first. The HTTP protocol submits jobs itself,
    # without a task per request (``protocol.ServiceProtocol``); ``sign_one`` and ``verify_one``
    # are the same requests as coroutines, for every other way in.
    def sign_job(self, key_id: str, body: models.Sign, who: Principal, cached_only: bool = False):
        """The job of one single-message signing request."""
        who.require(f"sign:{key_id}")
        if self.keys.usable(key_id, "signature", cached_only) is None:
            return None
        return ("sign", key_id), (body.message, who.token_id), functools.partial(self.sign_batch, key_id), \
            signature_answer

    def verify_job(self, body: models.Verify, who: Principal, cached_only: bool = False):
        """The job of one single-message verification request, or its answer (bytes) where no
        batch is needed: a signature of the wrong length is not valid, as the library answers."""
        if not self.settings.public_verify:
            who.require("verify")
        found = self.public_key_for(body, cached_only)
        if found is None:
            return None
        key_ref, pk = found
        if len(body.signature) != pk.algorithm.signature_size:
            return verdict_answer(False)
        queue_key = ("verify", key_ref or (pk.algorithm.name, pk.public_bytes_raw()))
        return queue_key, (body.message, body.signature), functools.partial(self.verify_batch, pk), verdict_answer

    async def sign_one(self, key_id: str, body: models.Sign, who: Principal, receive) -> bytes:
        """The JSON answer to one single-message signing request."""
        job = self.sign_job(key_id, body, who, True) or await run_in_threadpool(self.sign_job, key_id, body, who)
        return await self._answer_job(job, receive)

    async def verify_one(self, body: models.Verify, who: Principal, receive) -> bytes:
        """The JSON answer to one single-message verification request."""
        job = self.verify_job(body, who, True) or await run_in_threadpool(self.verify_job, body, who)
        return await self._answer_job(job, receive)

    async def _answer_job(self, job, receive) -> bytes:
        if isinstance(job, bytes):
            return job
        queue_key, payload, run, answer = job
        return answer(await self.batched(receive, queue_key, payload, run))

    async def sign_many(self, key_id: str, body: models.SignMany, who: Principal) -> bytes:
        """The JSON answer to one many-message signing request: its messages are a batch of their own."""
        who.require(f"sign:{key_id}")
        self.check_count(len(body.messages), "messages")
        items = [(m, who.token_id) for m in body.messages]
        signatures = await asyncio.get_running_loop().run_in_executor(self.executor, self.sign_batch, key_id, items)
        self.metrics.observe_batch("sign-many", len(items), self.batcher.depth())
        return b'{"signatures":[%s]}' % b",".join([b'"%s"' % base64.b64encode(s) for s in signatures])

    async def verify_many(self, body: models.VerifyMany, who: Principal) -> bytes:
        """The JSON answer to one many-message verification request: a batch of its own."""
        if not self.settings.public_verify:
            who.require("verify")
        self.check_count(len(body.messages), "messages")
        if len(body.signatures) != len(body.messages):
            raise ApiError(422, "invalid", f"signatures: expected one per message ({len(body.messages)}), "
                                           f"got {len(body.signatures)}", "signatures")
        _, pk = self.public_key_for(body, cached_only=True) or await run_in_threadpool(self.public_key_for, body)
        # a signature of the wrong length is not valid (false in its place), as in the library
        valid = await asyncio.get_running_loop().run_in_executor(
            self.executor, self.verify_batch, pk, list(zip(body.messages, body.signatures)))
        return b'{"valid":[%s]}' % b",".join([b"true" if v else b"false" for v in valid])

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


def signature_answer(signature: bytes) -> bytes:
    return b'{"signature":"%s"}' % base64.b64encode(signature)


def verdict_answer(valid: bool) -> bytes:
    return b'{"valid":true}' if valid else b'{"valid":false}'


async def _disconnected(receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def json_media(content_type: str | None) -> bool:
    """Whether a Content-Type declares JSON (or is absent or empty), as FastAPI decides before
    parsing a body (with ``strict_content_type`` off, ``app.create_app``)."""
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))


def bad_body(content_type: str | None) -> ApiError:
    """The 400 for a body that is not a JSON object; when the request declared another media
    type, that is the reason and the message says so."""
    if not json_media(content_type):
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
        return error_answer(exc.status, exc.kind, str(exc), exc.field, exc.headers)
    if isinstance(exc, (RequestValidationError, ValidationError)):
        first = exc.errors()[0]
        loc = [str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path")]
        field = ".".join(loc) or "body"
        # no JSON object: a body that is not JSON, another JSON value, or none at all
        if first.get("type") == "json_invalid" or (field == "body" and first.get("type") in
                                                   ("model_attributes_type", "dict_type", "model_type", "missing")):
            return error_response(service, bad_body(content_type), method, path)
        message = first.get("msg", "invalid").removeprefix("Value error, ")
        if first.get("type") == "missing":
            message = "required field is missing"
        elif first.get("type") == "extra_forbidden":
            message = "unexpected field"
        count("invalid").inc()
        return error_answer(422, "invalid", f"{field}: {message}", field)
    if isinstance(exc, KeyUnusable):
        count(exc.kind).inc()
        return error_answer(exc.status, exc.kind, str(exc), "key_id")
    if isinstance(exc, StoreUnavailable):
        count("store_unavailable").inc()
        log.warning("%s", exc)
        return error_answer(503, "store_unavailable", "the key store is unavailable; retry later",
                      headers={"Retry-After": "1"})
    if isinstance(exc, PQForgeError):
        count("invalid").inc()
        message = str(exc)
        field = message.split(":", 1)[0] if re.match(r"^[a-z_]+:", message) else None
        return error_answer(422, "invalid", message, field)
    if isinstance(exc, StarletteHTTPException) and exc.status_code == 400:
        # FastAPI's own 400: a body it could not parse (not UTF-8), which FastPath calls bad_json too
        return error_response(service, bad_body(content_type), method, path)
    if isinstance(exc, StarletteHTTPException):
        kind = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "bad_request")
        message = {"not_found": f"no route {method} {path}; the routes are listed at /docs",
                   "method_not_allowed": f"{path} does not take {method}; the routes are listed at /docs",
                   }.get(kind, str(exc.detail))
        return error_answer(exc.status_code, kind, message, headers=exc.headers)
    if isinstance(exc, ClientGone):
        count("client_gone").inc()
        return Response(status_code=499)
    count("internal").inc()
    log.error("internal error %s in %s %s", type(exc).__name__, method, path)
    return error_answer(500, "internal", "internal error")
