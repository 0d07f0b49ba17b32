"""MAYO's GF(16) products on m-vectors in their byte encoding, for the gfni, avx2 and neon kernel sets.

Used for key generation, secret-key expansion, signing's products and verification's quadratic
form when ``gf16.sets.ENCODED``: the keystream of P1 || P2 is already the encoding, so the
products with O run on it as it comes, the expanded secret key keeps P1 || L in it, the expanded
public key is the specification's byte string, and only the small products of an attempt or a
verification go to bit planes (for the whipping and the linear solve).

Layout: a flat uint64 array of slots, one m-vector's m/2 bytes at the start of each slot of
W = ``slot_words(chunks)`` words and zero after them (``chunks``: ``MayoParams.zero_chunks``, the
vector's 16-byte chunks, of which the products touch no more): first the v(v+1)/2 entries of the packed upper
triangle P1 (row by row, j >= i), then the v x o entries of P2 (or L), row by row. Every sum is
one row of a matrix product: sum_q A[R, q] B[q, :] for m-vectors A and a matrix of scalars B
(O, or the transposed vinegar or signature vectors), each A[R, q] read once for all of B's
columns (``gfni.row_accumulate``, ``row_flush``). Each kernel takes ``like``
(``gf16.sets.FORMS``), an empty array of scalar forms whose type selects the products: GFNI bit
matrices or AVX2 entangled shuffle tables (``gf16.shuffle``); numba compiles and caches each
set's code apart.

Secret: the oil matrix O, the vinegar vectors, P1, L and every product. Each secret scalar becomes
its form by arithmetic (``gfni.scalar_matrix``, ``shuffle.pair_tables``), neither the affine
instruction's nor the shuffle's timing depends on its operands, and loops and memory positions
follow the public sizes only.
"""

import numba as nb
import numpy as np

from ...gf16.blocks import slot_words
from ...gf16.gfni import matrix_forms, row_accumulate, row_flush, row_scratch
from ...aes import keystream
from ...jit.cache import JIT_CACHE
from ...shake import shake256_into
from .layout import decode_nibbles_into, equals_nibbles, rows_to_slots, slots_to_bitsliced, unbitslice_into
from .sign import attempt_inputs, encode_signature, salt_and_target, whip_and_solve
from .verify import hash_target
from .whipping import whip_unit

_JIT = dict(cache=JIT_CACHE, nogil=True)


@nb.njit(**_JIT)
def _add_p1_times_oil(slots, forms, v, o, chunks, symmetric, like):
    """Q ^= P1 O, where Q is the v x o block after P1 (P2 on entry) and ``forms`` O's
    (``matrix_forms``); with ``symmetric`` (public), Q ^= (P1 + P1^T) O instead, whose diagonal is
    zero: row r of Q takes P1[r, j] O[j, :] along P1's packed row r (j > r), and the transpose's
    P1[j, r] O[j, :] down P1's column r (j < r). Callers pass ``symmetric`` as ``np.bool_(...)``, not
    a constant: numba compiles a function once per constant it is called with."""
    W = slot_words(chunks)
    q0 = v * (v + 1) // 2 * W
    first = 1 if symmetric else 0
    tmp = row_scratch(o, chunks)
    e = 0                                              # slot of P1[r, r]
    for r in range(v):
        row_accumulate(tmp, slots, e + first * W, W, 0, v - r - first, forms, r + first, o, chunks)
        if symmetric:                                  # P1[j, r] for j < r: from slot r, then (v - 1 - j) on
            row_accumulate(tmp, slots, r * W, (v - 1) * W, W, r, forms, 0, o, chunks)
        row_flush(slots, q0 + r * o * W, W, tmp, o, chunks, like)
        e += (v - r) * W


@nb.njit(**_JIT)
def oil_forms(oil, v, o, like):
    """The forms of the oil matrix O (v x o, as ``matrix_forms``) from its encoding ``oil``
    (uint8, two elements a byte, low nibble first). Secret: oil; shifts at public positions only."""
    O = np.empty((v, o), np.uint8)
    flat = O.reshape(v * o)
    for e in range(v * o):
        flat[e] = (oil[e >> 1] >> (4 * (e & 1))) & 15
    return matrix_forms(O, like)


# Inlined, like expand_secret_slots and sign_attempt: LLVM inlines each into its compiled callers
# anyway, so compiled alone it would be optimised twice (and the served paths compile about 3 s
# sooner); a call from Python still compiles it alone.
@nb.njit(**_JIT, inline="always")
def public_key_from_slots(slots, oil, v, o, chunks, like, out):
    """out = Encode(Upper(O^T (P1 O + P2))), the public part of key generation after hashing,
    from P1 || P2 in ``slots`` (which end up holding P1 || P1 O + P2) and the oil matrix O (v, o)
    in its encoding ``oil``. out: the (o(o+1)/2) m/2 bytes of P3's upper triangle, row by row.
    Secret: O and the products."""
    W = slot_words(chunks)
    mb = out.shape[0] // (o * (o + 1) // 2)
    forms = oil_forms(oil, v, o, like)
    _add_p1_times_oil(slots, forms, v, o, chunks, np.bool_(False), like)    # Q = P1 O + P2
    q0 = v * (v + 1) // 2 * W
    P3 = np.zeros(o * o * W, np.uint64)                       # P3[:, c] = sum_r Q[r, c] O[r, :]
    tmp = row_scratch(o, chunks)
    for c in range(o):
        row_accumulate(tmp, slots, q0 + c * W, o * W, 0, v, forms, 0, o, chunks)
        row_flush(P3, c * W, o * W, tmp, o, chunks, like)
    # Upper: P3[i, i], then P3[i, j] + P3[j, i] right of the diagonal, row by row; unsigned
    # indices (numba adds no wraparound for them), so LLVM vectorises the byte loops
    P3b, ou, mbu, slot = P3.view(np.uint8), np.uint64(o), np.uint64(mb), np.uint64(8 * W)
    at = np.uint64(0)
    for i in range(ou):
        d = (i * ou + i) * slot
        for b in range(mbu):
            out[at + b] = P3b[d + b]
        at += mbu
        for j in range(i + np.uint64(1), ou):
            above, below = (i * ou + j) * slot, (j * ou + i) * slot
            for b in range(mbu):
                out[at + b] = P3b[above + b] ^ P3b[below + b]
            at += mbu


@nb.njit(**_JIT, inline="always")
def expand_secret_slots(slots, O, chunks, like):
    """L = (P1 + P1^T) O + P2 in place of P2 in ``slots`` (P1 stays), for the oil matrix O (v, o).
    Secret: O and L."""
    v, o = O.shape
    _add_p1_times_oil(slots, matrix_forms(O, like), v, o, chunks, np.bool_(True), like)


@nb.njit(**_JIT, inline="always")
def _public_slots(seed_pk, v, o, m_bytes, chunks, width):
    """P1 || P2 = AES-128-CTR(seed_pk) in slots (a new flat array), as ``scheme.public_slots`` lays
    them out: the keystream straight into the slots where an m-vector fills its slot (MAYO-2),
    else row by row from a scratch copy (``rows_to_slots``, which reads 15 bytes past the last
    row). ``width``: the AES blocks per instruction (``pqforge.aes``). Public data."""
    count = v * (v + 1) // 2 + v * o
    W = slot_words(chunks)
    slots = np.empty(count * W, np.uint64)
    nbytes = count * m_bytes
    if 8 * W == m_bytes:
        keystream(slots.view(np.uint8), seed_pk, width)
    else:
        stream = np.empty(nbytes + 16, np.uint8)
        keystream(stream[:nbytes], seed_pk, width)
        rows_to_slots(stream, count, m_bytes, chunks, slots)
    return slots


@nb.njit(**_JIT, inline="always")
def _seed_expansion(seed_sk, seed_bytes, oil_bytes):
    """seed_pk || oil = SHAKE256(seed_sk) (``seed_sk``: bytes), as two uint8 arrays: the public
    seed and O's encoding. Secret: seed_sk and oil."""
    s = np.empty(seed_bytes + oil_bytes, np.uint8)
    shake256_into(np.frombuffer(seed_sk, np.uint8), s, np.empty(25, np.uint64))
    return s[:seed_bytes], s[seed_bytes:]


@nb.njit(**_JIT)
def public_key_from_seed(seed_sk, v, o, m_bytes, chunks, like, width, cpk):
    """Key generation from the secret seed in one compiled call: seed_pk || oil = SHAKE256(seed_sk)
    (oil: O's encoding), P1 || P2 from AES-128-CTR(seed_pk) (``_public_slots``), and
    cpk = seed_pk || Encode(Upper(O^T P1 O + O^T P2)) written into ``cpk`` (uint8, the compact
    key's length; ``public_key_from_slots``). Secret: seed_sk, oil and all that is made from it
    but seed_pk and P1 || P2."""
    p3 = o * (o + 1) // 2 * m_bytes
    seed_bytes = len(cpk) - p3
    seed_pk, oil = _seed_expansion(seed_sk, seed_bytes, (v * o + 1) // 2)
    for i in range(seed_bytes):
        cpk[i] = seed_pk[i]
    slots = _public_slots(seed_pk, v, o, m_bytes, chunks, width)
    public_key_from_slots(slots, oil, v, o, chunks, like, cpk[seed_bytes:])


@nb.njit(**_JIT)
def expand_secret_from_seed(seed_sk, seed_bytes, O, m_bytes, chunks, like, width):
    """Secret-key expansion from the secret seed in one compiled call: seed_pk || oil =
    SHAKE256(seed_sk) (``seed_bytes``: seed_pk's length), O (v, o) decoded from oil, P1 || P2 from
    AES-128-CTR(seed_pk), and P1 || L (L = (P1 + P1^T) O + P2) returned in their slots. Secret:
    seed_sk, oil, O and L."""
    v, o = O.shape
    seed_pk, oil = _seed_expansion(seed_sk, seed_bytes, (v * o + 1) // 2)
    decode_nibbles_into(oil, O)
    slots = _public_slots(seed_pk, v, o, m_bytes, chunks, width)
    expand_secret_slots(slots, O, chunks, like)
    return slots


# inlined: its only caller compiles it once (compiled alone it would be optimised twice)
@nb.njit(**_JIT, inline="always")
def quadratic_pairs(forms, k, size, P, chunks, like, U):
    """U[i, j] ^= x_i^T P x_j (k*k slots, flat) for the k vectors x_i of length ``size`` given by
    the forms of X^T (``matrix_forms``, size x k) and the packed upper-triangular P (flat slots;
    its first size(size+1)/2 entries): first PX[j, r] = sum_{c >= r} P[r, c] x_j[c] along each
    packed row (k*size slots), then U[i, j] = sum_r x_i[r] PX[j, r]. Secret in signing: X and P
    (the vinegar vectors, P1)."""
    W = slot_words(chunks)
    PX = np.zeros(k * size * W, np.uint64)
    tmp = row_scratch(k, chunks)
    e = 0
    for r in range(size):
        row_accumulate(tmp, P, e, W, 0, size - r, forms, r, k, chunks)
        row_flush(PX, r * W, size * W, tmp, k, chunks, like)
        e += (size - r) * W
    for j in range(k):
        row_accumulate(tmp, PX, j * size * W, W, 0, size, forms, 0, k, chunks)
        row_flush(U, j * W, k * W, tmp, k, chunks, like)


# inlined: its only caller compiles it once (compiled alone it would be optimised twice)
@nb.njit(**_JIT, inline="always")
def sign_products(V, slots, o, chunks, like, M, U):
    """The products of one signing attempt on the encoding: M[i, c] = v_i^T L[:, c] (k*o slots)
    and U[i, j] = v_i^T P1 v_j (k*k slots), accumulated into M and U (flat, zeroed), for the
    vinegar vectors V (k, v) and P1 || L in ``slots``. Secret: V, P1, L and the products."""
    k, v = V.shape
    W = slot_words(chunks)
    forms = matrix_forms(np.ascontiguousarray(V.T), like)
    l0 = v * (v + 1) // 2 * W
    tmp = row_scratch(k, chunks)
    for c in range(o):                                         # M[:, c] = sum_j L[j, c] V^T[j, :]
        row_accumulate(tmp, slots, l0 + c * W, o * W, 0, v, forms, 0, k, chunks)
        row_flush(M, c * W, o * W, tmp, k, chunks, like)
    quadratic_pairs(forms, k, v, slots, chunks, like, U)


@nb.njit(**_JIT, inline="always")
def sign_attempt(V, r, slots, o, t, f_tail, chunks, like, x, units):
    """``kernels.sign_attempt`` with P1 || L in their encoding: the products here, then M and U
    to bit planes for ``kernels.whip_and_solve``. Writes x and returns the (public) rank bit.
    ``units``: ``sign.units()``. Secret: all inputs and x."""
    k = V.shape[0]
    W = slot_words(chunks)
    Ms = np.zeros((k * o, W), np.uint64)
    Us = np.zeros((k * k, W), np.uint64)
    sign_products(V, slots, o, chunks, like, Ms.reshape(k * o * W), Us.reshape(k * k * W))
    M = np.empty((k, o, W), np.uint64)
    U = np.empty((k, k, W), np.uint64)
    slots_to_bitsliced(Ms, M.reshape(k * o, W))
    slots_to_bitsliced(Us, U.reshape(k * k, W))
    return whip_and_solve(U, M, t, r, f_tail, x, units)


@nb.njit(**_JIT)
def sign(msg, rand, seed_sk, slots, O, k, seed_bytes, digest_bytes, m_bytes, f_tail, chunks, like, width, units, sig):
    """MAYO.Sign from the bytes of the message, the randomness and the secret seed, in one
    compiled call: the hashes before the attempts (``salt_and_target``), then for ctr = 0, 1, ...
    V || r = SHAKE256(M_digest || salt || seed_sk || ctr) and an attempt on P1 || L in their
    encoding (``sign_attempt``) until one has full rank, whose signature encode(s) || salt is
    written into ``sig`` (sig_bytes). Returns whether one had within 256 counters. With empty
    ``slots`` the key is expanded here first (``expand_secret_from_seed``: seed_pk of
    ``seed_bytes`` bytes, AES ``width`` blocks an instruction, O written into ``O``), so that a
    compact key signs in one call, as the C code's crypto_sign does: returning the expanded key
    to Python and taking it back cost more than the call itself. Secret: rand, seed_sk, slots, O
    and what comes of them; the salt, t, each attempt's rank bit and len(slots) are public."""
    if len(slots) == 0:
        slots = expand_secret_from_seed(seed_sk, seed_bytes, O, m_bytes, chunks, like, width)
    v, o = O.shape
    seed = np.frombuffer(seed_sk, np.uint8)
    salt_bytes = len(rand)
    body = len(sig) - salt_bytes
    buf = np.empty(digest_bytes + salt_bytes + len(seed) + 1, np.uint8)
    t_bytes, A = np.empty(m_bytes, np.uint8), np.empty(25, np.uint64)
    salt_and_target(np.frombuffer(msg, np.uint8), np.frombuffer(rand, np.uint8), seed, digest_bytes, buf,
                    sig[body:], t_bytes, A)
    vr = np.empty(k * ((v + 1) // 2) + (k * o + 1) // 2, np.uint8)
    for ctr in range(256):
        buf[len(buf) - 1] = ctr
        shake256_into(buf, vr, A)
        V, r, t = attempt_inputs(vr, t_bytes, k, v, o)
        x = np.zeros(k * o, np.uint8)
        if sign_attempt(V, r, slots, o, t, f_tail, chunks, like, x, units):   # public: else the next counter
            encode_signature(V, O, x, sig[:body])
            return True
    return False


# inlined: its only caller compiles it once (compiled alone it would be optimised twice)
@nb.njit(**_JIT, inline="always")
def evaluate_public(S, epk, v, chunks, like, f_tail, y, units):
    """y = P*(s) = sum_ell z^ell s_i^T P s_j (the whipped public map) for the k rows of S, read
    straight from the specification's expanded public key P1 || P2 || P3 (``epk``, uint8, m/2
    bytes an m-vector, at least 8W spare bytes after it); y (m elements) is overwritten.

    As ``quadratic_pairs``, with the rows of P = [[P1, P2], [0, P3]] read from their three blocks.
    Each entry is read as a whole slot from its first byte, so the bytes of a slot past m/2
    collect products of the next entries' bytes (the products are byte by byte); they are
    cleared in U. ``units``: ``verify.verify_units()``. Public data only (verification)."""
    k, n = S.shape
    o = n - v
    m = y.shape[0]
    mb = (m + 1) // 2
    W = slot_words(chunks)
    forms = matrix_forms(np.ascontiguousarray(S.T), like)
    PX = np.zeros(k * n * W, np.uint64)                        # PX[j, r] = sum_{c >= r} P[r, c] s_j[c]
    tmp = row_scratch(k, chunks)
    p1 = 0
    p2 = v * (v + 1) // 2 * mb
    for r in range(v):
        row_accumulate(tmp, epk, p1, mb, 0, v - r, forms, r, k, chunks)
        row_accumulate(tmp, epk, p2 + r * o * mb, mb, 0, o, forms, v, k, chunks)
        row_flush(PX, r * W, n * W, tmp, k, chunks, like)
        p1 += (v - r) * mb
    p3 = p2 + v * o * mb
    for r in range(v, n):
        row_accumulate(tmp, epk, p3, mb, 0, n - r, forms, r, k, chunks)
        row_flush(PX, r * W, n * W, tmp, k, chunks, like)
        p3 += (n - r) * mb
    Us = np.zeros(k * k * W, np.uint64)
    for j in range(k):
        row_accumulate(tmp, PX, j * n * W, W, 0, n, forms, 0, k, chunks)
        row_flush(Us, j * W, k * W, tmp, k, chunks, like)
    Ub = Us.view(np.uint8)
    for q in range(k * k):
        for b in range(mb, 8 * W):
            Ub[q * 8 * W + b] = 0
    U = np.empty((k, k, W), np.uint64)
    slots_to_bitsliced(Us.reshape(k * k, W), U.reshape(k * k, W))
    yb = np.zeros(W, np.uint64)
    whip_unit(units[0], U, np.zeros((k, 0, W), np.uint64), m, f_tail, yb, np.zeros((W, 0), np.uint64))
    unbitslice_into(yb, m, y)


@nb.njit(**_JIT)
def verify(sig, msg, epk, cpk, k, n, v, m_bytes, digest_bytes, chunks, like, f_tail, width, units):
    """Whether P*(s) = t for the signature's s (its first k n elements) and the target
    t = SHAKE256(SHAKE256(msg) || salt) (m_bytes bytes; the salt ends ``sig``): one verification
    from its bytes, in one compiled call. With a compact key ``cpk`` (seed_pk || P3) the expanded
    key is made here (``expanded_public``; ``epk`` is not read); with an empty one ``epk`` is the
    expanded key with its spare bytes. Public data only."""
    if len(cpk):
        epk = expanded_public(np.frombuffer(cpk, np.uint8), n, v, m_bytes, chunks, width)
    signature = np.frombuffer(sig, np.uint8)     # arrays, not bytes: numba indexes bytes one at a time
    salt_at = (k * n + 1) // 2
    t, hashed = np.empty(m_bytes, np.uint8), np.empty(digest_bytes + len(sig) - salt_at, np.uint8)
    hash_target(np.frombuffer(msg, np.uint8), signature[salt_at:], hashed, t, np.empty(25, np.uint64))
    S = np.empty((k, n), np.uint8)
    decode_nibbles_into(signature, S)
    y = np.zeros(2 * m_bytes, np.uint8)
    evaluate_public(S, epk, v, chunks, like, f_tail, y, units)
    return equals_nibbles(y, t)


@nb.njit(**_JIT, inline="always")
def expanded_public(cpk, n, v, m_bytes, chunks, width):
    """The expanded public key P1 || P2 || P3 with its spare zero bytes (as ``verify`` reads it)
    from the compact key seed_pk || P3 (a uint8 array): P3 copied, P1 || P2 = AES-128-CTR(seed_pk),
    ``width`` blocks an instruction. Public data only."""
    o = n - v
    p12, p3 = (v * (v + 1) // 2 + v * o) * m_bytes, o * (o + 1) // 2 * m_bytes
    seed_bytes = len(cpk) - p3
    epk = np.empty(p12 + p3 + 8 * slot_words(chunks) + 16, np.uint8)
    spare, P3, given = epk[p12 + p3:], epk[p12:p12 + p3], cpk[seed_bytes:]
    for i in range(p3):             # (from offset 0 of each: a loop LLVM vectorises)
        P3[i] = given[i]
    for i in range(spare.shape[0]):
        spare[i] = 0
    keystream(epk[:p12], cpk[:seed_bytes], width)
    return epk
