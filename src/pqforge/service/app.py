"""The FastAPI application: the routes under /v1, the lifespan (warm-up, draining) and the layers
in front of them (``middleware``)."""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
import inspect
import re
import threading
import time
from contextlib import asynccontextmanager

from fastapi import Depends, FastAPI, Query, Request, Security
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from .._memory import retain_freed_heap
from ..errors import PQForgeError
from . import models
from .config import Settings
from .core import ApiError, ClientGone, Principal, Service, b64, error_response, log
from .keys import KeyUnusable, algorithm
from .middleware import PRINCIPAL, FastPath, Guard, TokenFirst
from .store import StoreUnavailable


def _key_info(record) -> dict:
    info = record.public_dict()
    info["public_key"] = b64(record.public_key)
    return info


class _ServiceApp(FastAPI):
    """FastAPI behind FastPath, Guard and TokenFirst: the hot path skips FastAPI's own per-request layers too
    (its telemetry check, error and body-limit middlewares), not only routing and validation."""

    fast_path = None      # the FastPath in front; the service's HTTP protocol finds it here

    async def __call__(self, scope, receive, send):
        await self.fast_path(scope, receive, send)


# A JSON body with no Content-Type is JSON on every route, as documented and as FastPath reads it
# (``core.json_media``); FastAPI's routes refuse it by default since FastAPI added this option.
# Every route that acts on a key needs a token in the Authorization header, which a cross-site
# request cannot send unless the server allows it (CORS), so this opens no request forgery.
_LENIENT_CONTENT_TYPE = ({"strict_content_type": False}
                         if "strict_content_type" in inspect.signature(FastAPI.__init__).parameters else {})


def create_app(settings: Settings, submit=None) -> FastAPI:
    from ..jit import cache, units
    retain_freed_heap()     # a service process (or worker, or replica) is pqforge's own
    service = Service(settings, submit)

    @asynccontextmanager
    async def lifespan(app):
        # while it serves: no compile helper outlives the service, even one killed, and compile
        # notices are log lines in the service's format (undone at the end, for a process that
        # goes on, such as a test session)
        owning, notices = units.own_helpers(), cache.NOTICE_LOG
        cache.NOTICE_LOG = log
        where = "loopback only" if settings.host in ("127.0.0.1", "::1", "localhost") else f"{settings.host}"
        log.info("store %s; master key from %s; listening on %s", _store_label(settings.store),
                 service.master_key_source, where)
        threading.Thread(target=_warm, args=(service,), name="pqforge-warm-up", daemon=True).start()
        yield
        service.stop_helpers()
        log.info("draining %d queued requests", service.batcher.depth())
        await service.batcher.drain()
        service.executor.shutdown(wait=True)
        service.store.close()
        service.drained.set()
        units.own_helpers(owning)
        cache.NOTICE_LOG = notices

    app = _ServiceApp(title="pqforge", version="1", lifespan=lifespan, **_LENIENT_CONTENT_TYPE,
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
        return request.scope.get(PRINCIPAL) or await service.principal(request.headers.get("authorization"))

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
        store_ok = await service.store_reachable()
        ready = store_ok and service.warmed.is_set()
        body = {"ready": ready, "store": store_ok, "warmed_up": service.warmed.is_set(),
                "compiling": service.compiling()}
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
    async def disable_key(key_id: str, body: models.NoFields | None = None, who: Principal = Depends(principal)):
        return await change_state(key_id, "disabled", who)

    @app.delete("/v1/keys/{key_id}", response_model=models.KeyInfo, tags=["keys"])
    async def destroy_key(key_id: str, body: models.NoFields | None = None, who: Principal = Depends(principal)):
        return await change_state(key_id, "destroyed", who)

    # --- signatures --------------------------------------------------------------------------
    # FastPath answers the four requests below; these routes document them (and serve them without it)
    @app.post("/v1/keys/{key_id}/sign", response_model=models.Signature, tags=["signatures"])
    async def sign(key_id: str, body: models.Sign, request: Request, who: Principal = Depends(principal)):
        return Response(await service.sign_one(key_id, body, who, request.receive), media_type="application/json")

    @app.post("/v1/keys/{key_id}/sign-many", response_model=models.Signatures, tags=["signatures"])
    async def sign_many(key_id: str, body: models.SignMany, who: Principal = Depends(principal)):
        return Response(await service.sign_many(key_id, body, who), media_type="application/json")

    @app.post("/v1/verify", response_model=models.Verdict, tags=["signatures"], **verify_security)
    async def verify(body: models.Verify, request: Request, who: Principal = Depends(principal)):
        return Response(await service.verify_one(body, who, request.receive), media_type="application/json")

    @app.post("/v1/verify-many", response_model=models.Verdicts, tags=["signatures"], **verify_security)
    async def verify_many(body: models.VerifyMany, who: Principal = Depends(principal)):
        return Response(await service.verify_many(body, who), media_type="application/json")

    # --- KEM -----------------------------------------------------------------------------------
    @app.post("/v1/keys/{key_id}/encapsulate", response_model=models.Encapsulation, tags=["kem"])
    async def encapsulate(key_id: str, body: models.NoFields | None = None, who: Principal = Depends(principal)):
        who.require("kem")
        record = await service.usable_key(key_id, "kem")
        pk = service.keys.public_key(record.alg, record.public_key)
        ciphertext, shared = await asyncio.get_running_loop().run_in_executor(service.executor, pk.encapsulate)
        return JSONResponse({"ciphertext": b64(ciphertext), "shared_secret": b64(shared)})

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
        return JSONResponse({"shared_secret": b64(shared)})

    app.fast_path = FastPath(Guard(TokenFirst(functools.partial(FastAPI.__call__, app), service), service), service)
    return app


def _warm(service: Service) -> None:
    try:
        service.warm_up()
    except Exception as exc:   # readiness stays red; the log says why
        log.error("warm-up failed: %s: %s", type(exc).__name__, exc)
    # The objects of the compiled kernels and the web stack live as long as the process; a full
    # garbage collection walking them all paused the event loop for about 60 ms, which was the p99
    # of single-message requests. Frozen, they are left out of every later collection. Only the
    # young generations are collected first: a full collection here held the GIL for 56 ms (240 ms
    # on a busy machine, in /readyz's answer) to free some 20 objects, which now stay frozen.
    gc.collect(1)
    gc.freeze()


def _store_label(url: str) -> str:
    """The store URL without any password."""
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)
