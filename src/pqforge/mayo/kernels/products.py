"""MAYO's products of matrices of m-vectors with matrices of scalars, on bit planes (the portable
set): P1 O and (P1 + P1^T) O for key generation and expansion, v^T L and v^T P1 v for signing.
Secret: O, the vinegar vectors, P1 and L, and every product; masks from the scalars' bits only."""

import numba as nb
import numpy as np

from ...gf16.kernels import bit_mask, mul_add_scalar
from ...jit.cache import JIT_CACHE

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
def quadratic_pairs(X, P, U):
    """U[i, j] = x_i^T P x_j (m-vectors) for the rows x_i of X (k, size) and a packed
    upper-triangular P. Secret: X and P when signing (vinegar vectors, P1); masks only."""
    k, size = X.shape
    W = P.shape[1]
    Xt = np.ascontiguousarray(X.T)
    XP = np.zeros((k, size, W), np.uint64)
    mul_transposed_packed(Xt, P, XP)                         # x_i^T P
    XPt = np.empty((size, k, W), np.uint64)     # (x_i^T P)_c as row c: element loops, as below
    for i in range(k):
        for c in range(size):
            for w in range(W):
                XPt[c, i, w] = XP[i, c, w]
    Ut = np.zeros((k, k, W), np.uint64)
    mul_transposed(Xt, XPt, False, Ut)
    for i in range(k):              # not U[i, j] = Ut[j, i]: a slice assignment's shape check
        for j in range(k):          # costs seconds of compiling (its error message's formatting)
            for w in range(W):
                U[i, j, w] = Ut[j, i, w]
