"""What MAYO's public layers share below them: the parameter-set argument, key checks, key
expansion, and what a key object is to the batch calls.

The functional layer (``api``), the key objects (``keys``) and the batch calls (``batch`` and
its backends) take these from here, so that imports run one way, from the public modules down:
keys imports api and batch, batch imports its backends, and none of them imports keys.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeGuard, Union, runtime_checkable

from ..algorithms import Algorithm, resolve_params
from ..errors import InvalidKey, require_bytes
from . import scheme
from .params import ROUND2, MayoParams

ParamsLike = Union[MayoParams, Algorithm[MayoParams], str]
"""A MAYO parameter set, its algorithm object (``MAYO2``) or its name ("MAYO-2")."""

_BY_NAME = {p.name: p for p in ROUND2}


def resolve(params: ParamsLike) -> MayoParams:
    return resolve_params(params, MayoParams, _BY_NAME, "MAYO parameter set")


# -- key bytes -----------------------------------------------------------------------------------

def _check_key(p: MayoParams, key: object, what: str, compact: int, expanded: int) -> bytes:
    if type(key) is bytes and len(key) in (compact, expanded):      # the common case, before any message
        return key
    key = require_bytes(key, f"{p.name} {what} key")
    if len(key) not in (compact, expanded):
        raise InvalidKey(f"{p.name} {what} key must be {compact} bytes (compact) or {expanded} bytes "
                         f"(expanded), got {len(key)}")
    return key


def check_secret_key(p: MayoParams, sk: object) -> bytes:
    return _check_key(p, sk, "secret", p.csk_bytes, p.esk_bytes)


def check_public_key(p: MayoParams, pk: object) -> bytes:
    return _check_key(p, pk, "public", p.cpk_bytes, p.epk_bytes)


# -- key objects ---------------------------------------------------------------------------------

@runtime_checkable
class PublicKeyObject(Protocol):
    """A MAYO public key object (``keys.MayoPublicKey``) as the batch calls use it."""

    @property
    def algorithm(self) -> Algorithm[MayoParams]: ...

    def public_bytes_raw(self) -> bytes: ...

    def expanded(self) -> scheme.ExpandedPublicKey: ...


@runtime_checkable
class PrivateKeyObject(Protocol):
    """A MAYO private key object (``keys.MayoPrivateKey``) as the batch calls use it."""

    @property
    def algorithm(self) -> Algorithm[MayoParams]: ...

    def private_bytes_raw(self) -> bytes: ...

    def expanded(self) -> scheme.ExpandedSecretKey: ...


_conforming: dict[tuple[type, type], bool] = {}


def _conforms(value: object, protocol: type[Any]) -> bool:
    """``isinstance(value, protocol)``, decided once per class: a runtime Protocol check takes
    microseconds, more than a batch element's own work (the members are the class's)."""
    key = (type(value), protocol)
    found = _conforming.get(key)
    if found is None:
        found = _conforming[key] = isinstance(value, protocol)
    return found


def is_public_key(value: object) -> TypeGuard[PublicKeyObject]:
    return _conforms(value, PublicKeyObject)


def is_private_key(value: object) -> TypeGuard[PrivateKeyObject]:
    return _conforms(value, PrivateKeyObject)


# -- expansion -----------------------------------------------------------------------------------

def expanded_secret(p: MayoParams, sk: bytes | PrivateKeyObject) -> scheme.ExpandedSecretKey:
    """The expanded form of a checked secret key: of its bytes (compact or expanded), or the
    one a key object keeps."""
    if not isinstance(sk, bytes):
        return sk.expanded()
    return scheme.expand_sk(p, sk) if len(sk) == p.csk_bytes else scheme.decode_esk(p, sk)


def expanded_public(p: MayoParams, pk: bytes | PublicKeyObject) -> scheme.ExpandedPublicKey:
    """The expanded form of a checked public key: of its bytes (compact or expanded), or the
    one a key object keeps."""
    if not isinstance(pk, bytes):
        return pk.expanded()
    return scheme.expand_pk(p, pk) if len(pk) == p.cpk_bytes else scheme.decode_epk(p, pk)
