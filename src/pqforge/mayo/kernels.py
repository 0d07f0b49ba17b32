"""Compiled MAYO kernels (numba, nopython, cached).

Layouts: an m-vector is bitsliced into ``W = 4 * limbs`` uint64 words (``pqforge.gf16``); a
matrix of m-vectors is an array (rows, cols, W); scalar matrices and vectors are uint8 arrays of
GF(16) elements. Each kernel's docstring says which arguments are secret. Kernels that see
secrets use masks only: loop bounds and memory indices depend on public sizes, never on values.
Every kernel keeps its plain-Python twin as ``kernel.py_func``.
"""

import numba as nb
import numpy as np

from ..gf16.kernels import bit_mask, gf16_inv, gf16_mul, mul_add_scalar, nonzero_mask

_JIT = dict(cache=True)
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@nb.njit(**_JIT)
def mul_transposed(B, A, suffix, out):
    """out[r, c] ^= sum_j B[j, r] * A[j, c]: out = B^T A for scalars B (J, R) and m-vectors A (J, C, W).

    With ``suffix`` true, A is upper triangular and only c >= j is read. Each scalar is split
    into its four bits; bit t of B[j, r] masks row j of A into accumulator t (one contiguous,
    vectorised sweep over the row), and the four accumulators are combined with x^t at the
    end. Secret: B (the oil matrix O or the vinegar vectors) and A (L in signing); they are
    only masked and XORed, never used as an index or a branch condition.
    """
    J, C, W = A.shape
    R = B.shape[1]
    limbs = W // 4
    acc = np.zeros((4, R, C * W), np.uint64)
    for j in range(J):
        row = A[j].reshape(C * W)
        lo = j * W if suffix else 0
        for r in range(R):
            for t in range(4):
                mask = bit_mask(B[j, r], t)
                a = acc[t, r]
                for q in range(lo, C * W):
                    a[q] ^= mask & row[q]
    for r in range(R):
        for c in range(C):
            for t in range(4):
                mul_add_scalar(out[r, c], acc[t, r, c * W:(c + 1) * W], 1 << t, limbs)


@nb.njit(**_JIT)
def _combine_buckets(buckets, out, limbs):
    """out ^= sum_s s * buckets[s]: the four bit-sums of the buckets, then x-powers."""
    W = 4 * limbs
    t = np.zeros(W, np.uint64)
    for bit in range(4):
        t[:] = 0
        for s in range(16):
            if (s >> bit) & 1:
                for w in range(W):
                    t[w] ^= buckets[s, w]
        mul_add_scalar(out, t, 1 << bit, limbs)


@nb.njit(**_JIT)
def eval_public(P, S, out):
    """out[i, j] = S_i^T P S_j for an upper-triangular m-vector matrix P (n, n, W), S (k, n).

    Public data only (verification): it accumulates into buckets indexed by the elements of S,
    which would leak S's values through the memory access pattern if they were secret.
    """
    n, _, W = P.shape
    k = S.shape[0]
    limbs = W // 4
    PS = np.zeros((k, n, W), np.uint64)
    buckets = np.zeros((k, 16, W), np.uint64)
    for b in range(n):
        buckets[:] = 0
        for a in range(b + 1):
            pab = P[a, b]
            for i in range(k):
                s = S[i, a]
                for w in range(W):
                    buckets[i, s, w] ^= pab[w]
        for i in range(k):
            _combine_buckets(buckets[i], PS[i, b], limbs)
    out[:] = 0
    one = np.zeros((16, W), np.uint64)
    for i in range(k):
        for j in range(k):
            one[:] = 0
            for b in range(n):
                s = S[j, b]
                for w in range(W):
                    one[s, w] ^= PS[i, b, w]
            _combine_buckets(one, out[i, j], limbs)


@nb.njit(**_JIT)
def unbitslice_into(words, length, out):
    """Elements of a bitsliced vector: out[e] = element e (e < length). Secret-safe (shifts only)."""
    limbs = words.shape[0] // 4
    for e in range(length):
        w = e >> 6
        b = np.uint64(e & 63)
        out[e] = ((words[w] >> b) & np.uint64(1)) | (((words[limbs + w] >> b) & np.uint64(1)) << np.uint64(1)) \
            | (((words[2 * limbs + w] >> b) & np.uint64(1)) << np.uint64(2)) \
            | (((words[3 * limbs + w] >> b) & np.uint64(1)) << np.uint64(3))


@nb.njit(**_JIT)
def whip(U, M, m, f_tail, y, A):
    """Combine the k(k+1)/2 evaluations with powers of z modulo f(z) = z^m + f_tail(z).

    For ell = 0, 1, ... over pairs (i, j) with j running from k-1 down to i:
        y ^= z^ell (U[i, j] + U[j, i])   (U[i, i] alone when i == j)
        A[:, i-th block] ^= z^ell M[j]  and, when i != j, A[:, j-th block] ^= z^ell M[i]
    U: (k, k, W) m-vectors; M: (k, o, W) m-vectors or an empty array (verification needs no
    A); y: m elements (accumulated into); A: (m, k*o) elements (accumulated into).
    Secret in signing: U, M, y, A; only public sizes steer the loops.
    """
    k = U.shape[0]
    o = M.shape[1]
    E = k * (k + 1) // 2
    yext = np.zeros(m + E, np.uint8)
    Aext = np.zeros((m + E, k * o), np.uint8)
    u = np.zeros(m, np.uint8)
    col = np.zeros(m, np.uint8)
    W = U.shape[2]
    tmp = np.zeros(W, np.uint64)
    ell = 0
    for i in range(k):
        for j in range(k - 1, i - 1, -1):
            tmp[:] = U[i, j]
            if i != j:
                for w in range(W):
                    tmp[w] ^= U[j, i, w]
            unbitslice_into(tmp, m, u)
            for e in range(m):
                yext[ell + e] ^= u[e]
            if o > 0:
                for c in range(o):
                    unbitslice_into(M[j, c], m, col)
                    for e in range(m):
                        Aext[ell + e, i * o + c] ^= col[e]
                    if i != j:
                        unbitslice_into(M[i, c], m, col)
                        for e in range(m):
                            Aext[ell + e, j * o + c] ^= col[e]
            ell += 1
    # z^(m+d) = z^d f_tail(z); d + 3 < m for every parameter set, so one pass reduces fully
    for d in range(m + E - 1, m - 1, -1):
        for t in range(4):
            ft = f_tail[t]
            yext[d - m + t] ^= gf16_mul(yext[d], ft)
            for c in range(k * o):
                Aext[d - m + t, c] ^= gf16_mul(Aext[d, c], ft)
    for e in range(m):
        y[e] ^= yext[e]
    if o > 0:
        for e in range(m):
            for c in range(k * o):
                A[e, c] ^= Aext[e, c]


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
def _eq_mask(a, b):
    """All-ones when a == b (small non-negative ints), else 0; branch-free."""
    return ~nonzero_mask(np.uint64(a ^ b))


@nb.njit(**_JIT)
def _gt_mask(a, b):
    """All-ones when a > b (ints below 2^62), else 0; branch-free."""
    return _ONES * np.uint64((np.int64(b) - np.int64(a)) >> 63 & 1)


@nb.njit(**_JIT)
def sample_solution(A, y, r, x):
    """Solve A x = y for x = r + x', x' supported on the pivot columns (the specification's SampleSolution).

    A: (m, ko) elements, y: m elements, r: ko elements, x: ko elements (output).
    Returns True when rank(A) = m. Secret: A, y, r, x; the pivot positions and the running pivot
    row are secret too and are used only through masks (constant-time echelon form: every row
    is touched for every column). The returned rank bit is public by design (it only decides
    whether the signer retries with the next counter).
    """
    m, ko = A.shape
    ncols = ko + 1
    limbs = (ncols + 63) // 64
    W = 4 * limbs
    # y' = y - A r, then the augmented rows [A | y'] bitsliced
    rows = np.zeros((m, W), np.uint64)
    for e in range(m):
        acc = np.int64(y[e])
        for c in range(ko):
            acc ^= gf16_mul(A[e, c], r[c])
        for c in range(ncols):
            v = np.uint64(acc) if c == ko else np.uint64(A[e, c])
            w = c >> 6
            b = np.uint64(c & 63)
            for p in range(4):
                rows[e, p * limbs + w] |= ((v >> np.uint64(p)) & np.uint64(1)) << b

    # echelon form: pivots normalised to 1, zeros below each pivot
    pivot = np.zeros(W, np.uint64)
    scaled = np.zeros(W, np.uint64)
    pivot_row = 0
    for col in range(ko):
        pivot[:] = 0
        found = np.uint64(0)
        for rr in range(m):
            take = np.uint64(_eq_mask(rr, pivot_row)) | (np.uint64(_gt_mask(rr, pivot_row)) & ~found)
            for w in range(W):
                pivot[w] ^= take & rows[rr, w]
            found = np.uint64(nonzero_mask(np.uint64(_entry(pivot, col, limbs))))
        scaled[:] = 0
        mul_add_scalar(scaled, pivot, gf16_inv(_entry(pivot, col, limbs)), limbs)
        for rr in range(m):
            is_pr = np.uint64(_eq_mask(rr, pivot_row)) & found
            for w in range(W):
                rows[rr, w] = (rows[rr, w] & ~is_pr) | (scaled[w] & is_pr)
            f = np.int64(_entry(rows[rr], col, limbs)) & np.int64(np.uint64(_gt_mask(rr, pivot_row)) & np.uint64(15))
            mul_add_scalar(rows[rr], scaled, f, limbs)
        pivot_row += np.int64(found & np.uint64(1))
    full_rank = pivot_row == m

    # back substitution from the last row up; the pivot column is found by masks
    yv = np.zeros(m, np.int64)
    for e in range(m):
        yv[e] = _entry(rows[e], ko, limbs)
    for c in range(ko):
        x[c] = r[c]
    onehot = np.zeros(limbs, np.uint64)
    for rr in range(m - 1, -1, -1):
        onehot[:] = 0
        found = np.uint64(0)
        yr = yv[rr]
        for c in range(ko):
            nz = np.uint64(nonzero_mask(np.uint64(_entry(rows[rr], c, limbs))))
            hit = nz & ~found
            found |= nz
            x[c] ^= np.uint8(np.uint64(yr) & hit)
            onehot[c >> 6] |= (hit & np.uint64(1)) << np.uint64(c & 63)
        for i in range(rr):
            coef = np.int64(0)
            for p in range(4):
                bits = np.uint64(0)
                for w in range(limbs):
                    bits |= rows[i, p * limbs + w] & onehot[w]
                coef |= np.int64(np.uint64(nonzero_mask(bits)) & np.uint64(1)) << p
            yv[i] ^= gf16_mul(coef, yr)
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


@nb.njit(**_JIT)
def fill_upper(entries, out):
    """Place the row-major upper-triangle entries (T, W) into a zeroed square out (size, size, W)."""
    size = out.shape[0]
    t = 0
    for i in range(size):
        for j in range(i, size):
            out[i, j] = entries[t]
            t += 1
