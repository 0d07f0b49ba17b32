"""Key generation's matrix work and encapsulation's syndrome, on bit-packed rows.

A matrix is an int64 array (rows, W): row bit j is bit j % 64 of word j // 64, the order in
which the specification packs bytes (little-endian bits), so byte views need no reordering.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from .gf import bit_mask, secret_mask, vec_eval_table, vec_inv, vec_mul_table, vec_times_z_table
from ..jit.cache import JIT_CACHE
from ..shake import shake256_into


@njit(cache=JIT_CACHE)
def parity_check_matrix(g, L, t, m, n, taps):
    """The mt x n binary parity-check matrix: rows i m .. i m + m - 1 are the bit planes of
    L_j^i / g(L_j). g (monic, t + 1 coefficients) and L (bitsliced) are secret; the work is fixed.
    """
    W = L.shape[1]
    T = vec_times_z_table(L, m, taps)
    v = vec_inv(vec_eval_table(g, T, m), m, taps)
    nxt = np.empty_like(v)
    mat = np.zeros((m * t, W), dtype=np.int64)
    keep_last = -1 if (n & 63) == 0 else (np.int64(1) << (n & 63)) - 1
    for i in range(t):
        for k in range(m):
            for w in range(W):
                mat[i * m + k, w] = v[k, w]
            mat[i * m + k, W - 1] &= keep_last
        if i + 1 < t:
            vec_mul_table(nxt, v, T)
            v, nxt = nxt, v
    return mat


@njit(cache=JIT_CACHE)
def eliminate_rows(mat, r0, r1, wend):
    """Reduce pivot rows r0..r1-1 to the identity in columns r0..r1-1 (Gauss-Jordan over all rows),
    on the column words below ``wend`` (mat.shape[1] for the whole matrix).

    The matrix is secret: a missing pivot is fixed by masked additions of the rows below, and
    clearing a column is a masked addition to every row. Returns 0 when some pivot stays zero:
    the matrix is not systematic, which key generation rejects (public by design). That answer
    depends on the pivot columns only, so wend = ceil(r1 / 64) decides it at a fraction of the cost.
    """
    rows = mat.shape[0]
    for r in range(r0, r1):
        wi = r >> 6
        bi = r & 63
        # columns left of word wi hold only earlier pivots, already cleared in rows >= r
        pivot = mat[r, wi:wend]
        for k in range(r + 1, rows):
            _add_masked(pivot, mat[k, wi:wend], ~bit_mask(pivot[0], bi))
        if ((pivot[0] >> bi) & 1) == 0:
            return 0
        for k in range(rows):
            if k != r:
                row = mat[k, wi:wend]
                _add_masked(row, pivot, bit_mask(row[0], bi))
    return 1


@njit(cache=JIT_CACHE, inline="always")
def _add_masked(dst, src, mask):
    # dst ^= src & mask on two distinct rows (disjoint views, so the loop vectorises)
    for c in range(dst.shape[0]):
        dst[c] ^= src[c] & mask


@njit(cache=JIT_CACHE)
def _get64(mat, i, c0):
    # the 64 bits of row i from column c0 on (public position, secret bits)
    wa = c0 >> 6
    o = c0 & 63
    if o == 0:
        return mat[i, wa]
    low = (mat[i, wa] >> o) & ((np.int64(1) << (64 - o)) - 1)
    return low | (mat[i, wa + 1] << (64 - o))


@njit(cache=JIT_CACHE)
def _put64(mat, i, c0, v):
    # store 64 bits into row i from column c0 on (public position, secret bits)
    wa = c0 >> 6
    o = c0 & 63
    if o == 0:
        mat[i, wa] = v
        return
    lowmask = (np.int64(1) << o) - 1
    mat[i, wa] = (mat[i, wa] & lowmask) | (v << o)
    mat[i, wa + 1] = (mat[i, wa + 1] & ~lowmask) | ((v >> (64 - o)) & lowmask)


@njit(cache=JIT_CACHE)
def _eq_mask(a, b):
    # -1 when a == b else 0, for small non-negative ints, without a branch. No barrier here, so
    # that loops over it vectorise: callers pass a secret operand through secret_mask first,
    # which hides its value from the optimiser
    return ((a ^ b) - 1) >> 63


@njit(cache=JIT_CACHE)
def _ctz64(x):
    # trailing zeros of x != 0 with a fixed loop
    seen = 0
    r = 0
    for i in range(64):
        b = (x >> i) & 1
        seen |= b
        r += (seen ^ 1) & (b ^ 1)
    return r


@njit(cache=JIT_CACHE)
def move_pivot_columns(mat, pi, mt):
    """Semi-systematic step of the 'f' sets, at row mt - 32 of a partly reduced matrix.

    Finds the pivot columns of the 32 x 64 block at rows mt-32.. and columns mt-32..mt+31
    (scanning left to right), swaps them into columns mt-32..mt-1 in the matrix and in the
    permutation pi. Returns (ok, pivots): pivots has bit j set for each pivot column mt-32+j.
    Matrix and pi are secret: selects are masks, shifts by secret amounts are constant time;
    a block of rank below 32 is rejected (public by design).
    """
    row = mt - 32
    buf = np.zeros(32, dtype=np.int64)
    for i in range(32):
        buf[i] = _get64(mat, row + i, row)
    ctz = np.zeros(32, dtype=np.int64)
    pivots = 0
    for i in range(32):
        acc = 0
        for j in range(i, 32):
            acc |= buf[j]
        if acc == 0:
            return 0, 0
        s = _ctz64(acc)
        ctz[i] = s
        pivots |= np.int64(1) << s
        for j in range(i + 1, 32):
            buf[i] ^= buf[j] & ~bit_mask(buf[i], s)
        for j in range(i + 1, 32):
            buf[j] ^= buf[i] & bit_mask(buf[j], s)
    for j in range(32):
        cj = secret_mask(ctz[j])
        for k in range(j + 1, 64):
            same = _eq_mask(k, cj)
            d = (pi[row + j] ^ pi[row + k]) & same
            pi[row + j] ^= d
            pi[row + k] ^= d
    for i in range(mt):
        v = _get64(mat, i, row)
        for j in range(32):
            d = ((v >> j) ^ (v >> ctz[j])) & 1
            v ^= d << ctz[j]
            v ^= d << j
        _put64(mat, i, row, v)
    return 1, pivots


@njit(cache=JIT_CACHE)
def pack_public_key(mat, mt, n, row_bytes, out):
    """Write columns mt..n-1 of each row into ``out`` (uint8, mt * row_bytes), bits LSB first.

    The result is the public key; positions depend on the sizes only."""
    W = mat.shape[1]
    for i in range(mt):
        for j in range(row_bytes):
            p = mt + 8 * j
            w = p >> 6
            o = p & 63
            v = (mat[i, w] >> o) & 0xFF
            if o > 56:
                v &= (np.int64(1) << (64 - o)) - 1     # drop the sign fill of the arithmetic shift
                if w + 1 < W:
                    v |= (mat[i, w + 1] << (64 - o)) & 0xFF
            out[i * row_bytes + j] = v


@njit(cache=JIT_CACHE)
def fixed_weight_indices(buf, n, t, m):
    """FixedWeight's candidate from random bytes: 2-byte little-endian words masked to m bits;
    when n < 2^m, the first t words below n. Returns (ok, indices); ok = 0 asks for fresh bytes
    (too few words below n, or a repeated index), the submission's public rejection loop.
    """
    words = len(buf) // 2
    mask = (1 << m) - 1
    ind = np.zeros(t, dtype=np.int64)
    count = 0
    for i in range(words):
        if count < t:
            v = (np.int64(buf[2 * i]) | (np.int64(buf[2 * i + 1]) << 8)) & mask
            if v < n:
                ind[count] = v
                count += 1
    if count < t:
        return 0, ind
    same = 0
    for i in range(1, t):
        for j in range(i):
            same |= _eq_mask(ind[i], ind[j])
    return (1 if same == 0 else 0), ind


@njit(cache=JIT_CACHE)
def weight_vector(ind, nbytes):
    """The n-bit vector (bytes) with ones at the secret positions ``ind``; every 64-bit word is
    built from every index with masks, so no index steers memory access.
    """
    nw = (nbytes + 7) >> 3
    words = np.zeros(nw, dtype=np.int64)
    t = ind.shape[0]
    for j in range(t):
        bit = np.int64(1) << (ind[j] & 63)
        hi = secret_mask(ind[j] >> 6)
        for w in range(nw):
            words[w] |= bit & _eq_mask(hi, w)
    return words.view(np.uint8)[:nbytes].copy()


def load_le64(buf, offset):
    """The little-endian 64-bit word (int64) at byte ``offset`` of a uint8 buffer, any alignment;
    offset + 8 <= len(buf) is the caller's bound. Compiled: one unaligned load."""
    return np.int64(int.from_bytes(bytes(buf[offset:offset + 8]), "little", signed=True))


@intrinsic
def _load_le64(typingctx, buf, offset):
    if not (isinstance(buf, types.Buffer) and buf.dtype == types.uint8 and buf.ndim == 1 and buf.layout == "C"
            and isinstance(offset, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        data = context.make_array(signature.args[0])(context, builder, args[0]).data
        at = context.cast(builder, args[1], signature.args[1], types.int64)
        word = builder.load(builder.bitcast(builder.gep(data, [at]), ir.IntType(64).as_pointer()))
        word.align = 1
        return word
    return types.int64(buf, offset), codegen


@overload(load_le64, inline="always")
def _load_le64_compiled(buf, offset):
    def impl(buf, offset):
        return _load_le64(buf, offset)
    return impl


@njit(cache=JIT_CACHE)
def syndrome_from_public_key(pk, e, mt, row_bytes):
    """H e for H = [I | T] with T the packed public key (bytes, or a uint8 array, row by row,
    read in place); e (bytes) secret.

    e's tail is laid out once as words aligned with a row's first byte; every row is read as
    whole 8-byte words wherever it starts (unaligned loads) and its last row_bytes % 8 bytes
    from the word that ends the row. Parities come from fixed folds.
    """
    nb = e.shape[0]
    sh = mt & 7
    base = mt >> 3
    full = row_bytes >> 3
    rest = row_bytes & 7
    tail = np.zeros(full + 1, dtype=np.int64)
    for j in range(row_bytes):
        v = np.int64(e[base + j]) >> sh if base + j < nb else 0
        if sh and base + j + 1 < nb:
            v |= np.int64(e[base + j + 1]) << (8 - sh)
        tail[j >> 3] |= (v & 0xFF) << (8 * (j & 7))
    s = np.zeros((mt + 7) >> 3, dtype=np.uint8)
    for i in range(mt):
        off = i * row_bytes
        acc = 0
        for x in range(full):
            acc ^= load_le64(pk, off + 8 * x) & tail[x]
        if rest:                                # public: the row's last bytes, at the word's top
            acc ^= (load_le64(pk, off + row_bytes - 8) >> (64 - 8 * rest)) & tail[full]
        acc ^= acc >> 32
        acc ^= acc >> 16
        acc ^= acc >> 8
        acc ^= acc >> 4
        acc ^= acc >> 2
        acc ^= acc >> 1
        bit = (acc ^ (np.int64(e[i >> 3]) >> (i & 7))) & 1
        s[i >> 3] |= np.uint8(bit << (i & 7))
    return s


@njit(cache=JIT_CACHE)
def padding_ok(pk, mt, row_bytes, k):
    """1 when every row of the packed public key has zero bits past its k columns, else 0
    (public)."""
    if (k & 7) == 0:
        return 1
    bad = 0
    for i in range(mt):
        bad |= np.int64(pk[(i + 1) * row_bytes - 1]) >> (k & 7)
    return 1 if bad == 0 else 0


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside encapsulation
def encap_preimage(buf, pk, n, t, m, mt, row_bytes):
    """Encapsulation's compiled part: (ok, 1 | e | C), the hash input of the shared secret, with
    e from FixedWeight's random bytes buf and C = H e (pk as for syndrome_from_public_key).
    ``buf`` may hold the bytes of several attempts of FixedWeight, one after the other: the
    first that succeeds is taken, as drawing them one at a time would. ok = 0 asks for fresh
    bytes (the submission's public rejection loop); ok = -1: the public key has nonzero padding
    bits. Secret: buf and e.
    """
    nb = n >> 3
    sb = (mt + 7) >> 3
    out = np.empty(1 + nb + sb, dtype=np.uint8)
    if not padding_ok(pk, mt, row_bytes, n - mt):
        return -1, out
    draw = 2 * (t if n == (1 << m) else 2 * t)      # bytes of one attempt
    ok, ind = 0, np.zeros(t, dtype=np.int64)
    for a in range(len(buf) // draw):
        if ok == 0:                 # (public: the rejection loop's outcome)
            ok, ind = fixed_weight_indices(buf[a * draw:(a + 1) * draw], n, t, m)
    if ok == 0:
        return 0, out
    e = weight_vector(ind, nb)
    C = syndrome_from_public_key(pk, e, mt, row_bytes)
    out[0] = 1
    for i in range(nb):
        out[1 + i] = e[i]
    for i in range(sb):
        out[1 + nb + i] = C[i]
    return 1, out


@njit(cache=JIT_CACHE)
def encapsulation(buf, pk, n, t, m, mt, row_bytes, out):
    """Encapsulation after drawing its random bytes, in one compiled call: ``encap_preimage``, then
    out = C || K with K = SHAKE256(1 | e | C) (out: the ciphertext's length plus 32), and the
    hash input cleared. Returns ok as ``encap_preimage`` (out is written when it is 1). Secret:
    buf, e and K."""
    ok, pre = encap_preimage(buf, pk, n, t, m, mt, row_bytes)
    if ok == 1:
        ct_bytes = out.shape[0] - 32
        start = pre.shape[0] - ct_bytes
        for i in range(ct_bytes):
            out[i] = pre[start + i]
        shake256_into(pre, out[ct_bytes:], np.empty(25, dtype=np.uint64))
        pre[:] = 0
    return ok
