"""Batched MAYO: many signatures or verifications per call, on all CPU cores or on a GPU.

    sigs = sk.sign_many(messages)                       # one key
    ok = pk.verify_many(messages, sigs)                 # numpy bool array
    ok = mayo.verify_many(MAYO2, pks, messages, sigs)   # one key per element
    sigs = mayo.sign_many(MAYO2, sks, messages)
    sks = MAYO2.generate_private_keys(1000)

Results are byte-identical to the one-at-a-time API for the same inputs and randomness.

Randomness order. Each MAYO signature draws exactly ``salt_bytes`` random bytes (the salt
randomness) and each key generation exactly ``sk_seed_bytes`` (the seed). A batch call draws all
of them up front, before any other work, element 0 first, then element 1, and so on: exactly the
calls a loop of single ``sign`` (or ``generate_private_key``) calls would make, in the same
order. So with a deterministic rng (``NistCtrDrbg``), ``sign_many(msgs, rng)`` returns
``[sign(msg, rng) for msg in msgs]``. With the default (the system rng) all the bytes come from
one system call.

Backends. ``backend="cpu"`` runs compiled kernels on a pool of threads; ``"cuda"`` runs the
device kernels of ``pqforge.mayo.cuda`` (an optional extra, ``pip install pqforge[gpu]``, imported only
when asked for); ``"auto"`` (the default, see :func:`set_default_backend`) takes the GPU when one
is usable and the batch has at least ``AUTO_GPU_MIN_BATCH`` elements, the CPU otherwise. On the
GPU, key generation, signing and verification run from the compact keys; elements given with
expanded-key byte strings are handled on the CPU.

Paths. Single-key calls (``sk.sign_many``, ``pk.verify_many``) also take ``path="tensor"``: the
big GF(16) products as exact binary GEMMs (``pqforge.mayo.tensor``; CuPy on the GPU backend, numpy
on the CPU one), with the key matrix prepared once per key object. Same bytes as the default
``path="bitsliced"``.

Layers. This module checks the arguments, draws the randomness, groups the elements by key and
hands them to a backend through the engine's interface (``pqforge.mayo.engine.SignatureBackend``):
``batch_cpu.CPU`` (compiled chunk loops of ``batch_kernels`` on the engine's thread pool, hashing
and bytes in ``batch_data``) or ``pqforge.mayo.cuda.batch.CUDA``. Backend choice, the pool and the
argument checks are the engine's (``pqforge.mayo.engine``), shared with every other batch caller.
Key objects are told from key bytes by what they offer (the Protocols ``PublicKeyObject`` and
``PrivateKeyObject``), so that this module needs nothing from ``keys``, which sits above it.

Bad input. Arguments are checked before any work and before any randomness is drawn: mismatched
list lengths, an unknown backend or path, a thread count that is not a positive int, and items
that are not bytes-like (the error names the index; numpy fixed-width ``S`` arrays are refused,
as they drop trailing zero bytes). In verification a signature or key that is malformed (wrong
length, or a key object of another parameter set) makes that element ``False``; the others are
unaffected. In signing and key generation a malformed element raises an error naming its index.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..drbg import Rng
from .engine import pool
from .engine.backends import (AUTO_GPU_MIN_BATCH, Groups, OneKeyBackend, SignatureBackend, check_path,
                               choose_backend, get_default_backend, set_default_backend)
from .engine.inputs import as_list, byte_items, check_count, draw_randomness, same_length
from ..errors import BytesLike, InvalidKey, PQForgeError, require_bytes
from ._checks import (ParamsLike, PrivateKeyObject, PublicKeyObject, check_secret_key, is_private_key,
                      is_public_key, resolve)
from .batch_cpu import CPU
from .params import MayoParams

__all__ = ["verify_many", "sign_many", "verify_many_one_key", "sign_many_one_key", "generate_keys",
           "set_default_backend", "get_default_backend", "AUTO_GPU_MIN_BATCH"]


def _backend(name: str) -> SignatureBackend:
    """The backend object for a chosen backend ("cpu" or "cuda"): the one place where the CPU
    and CUDA implementations are picked (the latter imported only here)."""
    if name == "cuda":
        from .cuda.batch import CUDA
        return CUDA
    return CPU


def _one_key_backend(name: str, path: str) -> OneKeyBackend:
    """The backend of single-key calls on ``path``: the tensor path (imported only here) or the
    backend ``name`` itself."""
    if path == "tensor":
        from .tensor import TensorPath
        return TensorPath(name)
    return _backend(name)


# -- key arguments -------------------------------------------------------------------------------

def _public_key(p: MayoParams, pk: object, i: int) -> bytes | PublicKeyObject | None:
    """The key object or its bytes; a key object of another parameter set gives None (its
    elements are then invalid, as a key of the wrong length is)."""
    if is_public_key(pk):
        return pk if pk.algorithm.params is p else None
    return require_bytes(pk, f"public key {i}")


def _secret_key(p: MayoParams, sk: object, i: int) -> bytes | PrivateKeyObject:
    if is_private_key(sk):
        if sk.algorithm.params is not p:
            raise InvalidKey(f"secret key {i} is a {sk.algorithm.name} key, not {p.name}")
        return sk
    try:
        return check_secret_key(p, sk)
    except PQForgeError as exc:
        raise type(exc)(f"element {i}: {exc}") from None


# -- verification --------------------------------------------------------------------------------

def verify_many_one_key(p: MayoParams, key: PublicKeyObject, messages: Sequence[BytesLike],
                        signatures: Sequence[BytesLike], backend: str | None = None, threads: int | None = None,
                        path: str = "bitsliced") -> npt.NDArray[np.bool_]:
    """Verdicts under one public key object ``key`` (a ``MayoPublicKey``: its ``expanded()`` is
    used on the CPU, its compact bytes on the GPU). ``path="tensor"`` runs the products as GEMMs
    (CuPy on the GPU, numpy on the CPU) with the key matrix prepared once per key object.
    """
    check_path(path)
    messages = byte_items(messages, "message")
    sigs = byte_items(signatures, "signature")
    size = same_length(messages=messages, signatures=sigs)
    threads = pool.check_threads(threads)
    backend = choose_backend(backend, size, path)
    out = np.zeros(size, np.bool_)
    good = np.array([i for i, s in enumerate(sigs) if len(s) == p.sig_bytes], np.int64)
    if len(good) == 0:
        return out
    _one_key_backend(backend, path).verify_one_key(p, key, messages, sigs, good, out, threads)
    return out


def verify_many(params: ParamsLike, pks: Sequence[BytesLike | PublicKeyObject], messages: Sequence[BytesLike],
                signatures: Sequence[BytesLike], backend: str | None = None,
                threads: int | None = None) -> npt.NDArray[np.bool_]:
    """Verdicts (numpy bool array) for one (public key, message, signature) triple per element.

    Keys are compact or expanded byte strings or ``MayoPublicKey`` objects. Each distinct key is
    expanded once. An element whose key or signature has the wrong length, or whose key object
    belongs to another parameter set, is ``False``.
    """
    p = resolve(params)
    pks = as_list(pks, "public keys")
    messages = as_list(messages, "messages")
    signatures = as_list(signatures, "signatures")
    size = same_length(pks=pks, messages=messages, signatures=signatures)
    keys = [_public_key(p, pk, i) for i, pk in enumerate(pks)]
    messages = byte_items(messages, "message")
    sigs = byte_items(signatures, "signature")
    threads = pool.check_threads(threads)
    backend = choose_backend(backend, size)
    out = np.zeros(size, np.bool_)
    groups: Groups = {}
    for i, (key, sig) in enumerate(zip(keys, sigs)):
        if len(sig) != p.sig_bytes or key is None:
            continue
        if isinstance(key, bytes) and len(key) not in (p.cpk_bytes, p.epk_bytes):
            continue
        groups.setdefault(key if isinstance(key, bytes) else key.public_bytes_raw(), []).append((i, key))
    if groups:
        left = _backend(backend).verify_groups(p, groups, messages, sigs, out, threads)
        CPU.verify_groups(p, left, messages, sigs, out, threads)
    return out


# -- signing -------------------------------------------------------------------------------------

def sign_many_one_key(p: MayoParams, key: PrivateKeyObject, messages: Sequence[BytesLike], rng: Rng | None = None,
                      backend: str | None = None, threads: int | None = None,
                      path: str = "bitsliced") -> list[bytes]:
    """Signatures under one secret key object ``key`` (a ``MayoPrivateKey``: its ``expanded()``
    on the CPU, its seed on the GPU). ``path="tensor"``: the products as GEMMs (see
    ``verify_many_one_key``), the rest on the CPU.
    """
    check_path(path)
    messages = byte_items(messages, "message")
    size = len(messages)
    threads = pool.check_threads(threads)
    backend = choose_backend(backend, size, path)
    randomness = draw_randomness(rng, size, p.salt_bytes)
    out: list[Any] = [None] * size      # filled by the backends
    if size == 0:
        return out
    _one_key_backend(backend, path).sign_one_key(p, key, messages, randomness, out, threads)
    return out


def sign_many(params: ParamsLike, sks: Sequence[BytesLike | PrivateKeyObject], messages: Sequence[BytesLike],
              rng: Rng | None = None, backend: str | None = None, threads: int | None = None) -> list[bytes]:
    """Signatures, one (secret key, message) pair per element; keys compact/expanded bytes or key objects."""
    p = resolve(params)
    sks = as_list(sks, "secret keys")
    messages = as_list(messages, "messages")
    size = same_length(secret_keys=sks, messages=messages)
    keys = [_secret_key(p, sk, i) for i, sk in enumerate(sks)]
    messages = byte_items(messages, "message")
    threads = pool.check_threads(threads)
    backend = choose_backend(backend, size)
    randomness = draw_randomness(rng, size, p.salt_bytes)
    out: list[Any] = [None] * size      # filled by the backends
    groups: Groups = {}
    for i, key in enumerate(keys):
        groups.setdefault(key if isinstance(key, bytes) else id(key), []).append((i, key))
    left = _backend(backend).sign_groups(p, groups, messages, randomness, out, threads)
    CPU.sign_groups(p, left, messages, randomness, out, threads)
    return out


# -- key generation ------------------------------------------------------------------------------

def generate_keys(p: MayoParams, n: int, rng: Rng | None = None, backend: str | None = None,
                  threads: int | None = None) -> tuple[list[bytes], list[bytes]]:
    """(seeds, compact public keys) of ``n`` new keys, the seeds drawn from ``rng`` in order
    after every argument has been checked."""
    count = check_count(n, "number of keys")
    threads = pool.check_threads(threads)
    backend = choose_backend(backend, count)
    seeds = draw_randomness(rng, count, p.sk_seed_bytes)
    return seeds, _backend(backend).public_keys(p, seeds, threads)
