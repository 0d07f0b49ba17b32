"""MAYO's products with the oil matrix on m-vectors in their byte encoding, with GFNI.

Used for key generation, secret-key expansion, signing's products and verification's quadratic
form when ``gf16.gfni.ACTIVE``:
the keystream of P1 || P2 is already the encoding, so the products with O run on it as it comes,
the expanded secret key keeps P1 || L in it, and only the small products of a signing attempt
go to bit planes (for the whipping and the linear solve). Layout: a flat uint64 array
of slots, one m-vector's m/2 bytes at the start of each slot of W = 4 * len(limbs) words and zero
after them (the slots of ``ExpandedPublicKey.nibbles``): first the v(v+1)/2 entries of the packed
upper triangle P1 (row by row, j >= i), then the v x o entries of P2, row by row.

Secret: the oil matrix O, the vinegar vectors, P1, L and every product. Each secret scalar becomes
its bit matrix by arithmetic (``gfni.scalar_matrix``), the affine instruction's timing does not depend on its
operands, and loops and memory positions follow the public sizes only.
"""

import numba as nb
import numpy as np

from .._compile_cache import JIT_CACHE
from ..gf16.gfni import mul_add_slot, scalar_matrices
from .kernels import slots_to_bitsliced, unbitslice_into, whip_and_solve, whip_bitsliced

_JIT = dict(cache=JIT_CACHE, nogil=True)


@nb.njit(**_JIT)
def _add_p1_times_oil(slots, mats, limbs, symmetric):
    """Q ^= P1 O, where Q is the v x o block after P1 (P2 on entry); with ``symmetric`` (public),
    Q ^= (P1 + P1^T) O instead. Entry (r, j) of P1 adds P1[r, j] O[j, c] to Q[r, c], and for
    the transpose P1[r, j] O[r, c] to Q[j, c]; on the diagonal the two cancel, as they should
    ((P1 + P1^T) has a zero diagonal in characteristic 2). ``mats``: the bit matrices of O."""
    v, o = mats.shape
    W = 4 * len(limbs)
    q0 = v * (v + 1) // 2 * W
    e = 0
    for r in range(v):
        for j in range(r, v):
            for c in range(o):
                mul_add_slot(slots, q0 + (r * o + c) * W, slots, e, mats[j, c], limbs)
            if symmetric:
                for c in range(o):
                    mul_add_slot(slots, q0 + (j * o + c) * W, slots, e, mats[r, c], limbs)
            e += W


@nb.njit(**_JIT)
def public_key_from_slots(slots, O, limbs, out):
    """out = Encode(Upper(O^T (P1 O + P2))), the public part of key generation after hashing,
    from P1 || P2 in ``slots`` (which end up holding P1 || P1 O + P2) and the oil matrix O (v, o).
    out: the (o(o+1)/2) m/2 bytes of P3's upper triangle, row by row. Secret: O and the products."""
    v, o = O.shape
    W = 4 * len(limbs)
    mb = out.shape[0] // (o * (o + 1) // 2)
    mats = scalar_matrices(O)
    _add_p1_times_oil(slots, mats, limbs, False)              # Q = P1 O + P2
    q0 = v * (v + 1) // 2 * W
    P3 = np.zeros(o * o * W, np.uint64)                       # O^T Q
    for r in range(v):
        for i in range(o):
            mat = mats[r, i]
            for c in range(o):
                mul_add_slot(P3, (i * o + c) * W, slots, q0 + (r * o + c) * W, mat, limbs)
    entry = np.zeros(W, np.uint64)                            # Upper: P3[i, j] + P3[j, i] above the diagonal
    entry_bytes = entry.view(np.uint8)
    at = 0
    for i in range(o):
        for j in range(i, o):
            for w in range(W):
                entry[w] = P3[(i * o + j) * W + w]
                if j != i:
                    entry[w] ^= P3[(j * o + i) * W + w]
            for b in range(mb):
                out[at + b] = entry_bytes[b]
            at += mb


@nb.njit(**_JIT)
def expand_secret_slots(slots, O, limbs):
    """L = (P1 + P1^T) O + P2 in place of P2 in ``slots`` (P1 stays), for the oil matrix O (v, o).
    Secret: O and L."""
    _add_p1_times_oil(slots, scalar_matrices(O), limbs, True)


@nb.njit(**_JIT)
def quadratic_pairs(X, P, limbs, U):
    """U[i, j] ^= x_i^T P x_j (k*k slots, flat) for the rows x_i of X (k, size) and the packed
    upper-triangular P (flat slots; only its first size(size+1)/2 entries are read): first
    XP[i, c] = sum_{r <= c} x_i[r] P[r, c] (k*size slots), then U[i, j] = sum_c XP[i, c] x_j[c].
    Secret in signing: X and P (the vinegar vectors, P1); public in verification."""
    k, size = X.shape
    W = 4 * len(limbs)
    mats = scalar_matrices(X)
    XP = np.zeros(k * size * W, np.uint64)
    e = 0
    for r in range(size):
        for c in range(r, size):
            for i in range(k):
                mul_add_slot(XP, (i * size + c) * W, P, e, mats[i, r], limbs)
            e += W
    for j in range(k):
        for c in range(size):
            mat = mats[j, c]
            for i in range(k):
                mul_add_slot(U, (i * k + j) * W, XP, (i * size + c) * W, mat, limbs)


@nb.njit(**_JIT)
def sign_products(V, slots, o, limbs, M, U):
    """The products of one signing attempt on the encoding: M[i, c] = v_i^T L[:, c] (k*o slots)
    and U[i, j] = v_i^T P1 v_j (k*k slots), accumulated into M and U (flat, zeroed), for the
    vinegar vectors V (k, v) and P1 || L in ``slots``. Secret: V, P1, L and the products."""
    k, v = V.shape
    W = 4 * len(limbs)
    mats = scalar_matrices(V)
    l0 = v * (v + 1) // 2 * W
    for r in range(v):                                         # M = V L
        for i in range(k):
            mat = mats[i, r]
            for c in range(o):
                mul_add_slot(M, (i * o + c) * W, slots, l0 + (r * o + c) * W, mat, limbs)
    quadratic_pairs(V, slots, limbs, U)


@nb.njit(**_JIT)
def sign_attempt(V, r, slots, o, t, f_tail, limbs, x):
    """``kernels.sign_attempt`` with P1 || L in their encoding: the products here, then M and U
    to bit planes for ``kernels.whip_and_solve``. Writes x and returns the (public) rank bit.
    Secret: all inputs and x."""
    k = V.shape[0]
    W = 4 * len(limbs)
    Ms = np.zeros((k * o, W), np.uint64)
    Us = np.zeros((k * k, W), np.uint64)
    sign_products(V, slots, o, limbs, Ms.reshape(k * o * W), Us.reshape(k * k * W))
    M = np.empty((k, o, W), np.uint64)
    U = np.empty((k, k, W), np.uint64)
    slots_to_bitsliced(Ms, M.reshape(k * o, W))
    slots_to_bitsliced(Us, U.reshape(k * k, W))
    return whip_and_solve(U, M, t, r, f_tail, x)


@nb.njit(**_JIT)
def evaluate_public(S, epk, v, limbs, f_tail, y):
    """y = P*(s) = sum_ell z^ell s_i^T P s_j (the whipped public map) for the k rows of S, read
    straight from the specification's expanded public key P1 || P2 || P3 (``epk``, uint8, m/2
    bytes an m-vector, at least 8W spare bytes after it); y (m elements) is overwritten.

    First XP[i, c] = sum_{r <= c} s_i[r] P[r, c] over the three blocks of P (k*n slots), then
    U[i, j] = sum_c XP[i, c] s_j[c]. Each entry is read as a whole slot from its first byte, so
    the bytes of a slot past m/2 collect products of the next entries' bytes (the products are
    byte by byte); they are cleared in U. Public data only (verification)."""
    k, n = S.shape
    m = y.shape[0]
    mb = (m + 1) // 2
    W = 4 * len(limbs)
    mats = scalar_matrices(S)
    XP = np.zeros(k * n * W, np.uint64)
    e = 0
    for r in range(v):                                         # P1: (r, c) for r <= c < v
        for c in range(r, v):
            for i in range(k):
                mul_add_slot(XP, (i * n + c) * W, epk, e, mats[i, r], limbs)
            e += mb
    for r in range(v):                                         # P2: (r, c) for v <= c < n
        for c in range(v, n):
            for i in range(k):
                mul_add_slot(XP, (i * n + c) * W, epk, e, mats[i, r], limbs)
            e += mb
    for r in range(v, n):                                      # P3: (r, c) for v <= r <= c
        for c in range(r, n):
            for i in range(k):
                mul_add_slot(XP, (i * n + c) * W, epk, e, mats[i, r], limbs)
            e += mb
    Us = np.zeros(k * k * W, np.uint64)
    for j in range(k):
        for c in range(n):
            mat = mats[j, c]
            for i in range(k):
                mul_add_slot(Us, (i * k + j) * W, XP, (i * n + c) * W, mat, limbs)
    Ub = Us.view(np.uint8)
    for q in range(k * k):
        for b in range(mb, 8 * W):
            Ub[q * 8 * W + b] = 0
    U = np.empty((k, k, W), np.uint64)
    slots_to_bitsliced(Us.reshape(k * k, W), U.reshape(k * k, W))
    yb = np.zeros(W, np.uint64)
    whip_bitsliced(U, np.zeros((k, 0, W), np.uint64), m, f_tail, yb, np.zeros((W, 0), np.uint64))
    unbitslice_into(yb, m, y)
