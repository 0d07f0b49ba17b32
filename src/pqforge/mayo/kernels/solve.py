"""Echelon form and solving: SampleSolution in constant time, on a bitsliced system (a unit of its
own, ``SOLVE``) and on elements (the reference form). Secret: the system, the target, the
randomness and the solution; the rank bit is public (the signing loop retries on it)."""

import numba as nb
import numpy as np
from numba import types

from ..._barrier import declassify
from ...gf16.kernels import gf16_inv, mul_add_scalar, mul_add_scalar_from, nonzero_bit, nonzero_mask
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
def _parity(x):
    """The sum of x's 64 bits mod 2 (0 or 1): shifts only."""
    for k in (32, 16, 8, 4, 2, 1):
        x ^= x >> np.uint64(k)
    return x & np.uint64(1)


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


@nb.njit(**_JIT)
def _echelon_form(R, ko, P):
    """The echelon form of the augmented rows [A | y], its pivot rows (pivot 1) written by
    column: P[c] is the pivot row of column c, or zero when column c has no pivot. Returns
    rank(A).

    R (W, m) holds the rows transposed: R[i, rr] is word i of row rr, so that each step is a
    loop over all rows for one word, which vectorises; P is (ko, W). The ko + 1 columns are
    right-aligned in the rows' 64 limbs bits (column c at bit c + 64 limbs - ko - 1): a column
    step touches the limbs from its own on, so all but the first few columns touch one limb
    fewer.

    Per column, among the rows from the running pivot row pr down: the first row with a
    nonzero entry is found (the lowest bit of the candidate rows as a bit string); the sum S of
    the rows from pr down to it (all zero in the column but that one, as MAYO-C builds its
    pivot row) normalised to 1 is the column's pivot row; every row below pr adds its entry
    times it, and pr moves down one (when the column has a pivot). Row pr is left behind as it
    is, never moved or replaced: it is a combination of the pivot row and the rows below it
    after their elimination (e P, or the sum of rows pr+1 .. first), so those span what the
    rows did.

    Constant time: every row from a public bound on takes part in every column step, through
    masks. Secret: the rows, P, and the pivot positions and running pivot row derived from
    them.
    """
    W, m = R.shape
    limbs = W // 4
    off = 64 * limbs - (ko + 1)                     # column c sits at bit position c + off
    e = np.zeros(m, np.int64)                       # each row's entry in the column
    below = np.zeros(m, np.uint64)                  # rows below the pivot row (mask)
    sel = np.zeros(m, np.uint64)                    # the rows summed into the pivot (mask)
    f = np.zeros((4, m), np.uint64)                 # bit masks of each row's elimination factor
    piv = np.zeros(W, np.uint64)
    scaled = np.zeros(W, np.uint64)
    row_limbs = (m + 63) // 64
    one = np.uint64(1)
    pivot_row = 0
    for col in range(ko):
        # with rank m at most ko - m columns are skipped, so rows above this public bound are
        # left behind by then (if it is ever violated the rank is below m, which the count
        # reports); the loops start at a multiple of 4 below it (whole vectors), and the rows
        # that adds, above the pivot row, are left as they are by their masks
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
            # masks of the rows summed (sel) and of each row's factor: stored arrays, read back
            # by later loops, so none is a known 0-or-all-ones value there
            for rr in rows_q:
                sel[rr] = _ONES * ((upto >> (rr - base)) & ~_gt_bit(pr, rr) & one)
                fac = np.uint64(e[rr]) & below[rr]      # (rows at and above the pivot row: 0)
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
        for i in range(W):
            P[col, i] = scaled[i] & found
        for w in range(lo, limbs):
            i0, i1, i2, i3 = w, limbs + w, 2 * limbs + w, 3 * limbs + w
            s0, s1, s2, s3 = scaled[i0], scaled[i1], scaled[i2], scaled[i3]
            # fac * scaled = sum_t fac_t x^t scaled; the planes of x^t scaled (x^4 = x + 1):
            x1 = (s3, s0 ^ s3, s1, s2)
            x2 = (s2, s3 ^ s2, s0 ^ s3, s1)
            x3 = (s1, s2 ^ s1, s3 ^ s2, s0 ^ s3)
            for rr in rows_u:
                f0, f1, f2, f3 = f[0, rr], f[1, rr], f[2, rr], f[3, rr]
                R[i0, rr] ^= (f0 & s0) ^ (f1 & x1[0]) ^ (f2 & x2[0]) ^ (f3 & x3[0])
                R[i1, rr] ^= (f0 & s1) ^ (f1 & x1[1]) ^ (f2 & x2[1]) ^ (f3 & x3[1])
                R[i2, rr] ^= (f0 & s2) ^ (f1 & x1[2]) ^ (f2 & x2[2]) ^ (f3 & x3[2])
                R[i3, rr] ^= (f0 & s3) ^ (f1 & x1[3]) ^ (f2 & x2[3]) ^ (f3 & x3[3])
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

    P = np.zeros((ko, W), np.uint64)
    full_rank = declassify(np.int64(_echelon_form(R, ko, P) == m)) != 0   # public: the signer retries

    # back substitution from the last column on: x'[c] = y'(P[c]) minus P[c]'s inner product with
    # the x' found so far (its entries left of c are zero, and x' is still zero at c and at y's
    # column); zero where c has no pivot, as P[c] is. The columns are public, so x' is written
    # at public positions.
    xw = np.zeros(W, np.uint64)                     # x - r, at the columns' bit positions
    one = np.uint64(1)
    for c in range(ko - 1, -1, -1):
        at_bit = c + off
        lo = at_bit >> 6
        c0 = c1 = c2 = c3 = np.uint64(0)
        for w in range(lo, limbs):
            a0, a1, a2, a3 = P[c, w], P[c, limbs + w], P[c, 2 * limbs + w], P[c, 3 * limbs + w]
            b0, b1, b2, b3 = xw[w], xw[limbs + w], xw[2 * limbs + w], xw[3 * limbs + w]
            # the lanes' products a * b (x^4 = x + 1), summed over the limbs
            d4 = (a1 & b3) ^ (a2 & b2) ^ (a3 & b1)
            d5 = (a2 & b3) ^ (a3 & b2)
            d6 = a3 & b3
            c0 ^= (a0 & b0) ^ d4
            c1 ^= (a0 & b1) ^ (a1 & b0) ^ d4 ^ d5
            c2 ^= (a0 & b2) ^ (a1 & b1) ^ (a2 & b0) ^ d5 ^ d6
            c3 ^= (a0 & b3) ^ (a1 & b2) ^ (a2 & b1) ^ (a3 & b0) ^ d6
        top = np.uint64(63)                         # y's column: the last bit of the last limb
        b = np.uint64(at_bit & 63)
        for p, cp in enumerate((c0, c1, c2, c3)):
            xw[p * limbs + lo] |= (((P[c, p * limbs + limbs - 1] >> top) ^ _parity(cp)) & one) << b
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
