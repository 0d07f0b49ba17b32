"""Compiled loops of the CPU batch backend: a whole chunk of a batch per call, without the GIL.

Each loop runs its chunk through the per-instance cores of ``kernels.py`` (``evaluate_public``,
``sign_attempt``, the key expansions); the threads of the engine's pool call them on separate
cores. Hashing and byte handling stay in Python around them (``batch_data``).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from . import kernels


@nb.njit(nogil=True, cache=True, inline="always")
def verdict(s, P, encoded, f_tail, t, y) -> bool:
    """P*(s) == t, with y as scratch. Public data only: the verdict is public."""
    y[:] = 0
    kernels.evaluate_public(s, P, encoded, f_tail, y)
    same = True
    for e in range(y.shape[0]):
        same &= y[e] == t[e]
    return same


@nb.njit(nogil=True, cache=True)
def verify_chunk(P, encoded, S, T, f_tail, out):
    """out[b] = (P*(S[b]) == T[b]) for signature vectors S (B, k, n) and targets T (B, m); P
    bitsliced or, with ``encoded``, in its byte encoding (see ``kernels.evaluate_public``).

    Public data only (verification). Runs without the GIL.
    """
    y = np.zeros(T.shape[1], np.uint8)
    for b in range(S.shape[0]):
        out[b] = verdict(S[b], P, encoded, f_tail, T[b], y)


@nb.njit(nogil=True, cache=True)
def verify_fresh_keys(P12, P3, to_p12, to_p3, first, S, T, f_tail, slots, slot_bytes, out):
    """Elements under keys that only a few of them share: for each key q, its P assembled from
    the encodings P12[q] (P1 || P2) and P3[q] (rows of m/2 bytes) into ``slots``, the one reused
    matrix in ``ExpandedPublicKey.nibbles`` form (``slot_bytes`` is its byte view; see
    ``scheme._assemble_public``), then out[b] = (P*(S[b]) == T[b]) for b in first[q] ..
    first[q+1]-1.

    Public data only (verification). Runs without the GIL.
    """
    y = np.zeros(T.shape[1], np.uint8)
    for q in range(P12.shape[0]):
        kernels.place_rows(slot_bytes, to_p12, P12[q])
        kernels.place_rows(slot_bytes, to_p3, P3[q])
        for b in range(first[q], first[q + 1]):
            out[b] = verdict(S[b], slots, True, f_tail, T[b], y)


@nb.njit(nogil=True, cache=True)
def sign_chunk(O, P1, L, V, R, T, f_tail, n, S, ok):
    """One signing attempt per element: S[b] = s for vinegar V[b] (k, v), r = R[b], target T[b].

    ok[b] tells whether the system had full rank (public by design: it only decides a retry).
    Secret: O, P1, L, V, R, S before it is returned, and every intermediate; they pass only
    through the constant-time kernels of ``kernels.py`` (masks, public loop bounds and indices).
    Runs without the GIL.
    """
    B, k, v = V.shape
    o = O.shape[1]
    x = np.zeros(k * o, np.uint8)
    for b in range(B):
        ok[b] = kernels.sign_attempt(V[b], R[b], P1, L, T[b], f_tail, x)
        kernels.assemble_signature(V[b], O, x, n, S[b])


@nb.njit(nogil=True, cache=True)
def sign_fresh_keys(streams, O, first, V, R, T, f_tail, n, m, S, ok):
    """Elements under compact keys that only a few of them share: for each key q, P1 and L
    expanded from its keystream of P1 || P2 and its oil matrix O[q] into one buffer reused
    from key to key (``kernels.expand_secret_from_stream``), then one signing attempt for each
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
        kernels.expand_secret_from_stream(streams[q], O[q], m, P1L)
        a, b = first[q], first[q + 1]
        sign_chunk(O[q], P1, L, V[a:b], R[a:b], T[a:b], f_tail, n, S[a:b], ok[a:b])


@nb.njit(nogil=True, cache=True)
def public_keys_chunk(streams, O, m, out):
    """out[q] = the encoded P3 of key q from its keystream of P1 || P2 and its oil matrix
    (``kernels.public_key_from_stream``). Secret: O and all derived from it. Runs without the GIL.
    """
    for q in range(streams.shape[0]):
        kernels.public_key_from_stream(streams[q], O[q], m, out[q])
