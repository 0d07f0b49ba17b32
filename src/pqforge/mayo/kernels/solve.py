"""Echelon form and solving: SampleSolution in constant time, on a bitsliced system (a unit of its
own, ``SOLVE``) and on elements (the reference form). Secret: the system, the target, the
randomness and the solution; the rank bit is public (the signing loop retries on it)."""

import numba as nb
import numpy as np
from numba import types

from ..._barrier import declassify
from ...gf16.kernels import (bit_mask, gf16_inv, gf16_mul, mul_add_scalar, mul_add_scalar_from, nonzero_bit,
                             nonzero_mask)
from ...jit.cache import JIT_CACHE
from ...jit.units import Unit
from .layout import bitslice_into

_JIT = dict(cache=JIT_CACHE, nogil=True)  # nogil: batches run kernels on several threads
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


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
def _smear_down(x):
    """x with every bit below its highest set bit set too (0 for 0): shifts only."""
    s = x
    for k in (1, 2, 4, 8, 16, 32):
        s |= s >> np.uint64(k)
    return s


@nb.njit(**_JIT)
def _gt_bit(a, b):
    """1 when a > b, else 0 (as uint64; both below 2^62); arithmetic only, so loops over it
    still vectorise."""
    return np.uint64((np.int64(b) - np.int64(a)) >> 63 & 1)


@nb.njit(**_JIT, inline="always")
def _row_update(x, put, pivot, f0, f1, f2, f3, c0, c1, c2, c3):
    """One word of a row in an elimination step: the normalised pivot row replaces the pivot
    row (``put``), and every row adds fac * pivot, planes c0..c3 of x^t * pivot selected by
    fac's bit masks f0..f3. Masks only (all secret)."""
    x = (x & ~put) | (pivot & put)
    return x ^ (f0 & c0) ^ (f1 & c1) ^ (f2 & c2) ^ (f3 & c3)


@nb.njit(**_JIT)
def _echelon_form(R, ko):
    """Bring the augmented rows [A | y] to echelon form with pivots 1; returns rank(A).

    R (W, m) holds the rows transposed: R[i, rr] is word i of row rr, so that each step is a
    loop over all rows for one word, which vectorises. The ko + 1 columns are right-aligned in
    the rows' 64 limbs bits (column c at bit c + 64 limbs - ko - 1): a column step touches the
    limbs from its own on, so all but the first few columns touch one limb fewer.

    Constant time: every row takes part in every column step, through masks. Secret: the rows,
    and the pivot positions and running pivot row derived from them. Per column: the first row
    at or below the pivot row with a nonzero entry (the lowest bit of the candidate rows as a
    bit string) is found; the sum of the rows from the pivot row down to it (all zero in the
    column but that one, as MAYO-C builds its pivot row: no swap) is normalised to 1 and
    replaces the pivot row; every row below adds its entry times it.
    """
    W, m = R.shape
    limbs = W // 4
    off = 64 * limbs - (ko + 1)                     # column c sits at bit position c + off
    e = np.zeros(m, np.int64)                       # each row's entry in the column
    below = np.zeros(m, np.uint64)                  # rows below the pivot row (mask)
    sel = np.zeros(m, np.uint64)                    # the rows summed into the pivot (mask)
    at = np.zeros(m, np.uint64)                     # the pivot row (one-hot mask)
    f = np.zeros((4, m), np.uint64)                 # bit masks of each row's elimination factor
    piv = np.zeros(W, np.uint64)
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
        at_bit = col + off
        lo = at_bit >> 6                            # rows at or below the pivot row are zero left of col
        sh = np.uint64(at_bit & 63)
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
            # the rows up to the first nonzero one (all of them while none is found), none
            # once an earlier word had it
            upto = _smear_down(_lowest_bit(bits))
            upto = (upto | (_ONES * (one ^ nonzero_bit(bits)))) & ~found
            found |= nonzero_mask(bits)
            # masks of the rows summed (sel), the pivot row (at), and what each row does: stored
            # arrays, read back by later loops, so none is a known 0-or-all-ones value there
            for rr in rows_q:
                s = _ONES * ((upto >> (rr - base)) & ~_gt_bit(pr, rr) & one)
                sel[rr] = s
                at[rr] = _ONES * (one ^ nonzero_bit(rr ^ pr))
                fac = np.uint64(e[rr]) & below[rr]      # (the rows summed before the first nonzero: 0)
                f[0, rr] = _ONES * (fac & one)
                f[1, rr] = _ONES * ((fac >> one) & one)
                f[2, rr] = _ONES * ((fac >> np.uint64(2)) & one)
                f[3, rr] = _ONES * (fac >> np.uint64(3))
        # one pass over the rows per word, all four planes in it: a pass has a fixed cost
        # (loop set-up, the remainder rows) that dominated when each plane had its own
        for w in range(lo, limbs):
            i0, i1, i2, i3 = w, limbs + w, 2 * limbs + w, 3 * limbs + w
            a0 = a1 = a2 = a3 = np.uint64(0)
            for rr in rows_u:
                sr = sel[rr]
                a0 ^= sr & R[i0, rr]
                a1 ^= sr & R[i1, rr]
                a2 ^= sr & R[i2, rr]
                a3 ^= sr & R[i3, rr]
            piv[i0], piv[i1], piv[i2], piv[i3] = a0, a1, a2, a3
        scaled[:] = 0
        mul_add_scalar_from(scaled, piv, gf16_inv(_entry(piv, at_bit, limbs)), limbs, lo)
        for w in range(lo, limbs):
            i0, i1, i2, i3 = w, limbs + w, 2 * limbs + w, 3 * limbs + w
            s0, s1, s2, s3 = scaled[i0], scaled[i1], scaled[i2], scaled[i3]
            # fac * scaled = sum_t fac_t x^t scaled; the planes of x^t scaled (x^4 = x + 1):
            x1 = (s3, s0 ^ s3, s1, s2)
            x2 = (s2, s3 ^ s2, s0 ^ s3, s1)
            x3 = (s1, s2 ^ s1, s3 ^ s2, s0 ^ s3)
            for rr in rows_u:
                pu = at[rr] & found          # the pivot row, when the column has a pivot
                f0, f1, f2, f3 = f[0, rr], f[1, rr], f[2, rr], f[3, rr]
                R[i0, rr] = _row_update(R[i0, rr], pu, s0, f0, f1, f2, f3, s0, x1[0], x2[0], x3[0])
                R[i1, rr] = _row_update(R[i1, rr], pu, s1, f0, f1, f2, f3, s1, x1[1], x2[1], x3[1])
                R[i2, rr] = _row_update(R[i2, rr], pu, s2, f0, f1, f2, f3, s2, x1[2], x2[2], x3[2])
                R[i3, rr] = _row_update(R[i3, rr], pu, s3, f0, f1, f2, f3, s3, x1[3], x2[3], x3[3])
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
    off = 64 * limbs - ncols            # right-aligned columns (``_echelon_form``): column c at bit c + off
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
                    c = 64 * cb + j - off
                    q = p * row_limbs + rb
                    block[j] = np.uint64(0) if c < 0 else (A[q, c] if c < ko else yp[q])
                _transpose64(block)
                for i in range(min(64, m - 64 * rb)):
                    R[p * limbs + cb, 64 * rb + i] = block[i]

    full_rank = declassify(np.int64(_echelon_form(R, ko) == m)) != 0   # public: the signer retries

    # back substitution from the last row up; each row's pivot column is located as a one-hot
    # bit mask (lowest nonzero column), so it is never used as an index. The rows above take
    # their entries in that column through the mask, all rows at once (a vectorised loop).
    yv = np.zeros(m, np.int64)                      # the y column (the last bit of the last limb)
    for p in range(4):
        Rp = R[p * limbs + limbs - 1]
        for e in range(m):
            yv[e] |= np.int64(Rp[e] >> np.uint64(63)) << p
    xw = np.zeros(W, np.uint64)                     # x - r, at the columns' bit positions
    onehot = np.zeros(limbs, np.uint64)
    bits = np.zeros((4, m), np.uint64)              # each row's entry in the pivot column, per plane
    for rr in range(m - 1, -1, -1):
        found = np.uint64(0)
        for w in range(limbs):
            nz = R[w, rr] | R[limbs + w, rr] | R[2 * limbs + w, rr] | R[3 * limbs + w, rr]
            if w == 0:                     # drop the padding and the y column (public positions)
                nz &= ~((np.uint64(1) << np.uint64(off)) - np.uint64(1))
            if w == limbs - 1:
                nz &= ~(np.uint64(1) << np.uint64(63))
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
    one = np.uint64(1)
    for c in range(ko):                             # x = r + (x - r), read at each column's position
        at_bit = c + off
        w, b = at_bit >> 6, np.uint64(at_bit & 63)
        x[c] = r[c] ^ np.uint8(((xw[w] >> b) & one) | (((xw[limbs + w] >> b) & one) << one)
                               | (((xw[2 * limbs + w] >> b) & one) << np.uint64(2))
                               | (((xw[3 * limbs + w] >> b) & one) << np.uint64(3)))
    return full_rank


# The largest kernel of signing: compiled once, on its own, and called through its address
# (``sign.units()``) by every kernel that uses it.
_u64_1, _u64_2 = (types.Array(types.uint64, d, "C") for d in (1, 2))
_u8_1 = types.Array(types.uint8, 1, "C")
SOLVE = Unit(sample_solution_bitsliced, types.boolean(_u64_2, _u64_1, types.int64, _u8_1, _u8_1))
solve_unit = SOLVE.call
