"""Clients of ``pqforge serve``, with the library's method names.

    from pqforge.client import Client
    with Client("http://127.0.0.1:8000", token) as c:
        key = c.create_key("MAYO-2")
        sig = c.sign(key["id"], b"data")
        c.verify(sig, b"data", key_id=key["id"])      # None, or raises InvalidSignature
        sigs = c.sign_many(key["id"], [b"a", b"b"])
        c.verify_many([b"a", b"b"], sigs, key_id=key["id"])   # [True, True]

``AsyncClient`` has the same methods as coroutines. Errors the service answers become
``ServiceError`` (status, kind, field, message); invalid signatures raise ``InvalidSignature``
as in the library. Needs httpx (the ``serve`` extra).
"""

from __future__ import annotations

import base64

try:
    import httpx
except ImportError as exc:
    raise ImportError("pqforge.client needs httpx: pip install 'pqforge[serve]'") from exc

from . import algorithms
from .errors import InvalidSignature, PQForgeError


class ServiceError(PQForgeError):
    def __init__(self, status: int, kind: str, message: str, field: str | None = None, retry_after=None):
        super().__init__(f"{status} {kind}: {message}")
        self.status, self.kind, self.field, self.retry_after = status, kind, field, retry_after


def _b64(data: bytes) -> str:
    return base64.b64encode(bytes(data)).decode()


def _unb64(text: str) -> bytes:
    return base64.b64decode(text)


def _key_info(info: dict) -> dict:
    return {**info, "public_key": _unb64(info["public_key"])}


def _verify_body(key_id, public_key, alg) -> dict:
    if key_id is not None:
        return {"key_id": key_id}
    if public_key is None:
        raise PQForgeError("give key_id, or public_key (a key object, or bytes with alg)")
    if hasattr(public_key, "public_bytes_raw"):
        return {"public_key": _b64(public_key.public_bytes_raw()), "alg": public_key.algorithm.name}
    return {"public_key": _b64(public_key), "alg": alg}


def _answer(response: httpx.Response) -> dict:
    if response.status_code >= 400:
        try:
            error = response.json()["error"]
        except (ValueError, KeyError, TypeError):
            error = {"kind": "http", "message": response.text[:200]}
        raise ServiceError(response.status_code, error.get("kind", "http"), error.get("message", ""),
                           error.get("field"), response.headers.get("retry-after"))
    return response.json()


class _Requests:
    """Request bodies and answer decoding, shared by both clients; ``_call`` does the I/O."""

    def __init__(self, url: str, token: str | None):
        self._url = url.rstrip("/")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    @staticmethod
    def _plan_sign(key_id, data):
        return "POST", f"/v1/keys/{key_id}/sign", {"message": _b64(data)}, lambda a: _unb64(a["signature"])

    @staticmethod
    def _plan_sign_many(key_id, messages):
        return ("POST", f"/v1/keys/{key_id}/sign-many", {"messages": [_b64(m) for m in messages]},
                lambda a: [_unb64(s) for s in a["signatures"]])

    @staticmethod
    def _plan_verify(signature, data, key_id, public_key, alg):
        def check(answer):
            if not answer["valid"]:
                raise InvalidSignature("signature does not verify under this public key")
        return ("POST", "/v1/verify", {**_verify_body(key_id, public_key, alg), "message": _b64(data),
                                       "signature": _b64(signature)}, check)

    @staticmethod
    def _plan_verify_many(messages, signatures, key_id, public_key, alg):
        return ("POST", "/v1/verify-many", {**_verify_body(key_id, public_key, alg),
                                            "messages": [_b64(m) for m in messages],
                                            "signatures": [_b64(s) for s in signatures]}, lambda a: a["valid"])


class Client(_Requests):
    """Synchronous client (one connection pool; use as a context manager or call ``close()``)."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0, **httpx_options):
        super().__init__(url, token)
        self._http = httpx.Client(base_url=self._url, headers=self._headers, timeout=timeout, **httpx_options)

    def _call(self, method, path, body=None, decode=lambda a: a, params=None):
        return decode(_answer(self._http.request(method, path, json=body, params=params)))

    def close(self) -> None:
        self._http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def create_key(self, alg: str, label: str | None = None) -> dict:
        return self._call("POST", "/v1/keys", {"alg": alg, "label": label}, _key_info)

    def list_keys(self, limit: int = 50, after: str | None = None) -> dict:
        params = {"limit": limit, **({"after": after} if after else {})}
        answer = self._call("GET", "/v1/keys", params=params)
        return {"keys": [_key_info(k) for k in answer["keys"]], "next": answer["next"]}

    def get_key(self, key_id: str) -> dict:
        return self._call("GET", f"/v1/keys/{key_id}", decode=_key_info)

    def public_key(self, key_id: str):
        """The stored key's public half as a library key object (for local verification)."""
        info = self.get_key(key_id)
        return algorithms.get(info["alg"]).public_key_from_bytes(info["public_key"])

    def disable_key(self, key_id: str) -> dict:
        return self._call("POST", f"/v1/keys/{key_id}/disable", decode=_key_info)

    def destroy_key(self, key_id: str) -> dict:
        return self._call("DELETE", f"/v1/keys/{key_id}", decode=_key_info)

    def sign(self, key_id: str, data: bytes) -> bytes:
        return self._call(*self._plan_sign(key_id, data))

    def sign_many(self, key_id: str, messages) -> list[bytes]:
        return self._call(*self._plan_sign_many(key_id, messages))

    def verify(self, signature: bytes, data: bytes, key_id=None, public_key=None, alg=None) -> None:
        return self._call(*self._plan_verify(signature, data, key_id, public_key, alg))

    def verify_many(self, messages, signatures, key_id=None, public_key=None, alg=None) -> list[bool]:
        return self._call(*self._plan_verify_many(messages, signatures, key_id, public_key, alg))

    def encapsulate(self, key_id: str) -> tuple[bytes, bytes]:
        return self._call("POST", f"/v1/keys/{key_id}/encapsulate", None,
                          lambda a: (_unb64(a["ciphertext"]), _unb64(a["shared_secret"])))

    def decapsulate(self, key_id: str, ciphertext: bytes) -> bytes:
        return self._call("POST", f"/v1/keys/{key_id}/decapsulate", {"ciphertext": _b64(ciphertext)},
                          lambda a: _unb64(a["shared_secret"]))

    def ready(self) -> bool:
        return self._http.get("/readyz").status_code == 200


class AsyncClient(_Requests):
    """The same methods as ``Client``, as coroutines, on ``httpx.AsyncClient``."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 30.0, **httpx_options):
        super().__init__(url, token)
        self._http = httpx.AsyncClient(base_url=self._url, headers=self._headers, timeout=timeout, **httpx_options)

    async def _call(self, method, path, body=None, decode=lambda a: a, params=None):
        return decode(_answer(await self._http.request(method, path, json=body, params=params)))

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.aclose()

    async def create_key(self, alg: str, label: str | None = None) -> dict:
        return await self._call("POST", "/v1/keys", {"alg": alg, "label": label}, _key_info)

    async def list_keys(self, limit: int = 50, after: str | None = None) -> dict:
        params = {"limit": limit, **({"after": after} if after else {})}
        answer = await self._call("GET", "/v1/keys", params=params)
        return {"keys": [_key_info(k) for k in answer["keys"]], "next": answer["next"]}

    async def get_key(self, key_id: str) -> dict:
        return await self._call("GET", f"/v1/keys/{key_id}", decode=_key_info)

    async def public_key(self, key_id: str):
        info = await self.get_key(key_id)
        return algorithms.get(info["alg"]).public_key_from_bytes(info["public_key"])

    async def disable_key(self, key_id: str) -> dict:
        return await self._call("POST", f"/v1/keys/{key_id}/disable", decode=_key_info)

    async def destroy_key(self, key_id: str) -> dict:
        return await self._call("DELETE", f"/v1/keys/{key_id}", decode=_key_info)

    async def sign(self, key_id: str, data: bytes) -> bytes:
        return await self._call(*self._plan_sign(key_id, data))

    async def sign_many(self, key_id: str, messages) -> list[bytes]:
        return await self._call(*self._plan_sign_many(key_id, messages))

    async def verify(self, signature: bytes, data: bytes, key_id=None, public_key=None, alg=None) -> None:
        return await self._call(*self._plan_verify(signature, data, key_id, public_key, alg))

    async def verify_many(self, messages, signatures, key_id=None, public_key=None, alg=None) -> list[bool]:
        return await self._call(*self._plan_verify_many(messages, signatures, key_id, public_key, alg))

    async def encapsulate(self, key_id: str) -> tuple[bytes, bytes]:
        return await self._call("POST", f"/v1/keys/{key_id}/encapsulate", None,
                                lambda a: (_unb64(a["ciphertext"]), _unb64(a["shared_secret"])))

    async def decapsulate(self, key_id: str, ciphertext: bytes) -> bytes:
        return await self._call("POST", f"/v1/keys/{key_id}/decapsulate", {"ciphertext": _b64(ciphertext)},
                                lambda a: _unb64(a["shared_secret"]))

    async def ready(self) -> bool:
        return (await self._http.get("/readyz")).status_code == 200
