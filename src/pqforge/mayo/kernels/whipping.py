"""Whipping and reduction: the k x k pair products multiplied by powers of z and reduced modulo f,
the right side t minus their sum and the linear system A of signing (the specification's
"whipping" of the ki vectors). A unit of its own (``WHIP``): the largest kernel of verification
and, with the solver, of signing. Secret in signing: every input and output; masks only."""

import numba as nb
import numpy as np
from numba import types

from ...gf16.kernels import planes_times_x
from ...jit.cache import JIT_CACHE
from ...jit.units import Unit
from .layout import unbitslice_into

_JIT = dict(cache=JIT_CACHE, nogil=True)  # nogil: batches run kernels on several threads


@nb.njit(inline="always", **_JIT)
def _shift_xor(dst, dst_limbs, c0, src, src_limbs, shift):
    """dst[:, c0 + c] ^= z^shift src[:, c] for bitsliced vectors stored as columns (word q of
    column c at [q, c]): every bit plane of src (src_limbs words) moved up by ``shift``
    (public) bits into dst (dst_limbs words a plane); bits beyond dst's planes are dropped.
    The loops run over the columns. Shifts only: secret-safe in the data."""
    ws = shift >> 6
    bs = np.uint64(shift & 63)
    back = np.uint64(63) - bs                 # (v >> 1) >> (63 - bs): no shift by 64 when bs = 0
    one = np.uint64(1)
    C = src.shape[1]
    for p in range(4):                        # plain indices, no row views: this runs per pair
        for q in range(src_limbs):
            s = p * src_limbs + q
            d = p * dst_limbs + q + ws
            if q + ws < dst_limbs:
                for c in range(C):
                    dst[d, c0 + c] ^= src[s, c] << bs
            if q + ws + 1 < dst_limbs:
                for c in range(C):
                    dst[d + 1, c0 + c] ^= (src[s, c] >> one) >> back


@nb.njit(inline="always", **_JIT)
def _reduce_mod_f(ext, ext_limbs, m, f_tail, out, limbs):
    """out ^= ext mod f(z) = z^m + f_tail(z), column by column, for bitsliced polynomials ext
    (ext_limbs words a plane, as columns) of degree < m + E and m-vectors out (limbs words).

    z^(m+d) = z^d f_tail(z) and E + 3 < m for every parameter set, so one pass suffices: the
    part from z^m up, h, comes back as sum_t f_tail[t] z^t h, with f_tail[t] h a sum of the
    multiples x^i h. Secret: ext, out; the branches test bits of the public f_tail only, and
    all shifts are public.
    """
    C = ext.shape[1]
    hl = ext_limbs - m // 64                  # limbs of h
    high = np.zeros((4, 4 * hl, C), np.uint64)  # x^i h
    b = np.uint64(m & 63)
    for p in range(4):                        # h = ext / z^m, plane by plane
        for q in range(hl):
            w = (m >> 6) + q
            h = high[0, p * hl + q]
            lo = ext[p * ext_limbs + w]
            if w + 1 < ext_limbs:
                hi = ext[p * ext_limbs + w + 1]
                for c in range(C):
                    h[c] = (lo[c] >> b) | ((hi[c] << np.uint64(1)) << (np.uint64(63) - b))
            else:
                for c in range(C):
                    h[c] = lo[c] >> b
    for i in range(1, 4):                     # x^i h
        for q in range(hl):
            for c in range(C):
                high[i, q, c], high[i, hl + q, c], high[i, 2 * hl + q, c], high[i, 3 * hl + q, c] = \
                    planes_times_x(high[i - 1, q, c], high[i - 1, hl + q, c],
                                    high[i - 1, 2 * hl + q, c], high[i - 1, 3 * hl + q, c])
    keep = m - 64 * (limbs - 1)               # bits of the last limb below z^m
    last = ~np.uint64(0) if keep == 64 else (np.uint64(1) << np.uint64(keep)) - np.uint64(1)
    for p in range(4):
        for q in range(limbs):
            mask = last if q == limbs - 1 else ~np.uint64(0)
            src = ext[p * ext_limbs + q]
            dst = out[p * limbs + q]
            for c in range(C):
                dst[c] ^= src[c] & mask
    for t in range(4):
        for i in range(4):
            if (f_tail[t] >> i) & 1:
                _shift_xor(out, limbs, 0, high[i], hl, t)


@nb.njit(**_JIT)
def whip_bitsliced(U, M, m, f_tail, y, A):
    """Combine the k(k+1)/2 evaluations with powers of z modulo f(z) = z^m + f_tail(z).

    For ell = 0, 1, ... over pairs (i, j) with j running from k-1 down to i:
        y ^= z^ell (U[i, j] + U[j, i])   (U[i, i] alone when i == j)
        A[i-th block] ^= z^ell M[j]  and, when i != j, A[j-th block] ^= z^ell M[i]
    U: (k, k, W) m-vectors; M: (k, o, W) m-vectors or an empty array (verification needs no
    A); y: an m-vector (W words); A: the k*o columns of the system as m-vectors stored as
    columns, A[q, c] word q of column c, (W, k*o). y and A are accumulated into.
    Multiplying by z^ell shifts every bit plane by ell; the sums are kept unreduced (m + E
    coefficients) and reduced once. Secret in signing: U, M, y, A; only sizes steer loops.
    """
    k = U.shape[0]
    o = M.shape[1]
    W = U.shape[2]
    limbs = W // 4
    E = k * (k + 1) // 2
    xl = (m + E + 63) // 64                   # limbs of the unreduced sums
    yext = np.zeros((4 * xl, 1), np.uint64)
    cols = np.zeros((4 * xl, k * o), np.uint64)
    Mt = np.zeros((k, W, o), np.uint64)       # M[i] with its o vectors as columns
    for i in range(k):
        for c in range(o):
            for w in range(W):
                Mt[i, w, c] = M[i, c, w]
    u = np.zeros((W, 1), np.uint64)
    ell = 0
    for i in range(k):
        for j in range(k - 1, i - 1, -1):
            for w in range(W):
                u[w, 0] = U[i, j, w] ^ (U[j, i, w] if i != j else np.uint64(0))
            _shift_xor(yext, xl, 0, u, limbs, ell)
            _shift_xor(cols, xl, i * o, Mt[j], limbs, ell)
            if i != j:
                _shift_xor(cols, xl, j * o, Mt[i], limbs, ell)
            ell += 1
    _reduce_mod_f(yext, xl, m, f_tail, y.reshape(W, 1), limbs)
    _reduce_mod_f(cols, xl, m, f_tail, A, limbs)


@nb.njit(**_JIT)
def whip(U, M, m, f_tail, y, A):
    """``whip_bitsliced`` with y (m elements) and A (m, k*o elements) as elements, accumulated
    into. Secret in signing: U, M, y, A."""
    k, o, W = M.shape
    yb = np.zeros(W, np.uint64)
    Ab = np.zeros((W, k * o), np.uint64)
    whip_bitsliced(U, M, m, f_tail, yb, Ab)
    el = np.zeros(m, np.uint8)
    unbitslice_into(yb, m, el)
    for e in range(m):
        y[e] ^= el[e]
    word = np.zeros(W, np.uint64)
    for c in range(k * o):
        word[:] = Ab[:, c]
        unbitslice_into(word, m, el)
        for e in range(m):
            A[e, c] ^= el[e]


# The largest kernel of verification and, with the solver, of signing: compiled once, on its own,
# and called through its address (``sign.units()``, ``verify.verify_units()``) by every kernel
# that uses it.
_u64_1, _u64_2, _u64_3 = (types.Array(types.uint64, d, "C") for d in (1, 2, 3))
WHIP = Unit(whip_bitsliced, types.void(_u64_3, _u64_3, types.int64, types.Array(types.int64, 1, "C"), _u64_1, _u64_2))
whip_unit = WHIP.call
