"""Stored keys as library key objects: creation, loading (secret opened once, then kept in memory
for signing), and states re-read from the store at most every ``ttl`` seconds, so a key disabled
through another replica or the command line stops working within that time."""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from collections import OrderedDict

from .. import algorithms
from ..errors import UnknownAlgorithm
from .store import KeyRecord


class KeyUnusable(Exception):
    """A key id that cannot serve this request: ``status`` 404 (unknown), 409 (not enabled) or 422 (wrong kind)."""

    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status = status
        self.kind = kind


def algorithm(name: str, field: str = "alg"):
    try:
        return algorithms.get(name)
    except UnknownAlgorithm as exc:
        raise UnknownAlgorithm(f"{field}: {exc}") from None


class KeyRing:
    def __init__(self, store, sealer, ttl: float, public_cache: int = 64):
        self.store = store
        self.sealer = sealer
        self.ttl = ttl
        self._records: dict[str, tuple[float, KeyRecord]] = {}
        self._private: dict[str, object] = {}
        self._public: OrderedDict = OrderedDict()
        self._public_cache = public_cache
        self._lock = threading.Lock()

    def create(self, alg_name: str, label: str | None = None) -> KeyRecord:
        alg = algorithm(alg_name)
        sk = alg.generate_private_key()
        key_id = "k_" + secrets.token_hex(8)
        record = KeyRecord(key_id, alg.name, alg.kind, sk.public_key().public_bytes_raw(), time.time(),
                           "enabled", label)
        self.store.add_key(record, self.sealer.seal(key_id, alg.name, sk.private_bytes_raw()))
        return record

    def record(self, key_id: str, fresh: bool = False, cached_only: bool = False) -> KeyRecord | None:
        """The key's record: from memory when younger than ``ttl`` (unless ``fresh``), else from the
        store; with ``cached_only``, None instead of asking the store."""
        now = time.monotonic()
        cached = self._records.get(key_id)
        if cached and not fresh and now - cached[0] < self.ttl:
            return cached[1]
        if cached_only:
            return None
        record = self.store.get_key(key_id)
        if record is None:
            raise KeyUnusable(404, "unknown_key", f"key_id: no key {key_id!r}")
        self._records[key_id] = (now, record)
        if record.state != "enabled":
            self._private.pop(key_id, None)
        return record

    def usable(self, key_id: str, kind: str, cached_only: bool = False) -> KeyRecord | None:
        record = self.record(key_id, cached_only=cached_only)
        if record is None:
            return None
        if record.state != "enabled":
            raise KeyUnusable(409, "key_" + record.state, f"key_id: key {key_id} is {record.state}")
        if record.kind != kind:
            raise KeyUnusable(422, "wrong_key_kind", f"key_id: key {key_id} is a {record.alg} ({record.kind}) key; "
                                                   f"expected a {kind} key")
        return record

    def private_key(self, key_id: str, kind: str):
        record = self.usable(key_id, kind)
        sk = self._private.get(key_id)
        if sk is None:
            with self._lock:
                sk = self._private.get(key_id)
                if sk is None:
                    sealed = self.store.sealed_secret(key_id)
                    if sealed is None:
                        raise KeyUnusable(409, "key_destroyed", f"key_id: key {key_id} is destroyed")
                    raw = self.sealer.open(key_id, record.alg, sealed)
                    alg = algorithm(record.alg)
                    sk = alg.private_key_from_bytes(raw)
                    if kind == "kem":   # give it the stored public half instead of recomputing it
                        sk = type(sk)(alg, raw, record.public_key)
                    self._private[key_id] = sk
        return sk

    def public_key(self, alg_name: str, raw: bytes):
        """A library public key object for (alg, bytes), kept in a small LRU so its expansion is reused."""
        cache_key = (alg_name.lower(), hashlib.sha256(raw).digest())
        with self._lock:
            pk = self._public.get(cache_key)
            if pk is not None:
                self._public.move_to_end(cache_key)
                return pk
        pk = algorithm(alg_name).public_key_from_bytes(raw)
        with self._lock:
            self._public[cache_key] = pk
            while len(self._public) > self._public_cache:
                self._public.popitem(last=False)
        return pk

    def set_state(self, key_id: str, state: str) -> KeyRecord:
        self.record(key_id, fresh=True)       # 404 for an unknown id
        self.store.set_key_state(key_id, state)
        self._private.pop(key_id, None)
        return self.record(key_id, fresh=True)
