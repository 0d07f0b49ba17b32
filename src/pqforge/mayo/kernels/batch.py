"""Compiled loops of the CPU batch backend: a whole chunk of a batch per call, without the GIL.

Each loop runs its chunk through the per-instance cores of the bit-plane kernels
(``evaluate_public_sized``, ``sign_attempt``, the key expansions), or, with an encoded kernel set (GFNI
or AVX2: the ``like`` argument, ``gf16.sets.FORMS``), of ``encoded.py`` (the ``*_encoded``
loops); the threads of the engine's pool call them on separate cores. The elements
are hashed in compiled code too (``pqforge.shake``; ``signing_hashes``, ``_element_inputs``), so
a thread holds the GIL only to hand over a chunk's bytes and collect its results
(``batch_data``). The loops that sign or verify take ``units`` (``sign.units()``,
``verify.verify_units()``): the addresses of the separately compiled whip and solver.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from ...jit.cache import JIT_CACHE
from ...shake import shake256_into
from . import encoded as encoded_set
from .expansion import expand_secret_from_stream, public_key_from_stream
from .products import place_rows
from .sign import assemble_signature, salt_and_target, sign_attempt
from .verify import evaluate_public_sized, hash_target


@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def _equal(y, t) -> bool:
    same = True
    for e in range(y.shape[0]):
        same &= y[e] == t[e]
    return same


@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def verdict(s, P, limbs, nibbles, f_tail, t, y, units) -> bool:
    """P*(s) == t, with y as scratch, for P of ``limbs`` and form ``nibbles`` (both part of the
    compiled type: see ``evaluate_public_sized``). Public data only: the verdict is public."""
    evaluate_public_sized(s, P, limbs, nibbles, f_tail, y, units)
    return _equal(y, t)


@nb.njit(nogil=True, cache=JIT_CACHE)
def signing_hashes(data, offsets, rand, seeds, key_of, digest_bytes, salts, T, V, R):
    """The hashes of signing, per element b under the secret seed seeds[key_of[b]], as the
    specification computes them: digest = SHAKE256(M) with M = data[offsets[b]:offsets[b+1]],
    salts[b] = SHAKE256(digest || rand[b] || seed), T[b] = Decode(SHAKE256(digest || salt)), and
    the vinegar V[b] (k, v) and r = R[b] of the first attempt, decoded from
    SHAKE256(digest || salt || seed || 0).

    Secret: seeds, rand, V, R and the hash buffers; every length and index is a public size or
    the element's (public) key number. Runs without the GIL.
    """
    k, v = V.shape[1], V.shape[2]
    rand_bytes, seed_bytes, salt_bytes = rand.shape[1], seeds.shape[1], salts.shape[1]
    v_bytes, d = (v + 1) // 2, digest_bytes
    buf = np.zeros(d + max(rand_bytes, salt_bytes) + seed_bytes + 1, np.uint8)
    t_bytes = np.zeros((T.shape[1] + 1) // 2, np.uint8)
    vr = np.zeros(k * v_bytes + (R.shape[1] + 1) // 2, np.uint8)
    A = np.zeros(25, np.uint64)
    for b in range(T.shape[0]):
        salt_and_target(data[offsets[b]:offsets[b + 1]], rand[b], seeds[key_of[b]], d, buf, salts[b], t_bytes, A)
        for e in range(T.shape[1]):
            T[b, e] = (t_bytes[e >> 1] >> (4 * (e & 1))) & 15
        buf[d + salt_bytes + seed_bytes] = 0
        shake256_into(buf[:d + salt_bytes + seed_bytes + 1], vr, A)
        for i in range(k):
            for j in range(v):
                V[b, i, j] = (vr[i * v_bytes + (j >> 1)] >> (4 * (j & 1))) & 15
        for e in range(R.shape[1]):
            R[b, e] = (vr[k * v_bytes + (e >> 1)] >> (4 * (e & 1))) & 15


@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def _target(message, salt, hashed, t_bytes, t, A):
    """t = Decode(SHAKE256(SHAKE256(message) || salt)); ``hashed`` holds digest || salt, A is
    Keccak's state. Public data only (verification)."""
    hash_target(message, salt, hashed, t_bytes, A)
    for e in range(t.shape[0]):
        t[e] = (t_bytes[e >> 1] >> (4 * (e & 1))) & 15


@nb.njit(nogil=True, cache=JIT_CACHE)
def targets(data, offsets, salts, digest_bytes, T):
    """T[b] = Decode(SHAKE256(SHAKE256(M) || salts[b])) with M = data[offsets[b]:offsets[b+1]].

    Public data only (verification). Runs without the GIL.
    """
    hashed, t_bytes = np.empty(digest_bytes + salts.shape[1], np.uint8), np.empty((T.shape[1] + 1) // 2, np.uint8)
    A = np.zeros(25, np.uint64)
    for b in range(T.shape[0]):
        _target(data[offsets[b]:offsets[b + 1]], salts[b], hashed, t_bytes, T[b], A)


@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def _element_inputs(data, offsets, sigs, b, hashed, t_bytes, t, s, A):
    """t and s of element b: the target of the message data[offsets[b]:offsets[b+1]] and the salt
    at the end of signature sigs[b] (``_target``), and s (k, n) decoded from the signature's body."""
    k, n = s.shape
    salt_bytes = sigs.shape[1] - (k * n + 1) // 2
    _target(data[offsets[b]:offsets[b + 1]], sigs[b, sigs.shape[1] - salt_bytes:], hashed, t_bytes, t, A)
    for e in range(k * n):
        s[e // n, e % n] = (sigs[b, e >> 1] >> (4 * (e & 1))) & 15


@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def _element_scratch(sigs, k, n, m, digest_bytes):
    """The buffers of ``_element_inputs`` and the evaluation: hashed, t_bytes, t, s, y, and A
    (Keccak's state)."""
    salt_bytes = sigs.shape[1] - (k * n + 1) // 2
    return (np.empty(digest_bytes + salt_bytes, np.uint8), np.empty((m + 1) // 2, np.uint8),
            np.empty(m, np.uint8), np.empty((k, n), np.uint8), np.zeros(m, np.uint8),
            np.zeros(25, np.uint64))


@nb.njit(nogil=True, cache=JIT_CACHE)
def verify_chunk(P, limbs, nibbles, data, offsets, sigs, f_tail, k, n, m, digest_bytes, out, units):
    """out[b] = (P*(s_b) == t_b) for the message data[offsets[b]:offsets[b+1]] and the signature
    sigs[b] (a row of signature bytes), hashed and decoded here (``_element_inputs``); P of
    ``limbs`` bitsliced or, with ``nibbles`` = (0,), in its byte encoding (``evaluate_public_sized``:
    each size and form compiles apart, one verification kernel each).

    Public data only (verification). Runs without the GIL.
    """
    hashed, t_bytes, t, s, y, A = _element_scratch(sigs, k, n, m, digest_bytes)
    for b in range(sigs.shape[0]):
        _element_inputs(data, offsets, sigs, b, hashed, t_bytes, t, s, A)
        out[b] = verdict(s, P, limbs, nibbles, f_tail, t, y, units)


@nb.njit(nogil=True, cache=JIT_CACHE)
def verify_chunk_encoded(epk, v, chunks, like, data, offsets, sigs, f_tail, k, n, m, digest_bytes, out, units):
    """``verify_chunk`` from the expanded public key's encoding P1 || P2 || P3 (``epk``, with its
    spare bytes) by the GFNI kernels (``encoded_set.evaluate_public``).

    Public data only (verification). Runs without the GIL.
    """
    hashed, t_bytes, t, s, y, A = _element_scratch(sigs, k, n, m, digest_bytes)
    for b in range(sigs.shape[0]):
        _element_inputs(data, offsets, sigs, b, hashed, t_bytes, t, s, A)
        encoded_set.evaluate_public(s, epk, v, chunks, like, f_tail, y, units)
        out[b] = _equal(y, t)


@nb.njit(nogil=True, cache=JIT_CACHE)
def verify_fresh_keys(P12, P3, to_p12, to_p3, first, data, offsets, sigs, f_tail, k, n, m, digest_bytes,
                      slots, slot_bytes, limbs, out, units):
    """Elements under keys that only a few of them share: for each key q, its P assembled from
    the encodings P12[q] (P1 || P2) and P3[q] (rows of m/2 bytes) into ``slots``, the one reused
    matrix in ``ExpandedPublicKey.nibbles`` form (``slot_bytes`` is its byte view; see
    ``ExpandedPublicKey.nibbles``), then the verdict of each element b in first[q] .. first[q+1]-1
    as in ``verify_chunk``.

    Public data only (verification). Runs without the GIL.
    """
    hashed, t_bytes, t, s, y, A = _element_scratch(sigs, k, n, m, digest_bytes)
    for q in range(P12.shape[0]):
        place_rows(slot_bytes, to_p12, P12[q])
        place_rows(slot_bytes, to_p3, P3[q])
        for b in range(first[q], first[q + 1]):
            _element_inputs(data, offsets, sigs, b, hashed, t_bytes, t, s, A)
            out[b] = verdict(s, slots, limbs, (0,), f_tail, t, y, units)


@nb.njit(nogil=True, cache=JIT_CACHE)
def verify_fresh_keys_encoded(epks, v, chunks, like, first, data, offsets, sigs, f_tail, k, n, m, digest_bytes, out,
                              units):
    """``verify_fresh_keys`` by the GFNI kernels: key q's expanded public key is the row epks[q]
    (P1 || P2 || P3 and spare bytes, as ``ExpandedPublicKey.encoded``), read in place.

    Public data only (verification). Runs without the GIL.
    """
    hashed, t_bytes, t, s, y, A = _element_scratch(sigs, k, n, m, digest_bytes)
    for q in range(epks.shape[0]):
        for b in range(first[q], first[q + 1]):
            _element_inputs(data, offsets, sigs, b, hashed, t_bytes, t, s, A)
            encoded_set.evaluate_public(s, epks[q], v, chunks, like, f_tail, y, units)
            out[b] = _equal(y, t)


@nb.njit(nogil=True, cache=JIT_CACHE)
def sign_chunk(O, P1, L, V, R, T, f_tail, n, S, ok, units):
    """One signing attempt per element: S[b] = s for vinegar V[b] (k, v), r = R[b], target T[b].

    ok[b] tells whether the system had full rank (public by design: it only decides a retry).
    Secret: O, P1, L, V, R, S before it is returned, and every intermediate; they pass only
    through the constant-time bit-plane kernels (masks, public loop bounds and indices).
    Runs without the GIL.
    """
    B, k, v = V.shape
    o = O.shape[1]
    x = np.zeros(k * o, np.uint8)
    for b in range(B):
        ok[b] = sign_attempt(V[b], R[b], P1, L, T[b], f_tail, x, units)
        assemble_signature(V[b], O, x, n, S[b])


@nb.njit(nogil=True, cache=JIT_CACHE)
def sign_chunk_encoded(O, slots, V, R, T, f_tail, n, chunks, like, S, ok, units):
    """``sign_chunk`` with P1 || L in their encoding (``ExpandedSecretKey.slots``) by the GFNI
    kernels (``encoded_set.sign_attempt``). Secret: as there. Runs without the GIL."""
    B, k, v = V.shape
    o = O.shape[1]
    x = np.zeros(k * o, np.uint8)
    for b in range(B):
        ok[b] = encoded_set.sign_attempt(V[b], R[b], slots, o, T[b], f_tail, chunks, like, x, units)
        assemble_signature(V[b], O, x, n, S[b])


@nb.njit(nogil=True, cache=JIT_CACHE)
def sign_fresh_keys(streams, O, first, V, R, T, f_tail, n, m, S, ok, units):
    """Elements under compact keys that only a few of them share: for each key q, P1 and L
    expanded from its keystream of P1 || P2 and its oil matrix O[q] into one buffer reused
    from key to key (``expand_secret_from_stream``), then one signing attempt for each
    of its elements b = first[q] .. first[q+1]-1 (``sign_chunk``).

    Secret: O, L, V, R, S and every intermediate (constant-time kernels only); the rank bits
    ok are public. Runs without the GIL.
    """
    v, o = O.shape[1], O.shape[2]
    W = 4 * ((m + 63) // 64)
    e1 = v * (v + 1) // 2
    P1L = np.empty((e1 + v * o, W), np.uint64)
    P1, L = P1L[:e1], P1L[e1:].reshape(v, o, W)
    for q in range(streams.shape[0]):
        expand_secret_from_stream(streams[q], O[q], m, P1L)
        a, b = first[q], first[q + 1]
        sign_chunk(O[q], P1, L, V[a:b], R[a:b], T[a:b], f_tail, n, S[a:b], ok[a:b], units)


@nb.njit(nogil=True, cache=JIT_CACHE)
def sign_fresh_keys_encoded(slots, O, first, V, R, T, f_tail, n, chunks, like, S, ok, units):
    """``sign_fresh_keys`` by the GFNI kernels: key q's P1 || P2 in its slots, the row slots[q]
    (``scheme.public_slots``), expanded in place into P1 || L (``encoded_set.expand_secret_slots``),
    then one signing attempt for each of its elements (``sign_chunk_encoded``).

    Secret: O, the slots once expanded, V, R, S and every intermediate; the rank bits ok are
    public. Runs without the GIL.
    """
    for q in range(slots.shape[0]):
        encoded_set.expand_secret_slots(slots[q], O[q], chunks, like)
        a, b = first[q], first[q + 1]
        sign_chunk_encoded(O[q], slots[q], V[a:b], R[a:b], T[a:b], f_tail, n, chunks, like, S[a:b], ok[a:b], units)


@nb.njit(nogil=True, cache=JIT_CACHE)
def public_keys_chunk_encoded(slots, oils, v, o, chunks, like, out):
    """out[q] = the encoded P3 of key q from its P1 || P2 in slots (the row slots[q]) and its oil
    matrix's encoding oils[q] (``encoded_set.public_key_from_slots``). Secret: the oil matrices
    and all derived from them. Runs without the GIL.
    """
    for q in range(slots.shape[0]):
        encoded_set.public_key_from_slots(slots[q], oils[q], v, o, chunks, like, out[q])


@nb.njit(nogil=True, cache=JIT_CACHE)
def public_keys_chunk(streams, O, m, out):
    """out[q] = the encoded P3 of key q from its keystream of P1 || P2 and its oil matrix
    (``public_key_from_stream``). Secret: O and all derived from it. Runs without the GIL.
    """
    for q in range(streams.shape[0]):
        public_key_from_stream(streams[q], O[q], m, out[q])
