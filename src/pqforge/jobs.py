"""One entry point for batch work by callers that know no scheme internals (a service):

    sigs = run_job("MAYO-2", "sign", secret_key, messages)              # list of signatures
    ok = run_job("MAYO-2", "verify", public_key, messages, signatures)  # numpy bool array

``key`` is a key object of the algorithm or its compact encoding. Key objects keep their
expanded form between calls, so a caller that signs or verifies under the same key again and
again should keep and pass the object (``algorithm.private_key_from_bytes`` once). The work runs
through the algorithm's public batch calls (``sign_many``, ``verify_many``): the same backend
choice, thread pool, argument checks and results as there.
"""

from __future__ import annotations

from . import algorithms
from .algorithms import Algorithm, PrivateKey, PublicKey
from .errors import InvalidInput, InvalidType

OPERATIONS = ("sign", "verify")


def resolve_algorithm(algorithm):
    """The algorithm object for a name ("MAYO-2") or an algorithm object; only signature
    algorithms with batch calls are accepted."""
    alg = algorithms.get(algorithm) if isinstance(algorithm, str) else algorithm
    if not isinstance(alg, Algorithm) or alg.kind != "signature":
        raise InvalidInput(f"batch jobs run signature algorithms; {getattr(alg, 'name', alg)!r} is not one")
    return alg


def run_job(algorithm, operation: str, key, messages, signatures=None, rng=None, backend=None, threads=None):
    """Sign (``operation="sign"``) or verify (``"verify"``, with ``signatures``) every message
    under one key; ``rng``, ``backend`` and ``threads`` as in the batch calls."""
    alg = resolve_algorithm(algorithm)
    if operation not in OPERATIONS:
        raise InvalidInput(f"operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")
    if operation == "sign":
        if signatures is not None:
            raise InvalidInput("a sign job takes no signatures")
        sk = _key_object(alg, key, "private")
        return sk.sign_many(messages, rng=rng, backend=backend, threads=threads)
    if signatures is None:
        raise InvalidInput("a verify job needs the signatures, one per message")
    if rng is not None:
        raise InvalidInput("a verify job draws no randomness; pass no rng")
    pk = _key_object(alg, key, "public")
    return pk.verify_many(messages, signatures, backend=backend, threads=threads)


def _key_object(alg, key, kind: str):
    """``key`` as a key object of ``alg``: a ``kind`` ("private" or "public") key object of it,
    or its compact bytes decoded."""
    if isinstance(key, (bytes, bytearray, memoryview)):
        return getattr(alg, f"{kind}_key_from_bytes")(key)
    if not isinstance(key, PrivateKey if kind == "private" else PublicKey) or key.algorithm is not alg:
        raise InvalidType(f"key must be a {alg.name} {kind} key object or its compact bytes, "
                          f"not {type(key).__name__}")
    return key
