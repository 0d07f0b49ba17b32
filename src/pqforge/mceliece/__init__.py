"""Classic McEliece (Round 4 submission, byte-compatible with the NIST KATs).

    from pqforge.mceliece import McEliece348864
    sk = McEliece348864.generate_private_key()
    ct, ss = sk.public_key().encapsulate()
    assert sk.decapsulate(ct) == ss

The functional layer ``keypair`` / ``encapsulate`` / ``decapsulate`` takes the parameter set
(an algorithm object, a name or a Params) first, like the NIST API.
"""

from __future__ import annotations

from typing import Union

from ..algorithms import Algorithm, lookup, resolve_params
from ..drbg import Rng
from ..errors import BytesLike
from . import scheme
from .keys import McElieceAlgorithm, McEliecePrivateKey, McEliecePublicKey
from .params import PARAMS, Params

ALGORITHMS = {name: McElieceAlgorithm(p) for name, p in PARAMS.items()}

McEliece348864 = ALGORITHMS["Classic-McEliece-348864"]
McEliece348864f = ALGORITHMS["Classic-McEliece-348864f"]
McEliece460896 = ALGORITHMS["Classic-McEliece-460896"]
McEliece460896f = ALGORITHMS["Classic-McEliece-460896f"]
McEliece6688128 = ALGORITHMS["Classic-McEliece-6688128"]
McEliece6688128f = ALGORITHMS["Classic-McEliece-6688128f"]
McEliece6960119 = ALGORITHMS["Classic-McEliece-6960119"]
McEliece6960119f = ALGORITHMS["Classic-McEliece-6960119f"]
McEliece8192128 = ALGORITHMS["Classic-McEliece-8192128"]
McEliece8192128f = ALGORITHMS["Classic-McEliece-8192128f"]


def get(name: str) -> McElieceAlgorithm:
    """The parameter set called ``name`` ("Classic-McEliece-348864"; also "mceliece348864")."""
    alg: McElieceAlgorithm = lookup(ALGORITHMS, name, "Classic McEliece parameter set")
    return alg


ParamsLike = Union[Params, Algorithm[Params], str]
"""A parameter set, its algorithm object (``McEliece348864``) or its name."""


def _params(params: ParamsLike) -> Params:
    return resolve_params(params, Params, PARAMS, "Classic McEliece parameter set")


def keypair(params: ParamsLike, rng: Rng | None = None) -> tuple[bytes, bytes]:
    """(pk, sk) bytes for a parameter set."""
    return scheme.keypair(_params(params), rng)


def encapsulate(params: ParamsLike, pk: BytesLike, rng: Rng | None = None) -> tuple[bytes, bytes]:
    """(ct, ss) for public key bytes pk."""
    return scheme.encapsulate(_params(params), pk, rng)


def decapsulate(params: ParamsLike, sk: BytesLike, ct: BytesLike) -> bytes:
    """ss for private key bytes sk and ciphertext ct (implicit rejection on a bad ciphertext)."""
    return scheme.decapsulate(_params(params), sk, ct)


__all__ = ["ALGORITHMS", "get", "keypair", "encapsulate", "decapsulate", "Params", "McElieceAlgorithm",
           "McEliecePrivateKey", "McEliecePublicKey"] + [n for n in list(globals()) if n.startswith("McEliece") and n[8:9].isdigit()]
