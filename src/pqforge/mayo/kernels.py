"""Compiled MAYO kernels (numba, nopython, cached).

Layouts: an m-vector is bitsliced into ``W = 4 * limbs`` uint64 words (``pqforge.gf16``); a
matrix of m-vectors is an array (rows, cols, W), or, when upper triangular, packed as
(entries, W) with the entries (j, j..size-1) of each row j in turn; scalar matrices and
vectors are uint8 arrays of GF(16) elements. Each kernel's docstring says which arguments are secret. Kernels that see
secrets use masks only: loop bounds and memory indices depend on public sizes, never on values.
Every kernel keeps its plain-Python twin as ``kernel.py_func``.
"""

import numba as nb
import numpy as np
from numba import types

from .._barrier import declassify
from .._units import Unit, addresses
from ..gf16.kernels import (bit_mask, bitslice_stream, gf16_inv, gf16_mul, mul_add_scalar,
                           mul_add_scalar_from, nonzero_bit, nonzero_mask, xor_block)
from .._compile_cache import JIT_CACHE

_JIT = dict(cache=JIT_CACHE, nogil=True)  # nogil: batches run kernels on several threads
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@nb.njit(**_JIT)
def _bit_masks(B):
    """masks[j, t * R + r] = all-ones if bit t of B[j, r] is set: the scalars as 4R masks per row."""
    J, R = B.shape
    masks = np.empty((J, 4 * R), np.uint64)
    for j in range(J):
        for t in range(4):
            for r in range(R):
                masks[j, t * R + r] = bit_mask(B[j, r], t)
    return masks


@nb.njit(**_JIT)
def _combine(acc, R, C, W, out):
    """out[r, c] ^= sum_t x^t acc_t[r, c], accumulators stored word-major: acc[c * W + w, t * R + r]."""
    limbs = W // 4
    word = np.empty(W, np.uint64)
    for r in range(R):
        for c in range(C):
            for t in range(4):
                for w in range(W):
                    word[w] = acc[c * W + w, t * R + r]
                mul_add_scalar(out[r, c], word, 1 << t, limbs)


@nb.njit(**_JIT)
def _mul_transposed_core(B, flat, offsets, starts, C, W, out):
    """out = B^T A where row j of A, word q = c * W + w, is flat[offsets[j] + q] for q >= starts[j]
    (and zero before). Bit t of B[j, r] masks row j into accumulator (t, r); the accumulators
    are word-major, so one word of four rows updates all 4R of them in a vectorised loop."""
    J, R = B.shape
    CW = C * W
    G = 4 * R
    masks = _bit_masks(B)
    acc = np.zeros((CW, G), np.uint64)
    full = J - J % 4
    for j0 in range(0, full, 4):
        common = max(max(starts[j0], starts[j0 + 1]), max(starts[j0 + 2], starts[j0 + 3]))
        for j in range(j0, j0 + 4):          # lead-in where not all four rows have started
            mj = masks[j]
            for q in range(starts[j], common):
                x = flat[offsets[j] + q]
                a = acc[q]
                for g in range(G):
                    a[g] ^= mj[g] & x
        m0, m1, m2, m3 = masks[j0], masks[j0 + 1], masks[j0 + 2], masks[j0 + 3]
        # unsigned offsets and word index: no negative-index handling in this hot loop
        o0, o1 = np.uint64(offsets[j0]), np.uint64(offsets[j0 + 1])
        o2, o3 = np.uint64(offsets[j0 + 2]), np.uint64(offsets[j0 + 3])
        for q in range(np.uint64(common), np.uint64(CW)):
            x0, x1, x2, x3 = flat[o0 + q], flat[o1 + q], flat[o2 + q], flat[o3 + q]
            for g in range(G):
                acc[q, g] ^= (m0[g] & x0) ^ (m1[g] & x1) ^ (m2[g] & x2) ^ (m3[g] & x3)
    for j in range(full, J):
        mj = masks[j]
        for q in range(starts[j], CW):
            x = flat[offsets[j] + q]
            a = acc[q]
            for g in range(G):
                a[g] ^= mj[g] & x
    _combine(acc, R, C, W, out)


@nb.njit(**_JIT)
def mul_transposed(B, A, suffix, out):
    """out[r, c] ^= sum_j B[j, r] * A[j, c]: out = B^T A for scalars B (J, R) and m-vectors A (J, C, W).

    With ``suffix`` true, A is upper triangular and entries left of the diagonal are not read.
    Secret: B (the oil matrix O, the vinegar vectors) and A (L in signing); both are only
    masked and XORed, never an index or a branch condition.
    """
    J, C, W = A.shape
    offsets = np.arange(J) * (C * W)
    starts = np.arange(J) * W if suffix else np.zeros(J, np.int64)
    _mul_transposed_core(B, A.reshape(J * C * W), offsets, starts, C, W, out)


@nb.njit(**_JIT)
def packed_row_starts(size):
    """Index of entry (j, j) in a row-major packed upper-triangular matrix of the given size."""
    starts = np.empty(size, np.int64)
    for j in range(size):
        starts[j] = j * size - j * (j - 1) // 2
    return starts


@nb.njit(**_JIT)
def mul_transposed_packed(B, Ap, out):
    """out = B^T A for an upper-triangular m-vector matrix A stored packed: Ap (size(size+1)/2, W),
    the entries (j, j..size-1) of row j after those of row j-1. Secret: B and Ap (as above)."""
    size = B.shape[0]
    W = Ap.shape[1]
    diag = packed_row_starts(size)
    offsets = (diag - np.arange(size)) * W       # flat index of (j, c) word w is offsets[j] + c * W + w
    _mul_transposed_core(B, Ap.reshape(Ap.shape[0] * W), offsets, np.arange(size) * W, size, W, out)


@nb.njit(**_JIT)
def mul_packed_rows(Ap, B, out):
    """out[r, c] ^= sum_{j >= r} A[r, j] * B[j, c] for a packed upper-triangular A (see
    mul_transposed_packed) and scalars B (size, C): the product A B, row by row of A.

    Bit t of B[j, c] masks entry (r, j) into accumulator (t, c) of row r; the accumulators
    (W x 4C words) stay in L1. Secret: B (the oil matrix) and possibly Ap; masks and XORs only.
    """
    size, C = B.shape
    W = Ap.shape[1]
    G = 4 * C
    masks = _bit_masks(B)
    diag = packed_row_starts(size)
    acc = np.zeros((W, G), np.uint64)
    word = np.empty(W, np.uint64)
    limbs = W // 4
    for r in range(size):
        acc[:] = 0
        e0 = diag[r] - r                          # entry (r, j) is Ap[e0 + j]
        j = r
        while j + 4 <= size:
            m0, m1, m2, m3 = masks[j], masks[j + 1], masks[j + 2], masks[j + 3]
            for w in range(W):
                x0, x1, x2, x3 = Ap[e0 + j, w], Ap[e0 + j + 1, w], Ap[e0 + j + 2, w], Ap[e0 + j + 3, w]
                a = acc[w]
                for g in range(G):
                    a[g] ^= (m0[g] & x0) ^ (m1[g] & x1) ^ (m2[g] & x2) ^ (m3[g] & x3)
            j += 4
        while j < size:
            mj = masks[j]
            for w in range(W):
                x = Ap[e0 + j, w]
                a = acc[w]
                for g in range(G):
                    a[g] ^= mj[g] & x
            j += 1
        for c in range(C):
            for t in range(4):
                for w in range(W):
                    word[w] = acc[w, t * C + c]
                mul_add_scalar(out[r, c], word, 1 << t, limbs)


@nb.njit(**_JIT)
def place_rows(dst, places, src):
    """dst[places[i], :w] = src[i] for the rows of src (w bytes each): entries moved to their
    places in a packed matrix. Public data only (assembling the public key)."""
    w = src.shape[1]
    for i in range(src.shape[0]):
        r = places[i]
        for b in range(w):
            dst[r, b] = src[i, b]


@nb.njit(**_JIT)
def unbitslice_into(words, length, out):
    """Elements of a bitsliced vector: out[e] = element e (e < length). Secret-safe (shifts only).

    The loop runs limb by limb over bit positions, so each step is a variable shift of the four
    plane words (vectorised)."""
    limbs = words.shape[0] // 4
    one = np.uint64(1)
    for w in range(limbs):
        p0, p1, p2, p3 = words[w], words[limbs + w], words[2 * limbs + w], words[3 * limbs + w]
        base = 64 * w
        for b in range(min(64, length - base)):
            sb = np.uint64(b)
            out[base + b] = ((p0 >> sb) & one) | (((p1 >> sb) & one) << one) \
                | (((p2 >> sb) & one) << np.uint64(2)) | (((p3 >> sb) & one) << np.uint64(3))


@nb.njit(**_JIT)
def public_key_from_stream(stream, O, m, out):
    """out = Encode(Upper(O^T (P1 O + P2))), the public part of key generation after hashing:
    P1 || P2 decoded from their keystream ``stream`` (uint64 words, zero-padded, as
    ``bitslice_stream`` reads them), then the two products with the oil matrix O (v, o).

    Secret: O and everything computed from it (masks and XORs at public positions only); the
    keystream is public."""
    v, o = O.shape
    W = 4 * ((m + 63) // 64)
    e1 = v * (v + 1) // 2
    P12 = np.empty((e1 + v * o, W), np.uint64)
    bitslice_stream(stream, 2 * ((m + 1) // 2), P12)   # entries of P1 (packed), then of P2
    P1, Q = P12[:e1], P12[e1:].reshape(v, o, W)
    mul_packed_rows(P1, O, Q)                         # Q = P1 O + P2
    P3 = np.zeros((o, o, W), np.uint64)
    mul_transposed(O, Q, False, P3)                   # O^T Q
    encode_upper_into(P3, m, out)                     # -O^T P1 O - O^T P2: no signs in GF(16)


@nb.njit(**_JIT)
def expand_secret_from_stream(stream, O, m, P1L):
    """P1 || L of the expanded secret key in ``P1L`` ((v(v+1)/2 + v o, W): the packed upper
    triangle P1, then L = (P1 + P1^T) O + P2 row by row), from the keystream of P1 || P2 (as
    ``public_key_from_stream`` reads it) and the oil matrix O. P1 || P2 decode into the same
    places, so L starts as P2.

    Secret: O, L and the products (masks and XORs at public positions only); the keystream and
    P1 are public in themselves (P1 is kept with the secret key)."""
    v, o = O.shape
    W = P1L.shape[1]
    e1 = v * (v + 1) // 2
    bitslice_stream(stream, 2 * ((m + 1) // 2), P1L)
    P1, L = P1L[:e1], P1L[e1:].reshape(v, o, W)       # L = P2 for now
    OtP1 = np.zeros((o, v, W), np.uint64)
    mul_transposed_packed(O, P1, OtP1)                # O^T P1 = (P1^T O)^T
    for i in range(v):
        for c in range(o):
            for w in range(W):
                L[i, c, w] ^= OtP1[c, i, w]
    mul_packed_rows(P1, O, L)                         # + P1 O


@nb.njit(**_JIT)
def encode_upper_into(X, m, out):
    """out = Encode(Upper(X)) for a dense square matrix X of bitsliced m-vectors: for i <= j in
    row order, X[i, j] + X[j, i] (X[i, i] on the diagonal), each as ceil(m/2) nibble-packed
    bytes. Shifts and masks at public positions only: safe on secret data (key generation
    computes X from the oil matrix)."""
    size, W = X.shape[0], X.shape[2]
    mb = (m + 1) // 2
    vec = np.empty(W, np.uint64)
    elements = np.zeros(2 * mb, np.uint8)          # an odd m leaves the last high nibble zero
    at = 0
    for i in range(size):
        for j in range(i, size):
            for w in range(W):
                vec[w] = X[i, j, w] ^ X[j, i, w] if j != i else X[i, j, w]
            unbitslice_into(vec, m, elements)
            for b in range(mb):
                out[at + b] = elements[2 * b] | (elements[2 * b + 1] << 4)
            at += mb


@nb.njit(**_JIT)
def bitslice_into(elements, length, out):
    """out ^= the bitsliced vector of ``length`` elements (out's words are 4 planes of limbs).
    Secret-safe (shifts only)."""
    limbs = out.shape[0] // 4
    one = np.uint64(1)
    for e in range(length):
        v = np.uint64(elements[e])
        w = e >> 6
        b = np.uint64(e & 63)
        for p in range(4):
            out[p * limbs + w] ^= ((v >> np.uint64(p)) & one) << b


@nb.njit(inline="always", **_JIT)
def _planes_times_x(b0, b1, b2, b3):
    """x times a bitsliced limb given as its four plane words: (b3, b0 ^ b3, b1, b2), because
    x * x^3 = x^4 = x + 1. Shifts nothing, so secret-safe."""
    return b3, b0 ^ b3, b1, b2


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
                    _planes_times_x(high[i - 1, q, c], high[i - 1, hl + q, c],
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


@nb.njit(**_JIT)
def _transpose64(a):
    """In place: bit j of a[i] <-> bit i of a[j], for a 64 x 64 bit matrix a (64 words).
    Six rounds of masked swaps of ever smaller blocks; shifts and masks only (secret-safe)."""
    j = 32
    mask = np.uint64(0x00000000FFFFFFFF)
    while j != 0:
        sj = np.uint64(j)
        k = 0
        while k < 64:
            for i in range(k, k + j):
                t = ((a[i] >> sj) ^ a[i + j]) & mask
                a[i + j] ^= t
                a[i] ^= t << sj
            k += 2 * j
        j >>= 1
        mask ^= mask << np.uint64(j)


@nb.njit(**_JIT)
def _entry(row, col, limbs):
    """GF(16) element at public column ``col`` of a bitsliced row."""
    w = col >> 6
    b = np.uint64(col & 63)
    one = np.uint64(1)
    return np.int64(((row[w] >> b) & one) | (((row[limbs + w] >> b) & one) << one)
                    | (((row[2 * limbs + w] >> b) & one) << np.uint64(2))
                    | (((row[3 * limbs + w] >> b) & one) << np.uint64(3)))


@nb.njit(**_JIT)
def _lowest_bit(x):
    """The lowest set bit of x alone (0 for 0), by smearing upwards: no branch, no overflow."""
    s = x
    for k in (1, 2, 4, 8, 16, 32):
        s |= s << np.uint64(k)
    return s & ~(s << np.uint64(1))


@nb.njit(**_JIT)
def _gt_bit(a, b):
    """1 when a > b, else 0 (as uint64; both below 2^62); arithmetic only, so loops over it
    still vectorise."""
    return np.uint64((np.int64(b) - np.int64(a)) >> 63 & 1)


@nb.njit(**_JIT, inline="always")
def _row_update(x, put, swap, pivot, old, f0, f1, f2, f3, c0, c1, c2, c3):
    """One word of a row in an elimination step: the normalised pivot row replaces the pivot
    row (``put``), the pivot row's old content moves to the pivot's row (``swap``), and every
    row adds fac * pivot, planes c0..c3 of x^t * pivot selected by fac's bit masks f0..f3.
    Masks only (all secret)."""
    x = (x & ~put) | (pivot & put)
    x = (x & ~swap) | (old & swap)
    return x ^ (f0 & c0) ^ (f1 & c1) ^ (f2 & c2) ^ (f3 & c3)


@nb.njit(**_JIT)
def _echelon_form(R, ko):
    """Bring the augmented rows [A | y] to echelon form with pivots 1; returns rank(A).

    R (W, m) holds the rows transposed: R[i, rr] is word i of row rr, so that each step is a
    loop over all rows for one word, which vectorises. Constant time: every row takes part in
    every column step, through masks. Secret: the rows, and the pivot positions and running
    pivot row derived from them. Per column: the pivot is the first row at or below the pivot
    row with a nonzero entry (the lowest bit of the candidate rows as a bit string); normalised
    to 1 it replaces the pivot row, whose old content moves to the pivot's place (a masked
    swap); every row below adds its entry times the pivot.
    """
    W, m = R.shape
    limbs = W // 4
    e = np.zeros(m, np.int64)                       # each row's entry in the column
    below = np.zeros(m, np.uint64)                  # rows below the pivot row (mask)
    sel = np.zeros(m, np.uint64)                    # the pivot's row (one-hot mask)
    at = np.zeros(m, np.uint64)                     # the pivot row (one-hot mask)
    put = np.zeros(m, np.uint64)                    # the pivot row, when the column has a pivot
    swap = np.zeros(m, np.uint64)                   # the pivot's row, when it is not the pivot row
    f = np.zeros((4, m), np.uint64)                 # bit masks of each row's elimination factor
    piv = np.zeros(W, np.uint64)
    old = np.zeros(W, np.uint64)
    scaled = np.zeros(W, np.uint64)
    row_limbs = (m + 63) // 64
    one = np.uint64(1)
    pivot_row = 0
    for col in range(ko):
        # with rank m at most ko - m columns are skipped, so rows above this public bound are
        # never changed (if it is ever violated the rank is below m, which the count reports);
        # the loops start at a multiple of 4 below it (whole vectors), and the rows that adds,
        # above the pivot row, are left as they are by their masks
        first = max(0, col - (ko - m)) & ~3
        lo = col >> 6                               # rows at or below the pivot row are zero left of col
        sh = np.uint64(col & 63)
        # unsigned row indices: numba then emits no negative-index wraparound, which would
        # keep LLVM from vectorising these loops over rows
        rows_u = range(np.uint64(first), np.uint64(m))
        pr = np.uint64(pivot_row)
        for rr in rows_u:
            # rows below the pivot row, as a stored mask: ANDed with e[rr] where it is computed,
            # LLVM loads e[rr] only when rr > pr (a branch on the secret pivot row, seen by memcheck)
            below[rr] = _ONES * _gt_bit(rr, pr)
            e[rr] = np.int64(((R[lo, rr] >> sh) & one) | (((R[limbs + lo, rr] >> sh) & one) << one)
                             | (((R[2 * limbs + lo, rr] >> sh) & one) << np.uint64(2))
                             | (((R[3 * limbs + lo, rr] >> sh) & one) << np.uint64(3)))
        # the pivot: the first row at or below the pivot row with a nonzero entry, found on
        # bit strings of the candidate rows (vectorised loops, no serial scan over rows)
        found = np.uint64(0)
        for q in range(row_limbs):
            base = np.uint64(64 * q)
            rows_q = range(max(np.uint64(first), base), min(np.uint64(m), base + np.uint64(64)))
            bits = np.uint64(0)
            for rr in rows_q:
                bits |= (nonzero_bit(e[rr]) & ~_gt_bit(pr, rr)) << (rr - base)
            low = _lowest_bit(bits) & ~found
            found |= nonzero_mask(bits)
            # masks of the pivot's row (sel), the pivot row (at), and what each row does: stored
            # arrays, read back by later loops, so none is a known 0-or-all-ones value there
            for rr in rows_q:
                s = _ONES * ((low >> (rr - base)) & one)
                a = _ONES * (one ^ nonzero_bit(rr ^ pr))
                sel[rr] = s
                at[rr] = a
                swap[rr] = s & ~a
                fac = np.uint64(e[rr]) & below[rr] & ~s
                f[0, rr] = _ONES * (fac & one)
                f[1, rr] = _ONES * ((fac >> one) & one)
                f[2, rr] = _ONES * ((fac >> np.uint64(2)) & one)
                f[3, rr] = _ONES * (fac >> np.uint64(3))
        for rr in rows_u:
            put[rr] = at[rr] & found
        # one pass over the rows per word, all four planes in it: a pass has a fixed cost
        # (loop set-up, the remainder rows) that dominated when each plane had its own
        for w in range(lo, limbs):
            i0, i1, i2, i3 = w, limbs + w, 2 * limbs + w, 3 * limbs + w
            a0 = a1 = a2 = a3 = b0 = b1 = b2 = b3 = np.uint64(0)
            for rr in rows_u:
                sr, ar = sel[rr], at[rr]
                r0, r1, r2, r3 = R[i0, rr], R[i1, rr], R[i2, rr], R[i3, rr]
                a0 ^= sr & r0
                a1 ^= sr & r1
                a2 ^= sr & r2
                a3 ^= sr & r3
                b0 ^= ar & r0
                b1 ^= ar & r1
                b2 ^= ar & r2
                b3 ^= ar & r3
            piv[i0], piv[i1], piv[i2], piv[i3] = a0, a1, a2, a3
            old[i0], old[i1], old[i2], old[i3] = b0, b1, b2, b3
        scaled[:] = 0
        mul_add_scalar_from(scaled, piv, gf16_inv(_entry(piv, col, limbs)), limbs, lo)
        for w in range(lo, limbs):
            i0, i1, i2, i3 = w, limbs + w, 2 * limbs + w, 3 * limbs + w
            s0, s1, s2, s3 = scaled[i0], scaled[i1], scaled[i2], scaled[i3]
            o0, o1, o2, o3 = old[i0], old[i1], old[i2], old[i3]
            # fac * scaled = sum_t fac_t x^t scaled; the planes of x^t scaled (x^4 = x + 1):
            x1 = (s3, s0 ^ s3, s1, s2)
            x2 = (s2, s3 ^ s2, s0 ^ s3, s1)
            x3 = (s1, s2 ^ s1, s3 ^ s2, s0 ^ s3)
            for rr in rows_u:
                pu, sw = put[rr], swap[rr]
                f0, f1, f2, f3 = f[0, rr], f[1, rr], f[2, rr], f[3, rr]
                R[i0, rr] = _row_update(R[i0, rr], pu, sw, s0, o0, f0, f1, f2, f3, s0, x1[0], x2[0], x3[0])
                R[i1, rr] = _row_update(R[i1, rr], pu, sw, s1, o1, f0, f1, f2, f3, s1, x1[1], x2[1], x3[1])
                R[i2, rr] = _row_update(R[i2, rr], pu, sw, s2, o2, f0, f1, f2, f3, s2, x1[2], x2[2], x3[2])
                R[i3, rr] = _row_update(R[i3, rr], pu, sw, s3, o3, f0, f1, f2, f3, s3, x1[3], x2[3], x3[3])
        pivot_row += np.int64(found & one)
    return pivot_row


@nb.njit(**_JIT)
def sample_solution(A, y, r, x):
    """``sample_solution_bitsliced`` for A (m, ko) and y (m) given as elements."""
    m, ko = A.shape
    W = 4 * ((m + 63) // 64)
    Ab = np.zeros((W, ko), np.uint64)
    col = np.zeros(m, np.uint8)
    word = np.zeros(W, np.uint64)
    for c in range(ko):
        for e in range(m):
            col[e] = A[e, c]
        word[:] = 0
        bitslice_into(col, m, word)
        Ab[:, c] = word
    yb = np.zeros(W, np.uint64)
    bitslice_into(y, m, yb)
    return sample_solution_bitsliced(Ab, yb, m, r, x)


@nb.njit(**_JIT)
def sample_solution_bitsliced(A, y, m, r, x):
    """Solve A x = y for x = r + x', x' supported on the pivot columns (the specification's SampleSolution).

    A: the ko columns of the system as m-vectors stored as columns (A[q, c] is word q of
    column c), (Wm, ko); y: an m-vector; r: ko elements; x: ko elements (output). Returns True
    when rank(A) = m. Secret: A, y, r, x; the pivot
    positions and the running pivot row are secret too and are used only through masks
    (constant-time echelon form: every row is touched for every column). The returned rank
    bit is public by design (it only decides whether the signer retries with the next counter).
    """
    Wm, ko = A.shape
    row_limbs = Wm // 4
    ncols = ko + 1
    limbs = (ncols + 63) // 64
    W = 4 * limbs
    # y' = y - A r as one more column, then the augmented rows [A | y'], bitsliced along the
    # rows and transposed: R[i, e] is word i of row e. Columns become rows by 64 x 64 bit
    # transposes of each plane.
    yp = y.copy()
    col = np.zeros(Wm, np.uint64)
    for c in range(ko):
        for q in range(Wm):             # element loops, not slice assignment: its shape check
            col[q] = A[q, c]            # costs seconds of compiling
        mul_add_scalar(yp, col, r[c], row_limbs)
    R = np.zeros((W, m), np.uint64)
    block = np.zeros(64, np.uint64)
    for p in range(4):
        for cb in range(limbs):
            for rb in range(row_limbs):
                for j in range(64):
                    c = 64 * cb + j
                    q = p * row_limbs + rb
                    block[j] = A[q, c] if c < ko else (yp[q] if c == ko else np.uint64(0))
                _transpose64(block)
                for i in range(min(64, m - 64 * rb)):
                    R[p * limbs + cb, 64 * rb + i] = block[i]

    full_rank = declassify(np.int64(_echelon_form(R, ko) == m)) != 0   # public: the signer retries

    # back substitution from the last row up; each row's pivot column is located as a one-hot
    # bit mask (lowest nonzero column), so it is never used as an index. The rows above take
    # their entries in that column through the mask, all rows at once (a vectorised loop).
    yv = np.zeros(m, np.int64)                      # the y column
    for p in range(4):
        Rp = R[p * limbs + (ko >> 6)]
        for e in range(m):
            yv[e] |= np.int64((Rp[e] >> np.uint64(ko & 63)) & np.uint64(1)) << p
    xw = np.zeros(W, np.uint64)                     # x, bitsliced, starting from r
    for c in range(ko):
        for p in range(4):
            xw[p * limbs + (c >> 6)] |= np.uint64((np.int64(r[c]) >> p) & 1) << np.uint64(c & 63)
    onehot = np.zeros(limbs, np.uint64)
    bits = np.zeros((4, m), np.uint64)              # each row's entry in the pivot column, per plane
    for rr in range(m - 1, -1, -1):
        found = np.uint64(0)
        for w in range(limbs):
            nz = R[w, rr] | R[limbs + w, rr] | R[2 * limbs + w, rr] | R[3 * limbs + w, rr]
            if w == ko >> 6:               # drop the y column and the padding (public position)
                nz &= (np.uint64(1) << np.uint64(ko & 63)) - np.uint64(1)
            elif w > ko >> 6:
                nz = np.uint64(0)
            onehot[w] = _lowest_bit(nz) & ~found
            found |= np.uint64(nonzero_mask(nz))
        yr = yv[rr]
        for w in range(limbs):
            for p in range(4):
                xw[p * limbs + w] ^= onehot[w] & bit_mask(yr, p)
        above = range(np.uint64(rr))                # unsigned: no negative-index handling
        # a pass over the rows above per word, all four planes in it (few passes: each has a
        # fixed cost that dominated when every plane and word had its own)
        for w in range(limbs):
            oh = onehot[w]
            i0, i1, i2, i3 = w, limbs + w, 2 * limbs + w, 3 * limbs + w
            if w == 0:
                for i in above:
                    bits[0, i] = R[i0, i] & oh
                    bits[1, i] = R[i1, i] & oh
                    bits[2, i] = R[i2, i] & oh
                    bits[3, i] = R[i3, i] & oh
            else:
                for i in above:
                    bits[0, i] |= R[i0, i] & oh
                    bits[1, i] |= R[i1, i] & oh
                    bits[2, i] |= R[i2, i] & oh
                    bits[3, i] |= R[i3, i] & oh
        for i in above:
            coef = np.int64(nonzero_bit(bits[0, i]) | (nonzero_bit(bits[1, i]) << np.uint64(1))
                            | (nonzero_bit(bits[2, i]) << np.uint64(2)) | (nonzero_bit(bits[3, i]) << np.uint64(3)))
            yv[i] ^= gf16_mul(coef, yr)
    unbitslice_into(xw, ko, x)
    return full_rank


@nb.njit(**_JIT)
def assemble_signature(V, O, x, n, s):
    """s_i = (v_i + O x_i, x_i) for i < k, as k*n elements. Secret: V, O, x (the output is public)."""
    k, v = V.shape
    o = O.shape[1]
    for i in range(k):
        for a in range(v):
            acc = np.int64(V[i, a])
            for c in range(o):
                acc ^= gf16_mul(O[a, c], x[i * o + c])
            s[i * n + a] = acc
        for c in range(o):
            s[i * n + v + c] = x[i * o + c]


# -- the per-instance cores of signing and verification (shared by single and batched calls) ----

@nb.njit(**_JIT)
def quadratic_pairs(X, P, U):
    """U[i, j] = x_i^T P x_j (m-vectors) for the rows x_i of X (k, size) and a packed
    upper-triangular P. Secret: X and P when signing (vinegar vectors, P1); masks only."""
    k, size = X.shape
    W = P.shape[1]
    Xt = np.ascontiguousarray(X.T)
    XP = np.zeros((k, size, W), np.uint64)
    mul_transposed_packed(Xt, P, XP)                         # x_i^T P
    Ut = np.zeros((k, k, W), np.uint64)
    mul_transposed(Xt, np.ascontiguousarray(XP.transpose(1, 0, 2)), False, Ut)
    for i in range(k):
        for j in range(k):
            U[i, j] = Ut[j, i]


@nb.njit(**_JIT)
def _aligned_zeros(count):
    """``count`` zero words starting on a 64-byte boundary, so no 32-byte block straddles a cache line."""
    raw = np.zeros(count + 8, np.uint64)
    skip = (64 - raw.ctypes.data % 64) % 64 // 8
    return raw[skip:skip + count]


@nb.njit(inline="always", **_JIT)
def _times_x(a, limbs, nibbles):
    """a <- x * a for one W-word m-vector in an array: bitsliced (``_planes_times_x`` per limb) or
    nibble-packed (``nibbles`` non-empty, ``_nibbles_times_x`` per word)."""
    L = len(limbs)
    if len(nibbles):
        for q in range(4 * L):
            a[q] = _nibbles_times_x(a[q])
    else:
        for q in range(L):
            a[q], a[L + q], a[2 * L + q], a[3 * L + q] = _planes_times_x(a[q], a[L + q], a[2 * L + q],
                                                                         a[3 * L + q])


@nb.njit(inline="always", **_JIT)
def _nibbles_times_x(w):
    """x times each of the 16 nibble-packed elements of a word: every nibble shifted up one bit,
    its top bit fed back into bits 0 and 1 (x^4 = x + 1)."""
    top = (w >> np.uint64(3)) & np.uint64(0x1111111111111111)
    return ((w << np.uint64(1)) & np.uint64(0xEEEEEEEEEEEEEEEE)) ^ top ^ (top << np.uint64(1))


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
                a = _nibbles_times_x(a)
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
            a0, a1, a2, a3 = _planes_times_x(a0, a1, a2, a3)
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
        Px[:] = total
        total[:] = 0
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


@nb.njit(**_JIT)
def slots_to_bitsliced(slots, out):
    """m-vectors from their encoding in W-word slots (``ExpandedPublicKey.nibbles``) to bit
    planes, out (count, W): each slot read as a vector of 16 W nibbles, zero past m. Shifts and
    masks at public positions (``bitslice_stream``): safe on secret data (the expanded secret
    key and signing's products on the GFNI path)."""
    count, W = slots.shape
    stream = np.zeros(count * W + 4, np.uint64)   # the spare word bitslice_stream wants
    for i in range(count):
        for w in range(W):
            stream[i * W + w] = slots[i, w]
    bitslice_stream(stream, 16 * W, out)


# The whip and the solver are the largest kernels of signing: compiled once each, on their own,
# and called through their addresses (``units()``) by every kernel that uses them.
_u64_1, _u64_2, _u64_3 = (types.Array(types.uint64, d, "C") for d in (1, 2, 3))
_u8_1 = types.Array(types.uint8, 1, "C")
WHIP = Unit(whip_bitsliced, types.void(_u64_3, _u64_3, types.int64, types.Array(types.int64, 1, "C"), _u64_1, _u64_2))
SOLVE = Unit(sample_solution_bitsliced, types.boolean(_u64_2, _u64_1, types.int64, _u8_1, _u8_1))
whip_unit, solve_unit = WHIP.call, SOLVE.call


def units() -> tuple[int, int]:
    """The addresses of the whip and solver units in this process, the ``units`` argument of
    ``sign_attempt`` and the signing loops (compiled, or loaded from the cache, on first use)."""
    return addresses((WHIP, SOLVE))


def verify_units() -> tuple[int, int]:
    """``units()`` for verification, which needs the whip only (the solver's address is 0)."""
    return addresses((WHIP,))[0], 0


@nb.njit(inline="always", **_JIT)     # one compiled level fewer: each level re-optimises its callees
def whip_and_solve(U, M, t, r, f_tail, x, units):
    """The whipped system A x = t - sum_ell z^ell u of the pair products U (k, k, W) and
    M (k, o, W), solved by SampleSolution with randomness r: writes x (k*o elements) and
    returns the (public) rank bit. ``units``: ``units()``. Secret: all inputs and x."""
    k, o, W = M.shape
    m = t.shape[0]
    y = np.zeros(W, np.uint64)
    bitslice_into(t, m, y)
    A = np.zeros((W, k * o), np.uint64)
    whip_unit(units[0], U, M, m, f_tail, y, A)
    return solve_unit(units[1], A, y, m, r, x)


@nb.njit(**_JIT)
def sign_attempt(V, r, P1, L, t, f_tail, x, units):
    """One attempt of the signing loop for vinegar vectors V (k, v) and randomness r (ko):
    M_i = v_i^T L, U = [v_i^T P1 v_j], then ``whip_and_solve``. Writes x and returns the
    (public) rank bit. ``units``: ``units()``. Secret: all inputs and x."""
    k = V.shape[0]
    o = L.shape[1]
    W = L.shape[2]
    M = np.zeros((k, o, W), np.uint64)
    mul_transposed(np.ascontiguousarray(V.T), L, False, M)
    U = np.zeros((k, k, W), np.uint64)
    quadratic_pairs(V, P1, U)
    return whip_and_solve(U, M, t, r, f_tail, x, units)


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
def decode_nibbles_into(data, out):
    """out (any shape, C order) = the first elements of the nibble string ``data`` (uint8, low
    nibble first). data may be secret (the vinegar bytes in signing): shifts at public positions."""
    flat = out.reshape(-1)
    for i in range(flat.shape[0]):
        flat[i] = (data[i >> 1] >> (4 * (i & 1))) & 15


@nb.njit(**_JIT)
def encode_nibbles_into(elements, out):
    """out (uint8) = the elements (1-D) two a byte, low nibble first, an odd count padded with 0.
    Public data (a signature's elements)."""
    for b in range(out.shape[0]):
        low = elements[2 * b]
        high = elements[2 * b + 1] if 2 * b + 1 < elements.shape[0] else 0
        out[b] = low | (high << 4)


@nb.njit(**_JIT)
def equals_nibbles(y, data):
    """Whether the elements y equal the first len(y) elements of the nibble string ``data``.
    Public data only (verification's last comparison)."""
    differ = 0
    for i in range(y.shape[0]):
        differ |= y[i] ^ ((data[i >> 1] >> (4 * (i & 1))) & 15)
    return differ == 0


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


@nb.njit(**_JIT)
def _evaluate_any_size(S, P, nibbles, f_tail, y, units):
    W = P.shape[1]
    if W == 4:
        evaluate_public_sized(S, P, (0,), nibbles, f_tail, y, units)
    elif W == 8:
        evaluate_public_sized(S, P, (0, 0), nibbles, f_tail, y, units)
    elif W == 12:
        evaluate_public_sized(S, P, (0, 0, 0), nibbles, f_tail, y, units)
    elif W == 16:
        evaluate_public_sized(S, P, (0, 0, 0, 0), nibbles, f_tail, y, units)
    else:
        raise ValueError("evaluate_public: m-vectors of more than 256 elements")


@nb.njit(**_JIT)
def evaluate_public(S, P, encoded, f_tail, y, units):
    """``evaluate_public_sized`` with the vector size and the form (``encoded``) chosen at run
    time, for compiled loops that serve every parameter set (it compiles all eight variants).
    Public data only."""
    if encoded:
        _evaluate_any_size(S, P, (0,), f_tail, y, units)
    else:
        _evaluate_any_size(S, P, (), f_tail, y, units)
