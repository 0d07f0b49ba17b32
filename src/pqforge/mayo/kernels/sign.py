"""One attempt of the signing loop on bit planes (the portable set), the whipped system solved
through the whip and solver units, and the signature's assembly. Secret: all inputs and
outputs but the rank bit."""

import numba as nb
import numpy as np

from ...gf16.kernels import bit_mask, times_x
from ...jit.cache import JIT_CACHE
from ...jit.units import addresses
from ...shake import shake256_into
from .layout import bitslice_into, decode_nibbles_into, encode_nibbles_into, put
from .products import mul_transposed, quadratic_pairs
from .solve import SOLVE, solve_unit
from .whipping import WHIP, whip_unit

_JIT = dict(cache=JIT_CACHE, nogil=True)  # nogil: batches run kernels on several threads


@nb.njit(**_JIT)
def assemble_signature(V, O, x, n, s):
    """s_i = (v_i + O x_i, x_i) for i < k, as k*n elements. Secret: V, O, x (the output is public).

    O x_i as sums of O's columns times the scalars of x_i, eight elements a word: the columns'
    multiples x^t O[:, c] (t < 4) are made once, then each scalar's four bits select them
    through masks: four ANDs and four XORs a word per scalar, no scalar product per element."""
    k, v = V.shape
    o = O.shape[1]
    vw = (v + 7) // 8                           # words of a column (zero-padded to whole words)
    multiples = np.zeros(4 * o * 8 * vw, np.uint8)
    for c in range(o):
        base = c * 8 * vw
        for a in range(v):
            multiples[base + a] = O[a, c]
    step = o * 8 * vw
    for t in range(1, 4):                       # x^t O[:, c] = x (x^(t-1) O[:, c])
        for e in range(step):
            multiples[t * step + e] = times_x(multiples[(t - 1) * step + e])
    words = multiples.view(np.uint64)
    acc = np.zeros(vw, np.uint64)
    accb = acc.view(np.uint8)
    for i in range(k):
        acc[:] = 0
        for c in range(o):
            xc = x[i * o + c]
            m0, m1, m2, m3 = bit_mask(xc, 0), bit_mask(xc, 1), bit_mask(xc, 2), bit_mask(xc, 3)
            at = c * vw
            for w in range(vw):
                acc[w] ^= (words[at + w] & m0) ^ (words[o * vw + at + w] & m1) \
                    ^ (words[2 * o * vw + at + w] & m2) ^ (words[3 * o * vw + at + w] & m3)
        for a in range(v):
            s[i * n + a] = V[i, a] ^ accb[a]
        for c in range(o):
            s[i * n + v + c] = x[i * o + c]


def units() -> tuple[int, int]:
    """The addresses of the whip and solver units in this process, the ``units`` argument of
    ``sign_attempt`` and the signing loops (compiled, or loaded from the cache, on first use)."""
    return addresses((WHIP, SOLVE))


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


@nb.njit(inline="always", **_JIT)
def salt_and_target(message, rand, seed, d, buf, salt, t_bytes, A):
    """The hashes of signing before its attempts, as the specification computes them:
    M_digest = SHAKE256(message) (d bytes), salt = SHAKE256(M_digest || rand || seed) and
    t_bytes = SHAKE256(M_digest || salt). ``buf`` (at least d + max(rand, salt) + seed + 1
    bytes) is left holding M_digest || salt || seed, to which an attempt appends its counter;
    A is Keccak's state. Secret: rand, seed and buf; the salt and t are public."""
    shake256_into(message, buf[:d], A)
    put(buf, d, rand)
    put(buf, d + rand.shape[0], seed)
    shake256_into(buf[:d + rand.shape[0] + seed.shape[0]], salt, A)
    put(buf, d, salt)
    shake256_into(buf[:d + salt.shape[0]], t_bytes, A)
    put(buf, d + salt.shape[0], seed)


@nb.njit(inline="always", **_JIT)
def attempt_inputs(vr, t_bytes, k, v, o):
    """(V, r, t) of a signing attempt from its hash outputs: the vinegar vectors V (k, v) and
    r (k o elements) decoded from ``vr`` = SHAKE256(digest || salt || seed_sk || ctr), each
    v_i from its own ceil(v/2) bytes, and t (m elements) from ``t_bytes``. Secret: vr, V, r
    (shifts at public positions)."""
    vb = (v + 1) // 2
    V = np.empty((k, v), np.uint8)
    for i in range(k):
        decode_nibbles_into(vr[i * vb:(i + 1) * vb], V[i])
    r = np.empty(k * o, np.uint8)
    decode_nibbles_into(vr[k * vb:], r)
    t = np.empty(2 * len(t_bytes), np.uint8)
    decode_nibbles_into(t_bytes, t)
    return V, r, t


@nb.njit(inline="always", **_JIT)
def encode_signature(V, O, x, sig):
    """sig = the encoding of s_i = (v_i + O x_i, x_i), i < k ((k n + 1) / 2 bytes). Secret: V,
    O, x; the signature is public."""
    k, v = V.shape
    n = v + O.shape[1]
    s = np.zeros(k * n, np.uint8)
    assemble_signature(V, O, x, n, s)
    encode_nibbles_into(s, sig)


@nb.njit(**_JIT)
def sign_from_hashes(vr, t_bytes, P1, L, O, k, f_tail, units, sig):
    """One signing attempt from its hash outputs in one compiled call (``attempt_inputs``,
    ``sign_attempt`` on the bit planes P1 and L), the signature encoded into ``sig`` when the
    system has full rank (``encode_signature``; ``sig`` is left as it is otherwise). Returns the
    (public) rank bit. ``units``: ``units()``. Secret: vr, P1, L, O and what comes of them."""
    v, o = O.shape
    V, r, t = attempt_inputs(vr, t_bytes, k, v, o)
    x = np.zeros(k * o, np.uint8)
    full_rank = sign_attempt(V, r, P1, L, t, f_tail, x, units)
    if full_rank:                   # public: the signer retries with the next counter otherwise
        encode_signature(V, O, x, sig)
    return full_rank
