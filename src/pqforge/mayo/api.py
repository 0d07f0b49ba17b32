"""The functional layer over byte strings (the NIST API shape), with input validation.

    pk, sk = keypair(MAYO_2)                 # compact encodings
    sig = sign(MAYO_2, sk, msg)              # sk compact or expanded
    ok = verify(MAYO_2, pk, msg, sig)        # pk compact or expanded
    sm = sign_nist(MAYO_2, sk, msg); msg = open_nist(MAYO_2, pk, sm)

``params`` is a parameter set, an algorithm object (``MAYO2``) or a name ("MAYO-2").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Union

from ..algorithms import lookup
from ..drbg import Rng
from ..engine.inputs import checked_rng
from ..errors import InvalidInput, InvalidKey, InvalidSignature, InvalidType, BytesLike, require_bytes
from . import scheme
from .params import ROUND2, MayoParams

if TYPE_CHECKING:
    from .keys import MayoAlgorithm

ParamsLike = Union[MayoParams, "MayoAlgorithm", str]
"""A MAYO parameter set, its algorithm object (``MAYO2``) or its name ("MAYO-2")."""

_BY_NAME = {p.name: p for p in ROUND2}


def resolve(params: ParamsLike) -> MayoParams:
    if isinstance(params, MayoParams):
        return params
    inner = getattr(params, "params", None)
    if isinstance(inner, MayoParams):
        return inner
    if isinstance(params, str):
        found: MayoParams = lookup(_BY_NAME, params, "MAYO parameter set")
        return found
    raise InvalidType(f"params must be a MAYO parameter set, algorithm or name, not {type(params).__name__}")


def _check_key(p: MayoParams, key: BytesLike, what: str, compact: int, expanded: int) -> bytes:
    key = require_bytes(key, f"{p.name} {what} key")
    if len(key) not in (compact, expanded):
        raise InvalidKey(f"{p.name} {what} key must be {compact} bytes (compact) or {expanded} bytes "
                         f"(expanded), got {len(key)}")
    return key


def check_secret_key(p: MayoParams, sk: BytesLike) -> bytes:
    return _check_key(p, sk, "secret", p.csk_bytes, p.esk_bytes)


def check_public_key(p: MayoParams, pk: BytesLike) -> bytes:
    return _check_key(p, pk, "public", p.cpk_bytes, p.epk_bytes)




def expanded_secret(p: MayoParams, sk: bytes) -> scheme.ExpandedSecretKey:
    return scheme.expand_sk(p, sk) if len(sk) == p.csk_bytes else scheme.decode_esk(p, sk)


def expanded_public(p: MayoParams, pk: bytes) -> scheme.ExpandedPublicKey:
    return scheme.expand_pk(p, pk) if len(pk) == p.cpk_bytes else scheme.decode_epk(p, pk)


def keypair(params: ParamsLike, rng: Rng | None = None) -> tuple[bytes, bytes]:
    """(pk, sk) in compact form: pk is cpk_bytes long, sk is the seed (csk_bytes)."""
    p = resolve(params)
    return scheme.compact_keygen(p, checked_rng(rng))


def expand_sk(params: ParamsLike, sk: BytesLike) -> bytes:
    p = resolve(params)
    sk = require_bytes(sk, f"{p.name} compact secret key", p.csk_bytes, InvalidKey)
    return scheme.expand_sk_bytes(p, sk)


def expand_pk(params: ParamsLike, pk: BytesLike) -> bytes:
    p = resolve(params)
    pk = require_bytes(pk, f"{p.name} compact public key", p.cpk_bytes, InvalidKey)
    return scheme.expand_pk_bytes(p, pk)


def sign(params: ParamsLike, sk: BytesLike, msg: BytesLike, rng: Rng | None = None) -> bytes:
    p = resolve(params)
    sk = check_secret_key(p, sk)
    msg = require_bytes(msg, "message")
    return scheme.sign(p, expanded_secret(p, sk), msg, checked_rng(rng))


def verify(params: ParamsLike, pk: BytesLike, msg: BytesLike, sig: BytesLike) -> bool:
    """Whether ``sig`` is a valid signature of ``msg``; a signature of the wrong length is just
    not valid (False). A malformed key or a wrong type raises."""
    p = resolve(params)
    pk = check_public_key(p, pk)
    msg = require_bytes(msg, "message")
    sig = require_bytes(sig, f"{p.name} signature")
    return len(sig) == p.sig_bytes and bool(scheme.verify(p, expanded_public(p, pk), msg, sig))


def sign_nist(params: ParamsLike, sk: BytesLike, msg: BytesLike, rng: Rng | None = None) -> bytes:
    """The NIST API's signed message: signature || message."""
    return sign(params, sk, msg, rng) + require_bytes(msg, "message")


def open_nist(params: ParamsLike, pk: BytesLike, sm: BytesLike) -> bytes:
    """The message of a NIST signed message; InvalidSignature when it does not verify."""
    p = resolve(params)
    sm = require_bytes(sm, f"{p.name} signed message")
    if len(sm) < p.sig_bytes:
        raise InvalidSignature(f"{p.name} signed message must be at least {p.sig_bytes} bytes, got {len(sm)}")
    msg = sm[p.sig_bytes:]
    if not verify(p, pk, msg, sm[:p.sig_bytes]):
        raise InvalidSignature(f"{p.name} signed message does not verify under this public key")
    return msg
