"""The functional layer over byte strings: the NIST API's shape and the specification's argument
order (``pk, msg, sig``), with input validation.

    pk, sk = keypair(MAYO_2)                 # compact encodings
    sig = sign(MAYO_2, sk, msg)              # sk compact or expanded
    ok = verify(MAYO_2, pk, msg, sig)        # pk compact or expanded
    sm = sign_nist(MAYO_2, sk, msg); msg = open_nist(MAYO_2, pk, sm)

``params`` is a parameter set, an algorithm object (``MAYO2``) or a name ("MAYO-2").
"""

from __future__ import annotations

from ..drbg import Rng
from .engine.inputs import checked_rng
from ..errors import BytesLike, InvalidKey, InvalidSignature, require_bytes
from . import scheme
from ._checks import ParamsLike, check_public_key, check_secret_key, expanded_public, expanded_secret, resolve

__all__ = ["ParamsLike", "keypair", "expand_sk", "expand_pk", "sign", "verify", "sign_nist", "open_nist"]


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
    if type(msg) is not bytes:       # (the common case's checks inline: each call costs)
        msg = require_bytes(msg, "message")
    if type(sk) is bytes and len(sk) == p.csk_bytes:
        key = sk
    else:
        key = check_secret_key(p, sk)
    if len(key) == p.csk_bytes:
        return scheme.sign_compact(p, key, msg, checked_rng(rng))
    return scheme.sign(p, expanded_secret(p, key), msg, checked_rng(rng))


def verify(params: ParamsLike, pk: BytesLike, msg: BytesLike, sig: BytesLike) -> bool:
    """Whether ``sig`` is a valid signature of ``msg``; a signature of the wrong length is just
    not valid (False). A malformed key or a wrong type raises."""
    p = resolve(params)
    if type(pk) is bytes and len(pk) == p.cpk_bytes:    # (the common case's checks inline: each call costs)
        key = pk
    else:
        key = check_public_key(p, pk)
    if type(msg) is not bytes:
        msg = require_bytes(msg, "message")
    if type(sig) is not bytes:      # (the message names the set: built only when it may be needed)
        sig = require_bytes(sig, f"{p.name} signature")
    if len(sig) != p.sig_bytes:
        return False
    if len(key) == p.cpk_bytes:
        return scheme.verify_compact(p, key, msg, sig)
    return scheme.verify(p, expanded_public(p, key), msg, sig)


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
