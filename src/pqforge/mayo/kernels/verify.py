"""Verification: the public map P*(s) = sum_ell z^ell s_i^T P s_j for a signature's s, its pair
products by buckets on bit planes or on the nibble encoding, and the comparison with the target.
Public data only."""

import numba as nb
import numpy as np

from ...gf16.kernels import nibbles_times_x, planes_times_x, xor_block
from ...jit.cache import JIT_CACHE
from ...jit.units import addresses
from ...shake import shake256_into
from .layout import decode_nibbles_into, equals_nibbles, slots_to_bitsliced, unbitslice_into
from .whipping import WHIP, whip_unit

_JIT = dict(cache=JIT_CACHE, nogil=True)  # nogil: batches run kernels on several threads


@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def hash_target(message, salt, hashed, t_bytes, A):
    """t_bytes = SHAKE256(SHAKE256(message) || salt), the target's encoding; ``hashed`` holds
    digest || salt, A is Keccak's state (scratch). Public data only."""
    d = hashed.shape[0] - salt.shape[0]
    shake256_into(message, hashed[:d], A)
    for i in range(salt.shape[0]):
        hashed[d + i] = salt[i]
    shake256_into(hashed, t_bytes, A)


@nb.njit(**_JIT)
def _aligned_zeros(count):
    """``count`` zero words starting on a 64-byte boundary, so no 32-byte block straddles a cache line."""
    raw = np.zeros(count + 8, np.uint64)
    skip = (64 - raw.ctypes.data % 64) % 64 // 8
    return raw[skip:skip + count]


@nb.njit(inline="always", **_JIT)
def _times_x(a, limbs, nibbles):
    """a <- x * a for one W-word m-vector in an array: bitsliced (``planes_times_x`` per limb) or
    nibble-packed (``nibbles`` non-empty, ``nibbles_times_x`` per word)."""
    L = len(limbs)
    if len(nibbles):
        for q in range(4 * L):
            a[q] = nibbles_times_x(a[q])
    else:
        for q in range(L):
            a[q], a[L + q], a[2 * L + q], a[3 * L + q] = planes_times_x(a[q], a[L + q], a[2 * L + q],
                                                                         a[3 * L + q])


@nb.njit(inline="always", **_JIT)
def _drain_buckets(bins, base, out, at, acc, limbs, nibbles):
    """out[at : at + W] ^= sum_v v * bucket v, for the 16 W-word buckets at bins[base:].

    Horner on the bits of v: the sum of the buckets whose v has bit t, then times x, from bit 3
    down. With one limb the sum lives in four scalar variables (a loop over an array would
    store and reload it at every step); with more, in ``acc`` (W words of scratch), added to
    in 256-bit blocks, which is faster there. Public data only."""
    L = len(limbs)
    W = 4 * L
    if L == 1 and len(nibbles):
        for q in range(4):
            a = np.uint64(0)
            for t in range(3, -1, -1):
                a = nibbles_times_x(a)
                for v in range(16):
                    if (v >> t) & 1:
                        a ^= bins[base + 4 * v + q]
            out[at + q] ^= a
    elif L == 1:
        a0 = np.uint64(0)
        a1 = np.uint64(0)
        a2 = np.uint64(0)
        a3 = np.uint64(0)
        for t in range(3, -1, -1):
            a0, a1, a2, a3 = planes_times_x(a0, a1, a2, a3)
            for v in range(16):
                if (v >> t) & 1:
                    o = base + 4 * v
                    a0 ^= bins[o]
                    a1 ^= bins[o + 1]
                    a2 ^= bins[o + 2]
                    a3 ^= bins[o + 3]
        out[at] ^= a0
        out[at + 1] ^= a1
        out[at + 2] ^= a2
        out[at + 3] ^= a3
    else:
        for q in range(W):
            acc[q] = 0
        for t in range(3, -1, -1):
            _times_x(acc, limbs, nibbles)
            for v in range(16):
                if (v >> t) & 1:
                    xor_block(acc, 0, bins, base + v * W, limbs)
        xor_block(out, at, acc, 0, limbs)


@nb.njit(**_JIT)
def _public_pairs(X, P, U, limbs, nibbles):
    """public_pairs for vectors of W = 4 * len(limbs) words (a compile-time constant),
    bitsliced or, with ``nibbles`` non-empty, nibble-packed."""
    k, size = X.shape
    W = 4 * len(limbs)
    flat = P.reshape(P.shape[0] * W)
    bins = _aligned_zeros(k * 16 * W)            # bucket v of x_j: bins[(16 j + v) W ...]
    pair_bins = _aligned_zeros(k * k * 16 * W)   # bucket v of pair (i, j)
    Px = np.zeros(k * W, np.uint64)              # (P x_j)_r for each j
    total = np.zeros(k * W, np.uint64)           # the same summed over rows 0..r
    acc = np.zeros(W, np.uint64)
    e = 0
    for r in range(size):
        for c in range(r, size):
            for j in range(k):
                xor_block(bins, (16 * j + (np.int64(X[j, c]) & 15)) * W, flat, e, limbs)
            e += W
        # the buckets are never cleared: they hold rows 0..r, and row r is the change since r-1
        for q in range(k * W):      # element loops, not Px[:] = total: its shape check costs
            Px[q] = total[q]        # seconds of compiling (an error message's formatting)
            total[q] = 0
        for j in range(k):
            _drain_buckets(bins, 16 * W * j, total, W * j, acc, limbs, nibbles)
        Px ^= total
        for i in range(k):
            for j in range(k):
                xor_block(pair_bins, (16 * (k * i + j) + (np.int64(X[i, r]) & 15)) * W, Px, W * j, limbs)
    flat_u = U.reshape(k * k * W)
    flat_u[:] = 0
    for q in range(k * k):
        _drain_buckets(pair_bins, q * 16 * W, flat_u, q * W, acc, limbs, nibbles)


@nb.njit(**_JIT)
def _public_pairs_checked(X, P, U, limbs, nibbles):
    """``_public_pairs`` after checking the shapes: its bucket XORs are not bounds-checked (and
    elements are taken mod 16)."""
    k, size = X.shape
    W = P.shape[1]
    if W != 4 * len(limbs):
        raise ValueError("public_pairs: P's m-vectors must have 4 * len(limbs) words")
    if P.shape[0] != size * (size + 1) // 2 or not P.flags.c_contiguous:
        raise ValueError("public_pairs: P must be a contiguous packed upper-triangular (size(size+1)/2, W) array")
    if U.shape[0] != k or U.shape[1] != k or U.shape[2] != W or not U.flags.c_contiguous:
        raise ValueError("public_pairs: U must be a contiguous (k, k, W) array")
    _public_pairs(X, P, U, limbs, nibbles)


@nb.njit(**_JIT)
def _public_pairs_any(X, P, U, nibbles):
    """public_pairs (nibbles empty) or public_pairs_nibbles (nibbles non-empty), at any vector
    size: compiles ``_public_pairs`` for all four sizes (see ``evaluate_public_sized``)."""
    W = P.shape[1]
    if W == 4:
        _public_pairs_checked(X, P, U, (0,), nibbles)
    elif W == 8:
        _public_pairs_checked(X, P, U, (0, 0), nibbles)
    elif W == 12:
        _public_pairs_checked(X, P, U, (0, 0, 0), nibbles)
    elif W == 16:
        _public_pairs_checked(X, P, U, (0, 0, 0, 0), nibbles)
    else:
        raise ValueError("public_pairs: m-vectors of more than 256 elements")


@nb.njit(**_JIT)
def public_pairs(X, P, U):
    """U[i, j] = x_i^T P x_j, as ``quadratic_pairs``, for public X (verification): X's elements
    index buckets. First (P x_j)_r = sum_v v * (XOR of the P[r, c] with x_j[c] = v), one
    bucket XOR per entry and vector; then U[i, j] = sum_v v * (XOR of the (P x_j)_r with
    x_i[r] = v). That is a quarter of the masked kernel's XORs and none of its ANDs, which is
    only sound because nothing here is secret. Public data only."""
    _public_pairs_any(X, P, U, ())


@nb.njit(**_JIT)
def public_pairs_nibbles(X, P, U):
    """``public_pairs`` with P and U in the byte-encoding form of ``ExpandedPublicKey.nibbles``
    (each m-vector's m/2 bytes in a W-word slot): the buckets only add, so apart from the
    multiplication by x when they are combined the encoding does not matter, and the public
    key needs no decoding. Public data only."""
    _public_pairs_any(X, P, U, (0,))


def verify_units() -> tuple[int, int]:
    """``units()`` for verification, which needs the whip only (the solver's address is 0)."""
    return addresses((WHIP,))[0], 0


@nb.njit(**_JIT)
def evaluate_public_sized(S, P, limbs, nibbles, f_tail, y, units):
    """y = P*(s) = sum_ell z^ell s_i^T P s_j (the whipped public map) for the k rows of S (y is
    overwritten), P of W = 4 * len(limbs) words a vector, bitsliced or, with ``nibbles``
    non-empty, in the byte-encoding form of ``ExpandedPublicKey.nibbles``. Both are part of the
    compiled type, so one verification compiles the bucket kernel for its own size and form
    only (all eight took most of a minute). ``units``: ``verify_units()``. Public data only
    (verification)."""
    k = S.shape[0]
    W = P.shape[1]
    m = y.shape[0]
    U = np.zeros((k, k, W), np.uint64)
    _public_pairs_checked(S, P, U, limbs, nibbles)
    if len(nibbles):                # the pairs are in the encoding too: to bit planes for the whip
        Ub = np.empty((k, k, W), np.uint64)
        slots_to_bitsliced(U.reshape(k * k, W), Ub.reshape(k * k, W))
        U = Ub
    yb = np.zeros(W, np.uint64)
    whip_unit(units[0], U, np.zeros((k, 0, W), np.uint64), m, f_tail, yb, np.zeros((W, 0), np.uint64))
    unbitslice_into(yb, m, y)


@nb.njit(**_JIT)
def verify_sized(sig, t, P, k, n, limbs, nibbles, f_tail, units):
    """Whether P*(s) = t for the signature's s (its first k n elements) and the nibble string
    ``t`` (m/2 bytes): the byte boundary of one verification and ``evaluate_public_sized``, in
    one compiled call. Public data only."""
    S = np.empty((k, n), np.uint8)
    decode_nibbles_into(sig, S)
    y = np.zeros(2 * len(t), np.uint8)
    evaluate_public_sized(S, P, limbs, nibbles, f_tail, y, units)
    return equals_nibbles(y, t)
