"""Arithmetic in GF(2^m) (m = 12, 13), scalar and bitsliced, and in GF(2^m)[y]/F(y).

Scalar elements are ints below 2^m. A bitsliced vector of field elements is an int64 array
of shape (m, W): plane k holds bit k of 64 elements per word (element j at bit j % 64 of
word j // 64), so one pass over the planes works on 64 elements at once.

No kernel here branches on, loops over or indexes memory by a value; the bit-serial
multiplier and the selects use masks. Which inputs are secret
is stated per kernel.

Masks made from secret bits pass through ``secret_mask`` (``pqforge._barrier``, as int64): an
optimiser that can prove a value is 0 or all-ones may unswitch a loop on it, one copy for each
value and a branch on the secret between them, as a timing campaign found in Berlekamp-Massey.
"""

from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from .._barrier import declassify, emit_opaque, opaque
from ..jit.cache import JIT_CACHE
from ..jit.target import cpu_features, vector_registers


def secret_mask(x):
    """``x`` unchanged (identity in Python); compiled, an int64 the optimiser knows nothing
    about, so a mask made from a secret bit stays a mask."""
    return x


@overload(secret_mask, inline="always")
def _secret_mask_compiled(x):
    def impl(x):
        return opaque(np.int64(x))
    return impl


@njit(cache=JIT_CACHE, inline="always")
def bit_mask(x, k):
    """-1 if bit k of x is set else 0, through the barrier (x may be secret)."""
    return secret_mask(-((x >> k) & 1))


@njit(cache=JIT_CACHE)
def gf_mul(a, b, m, fpoly):
    """a * b in GF(2^m) modulo the field polynomial ``fpoly`` (bits, with z^m). a, b may be secret."""
    r = 0
    for i in range(m):
        r ^= (a << i) & bit_mask(b, i)
    for i in range(2 * m - 2, m - 1, -1):
        r ^= (fpoly << (i - m)) & bit_mask(r, i)
    return r


@njit(cache=JIT_CACHE)
def gf_inv(a, m, fpoly):
    """a^(2^m - 2): the inverse of a (0 maps to 0). a may be secret; the chain is fixed."""
    x = a
    for _ in range(m - 2):
        x = gf_mul(gf_mul(x, x, m, fpoly), a, m, fpoly)
    return gf_mul(x, x, m, fpoly)


@njit(cache=JIT_CACHE)
def _nonzero_mask(x):
    # -1 if x != 0 else 0, for 0 <= x < 2^62, without a branch
    return secret_mask(~((x - 1) >> 63))


@njit(cache=JIT_CACHE)
def gf_reduce_all(x, m, fpoly):
    """Reduce every unreduced carry-less product in x (below 2^(2m-1)) modulo fpoly, in place.

    Elementwise masked XORs; values may be secret. The masks pass the barrier: LLVM otherwise
    stores x[c] only when its bit is set (a branch or masked store on the secret, which
    memcheck saw); the loops are short (2t - 1 products) and off the decapsulation hot path.
    """
    for i in range(2 * m - 2, m - 1, -1):
        red = fpoly << (i - m)
        for c in range(x.shape[0]):
            x[c] ^= red & bit_mask(x[c], i)


@njit(cache=JIT_CACHE)
def gf_scale(src, a, m, fpoly):
    """[a * x for x in src]: one secret scalar times a vector of (secret) field elements."""
    out = np.zeros(src.shape[0], dtype=np.int64)
    for b in range(m):
        mask = bit_mask(a, b)
        for c in range(src.shape[0]):
            out[c] ^= (src[c] << b) & mask
    gf_reduce_all(out, m, fpoly)
    return out


@njit(cache=JIT_CACHE)
def poly_mulmod(a, b, m, fpoly, taps, const_z):
    """a * b in GF(2^m)[y]/F(y), F(y) = y^t + sum_{tap} y^tap (the y^0 term times z when const_z).

    Inputs: length-t coefficient arrays (secret during key generation). Carry-less products are
    accumulated per coefficient and reduced once; the work depends on t and m only.
    """
    t = a.shape[0]
    shifted = np.empty((m, t), dtype=np.int64)
    for k in range(m):
        for j in range(t):
            shifted[k, j] = b[j] << k
    prod = np.zeros(2 * t - 1, dtype=np.int64)
    for i in range(t):
        for k in range(m):
            mask = bit_mask(a[i], k)
            for j in range(t):
                prod[i + j] ^= shifted[k, j] & mask
    gf_reduce_all(prod, m, fpoly)
    z = np.int64(2)          # an int64, not a literal: gf_mul then compiles once for all callers
    for i in range(2 * t - 2, t - 1, -1):
        for tap in taps:
            if tap == 0 and const_z:
                prod[i - t] ^= gf_mul(prod[i], z, m, fpoly)
            else:
                prod[i - t + tap] ^= prod[i]
    return prod[:t].copy()


@njit(cache=JIT_CACHE)
def genpoly(f, m, fpoly, taps, const_z):
    """The minimal polynomial of f in GF(2^m)[y]/F(y): (1, g_0..g_{t-1}) with g monic of degree t,
    or (0, zeros) when its degree is below t (key generation then retries).

    f is secret. Solves sum_{c<t} g_c f^c = f^t by elimination with masked row additions; the
    only branch is the public-by-design rejection of a singular system.
    """
    t = f.shape[0]
    # A[k, c] = coefficient k of f^c, for c = 0..t
    A = np.zeros((t, t + 1), dtype=np.int64)
    p = np.zeros(t, dtype=np.int64)
    p[0] = 1
    for c in range(t + 1):
        for k in range(t):
            A[k, c] = p[k]
        if c < t:
            p = poly_mulmod(p, f, m, fpoly, taps, const_z)
    for j in range(t):
        for k in range(j + 1, t):
            mask = ~_nonzero_mask(A[j, j])
            for c in range(j, t + 1):
                A[j, c] ^= A[k, c] & mask
        if declassify(np.int64(A[j, j] == 0)):      # public: the candidate is dropped, keygen retries
            return 0, np.zeros(t, dtype=np.int64)
        row = gf_scale(A[j, j:], gf_inv(A[j, j], m, fpoly), m, fpoly)
        for c in range(j, t + 1):
            A[j, c] = row[c - j]
        for k in range(t):
            if k != j:
                row = gf_scale(A[j, j:], A[k, j], m, fpoly)
                for c in range(j, t + 1):
                    A[k, c] ^= row[c - j]
    g = np.empty(t, dtype=np.int64)
    for k in range(t):
        g[k] = A[k, t]
    return 1, g


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside the kernel that calls it
def berlekamp_massey(s, t, m, fpoly):
    """An error locator from the 2t syndromes s (secret), reversed: out[i] = C[t - i], so the
    roots of out are the support elements at error positions (the field is Classic McEliece's,
    ``FIELD_TAPS[m]``, which ``fpoly`` names; t < 128 for m = 12 and t < 256 for m = 13, which
    covers every set).

    Inversion-free form: C <- b C - d x B, so C is the usual connection polynomial times a
    nonzero constant, which leaves its roots alone. Constant time: fixed loop bounds (N, t are
    public), every update is a masked select.

    C, B (kept as x B) and the window of syndromes S (bit i = s[N - i]) are bitsliced over
    ``bm_words(m, t)`` words, coefficient i at bit i of each plane, and C and x B side by side in
    one row of P: the discrepancy is the parity of the planes of C * S, and the update b C and
    d x B as one product of P by b's and d's bits side by side (two products, b C and d x B,
    where the row is wider than a register), each step in vector registers (``bm_discrepancy``,
    ``bm_update``).
    """
    if not ((m == 12 and fpoly == 0x1009 and t < 128) or (m == 13 and fpoly == 0x201B and t < 256)):
        raise ValueError("berlekamp_massey: Classic McEliece's fields (FIELD_TAPS) and t < 128 (m = 12) "
                         "or t < 256 (m = 13) only")
    H = bm_words(m, t)
    P = np.zeros((m, 2 * H), dtype=np.int64)               # C | x B
    S = np.zeros((m, H), dtype=np.int64)
    keep = np.zeros((1, H), dtype=np.int64)                # coefficients 0 .. t
    for i in range(t + 1):
        keep[0, i >> 6] |= np.int64(1) << (i & 63)
    P[0, 0] = 1
    P[0, H] = 2                                            # x
    L = 0
    b = 1
    for N in range(2 * t):
        d = bm_discrepancy(P, S, s[N], m)                 # S <- x S + s[N] first
        upd = _nonzero_mask(d) & ~((N - 2 * L) >> 63)     # d != 0 and 2L <= N
        bm_update(P, b, d, upd, keep, m)
        L = (L & ~upd) | ((N + 1 - L) & upd)
        b = (b & ~upd) | (d & upd)
    out = np.empty(t + 1, dtype=np.int64)
    for i in range(t + 1):
        v = 0
        for k in range(m):
            v |= ((P[k, i >> 6] >> (i & 63)) & 1) << k
        out[t - i] = v
    return out


# --- bitsliced vectors ---------------------------------------------------------------------

FIELD_TAPS = {12: (3, 0), 13: (4, 3, 1, 0)}
"""z^m = sum z^tap: the field polynomials of Classic McEliece (every parameter set's ``field_taps``)."""

WIDE_REGISTERS = vector_registers(cpu_features()) >= 32
"""Whether two operands' planes fit in vector registers, 512 bits a plane (AVX-512's 32): then a
product is the schoolbook's m^2 terms, operand by operand. With 16 (AVX2), that spilled partial
sums to memory at every term; there a product is one level of Karatsuba on 256 bits a plane,
each of its three half-size products summed one output plane at a time, in registers."""

BLOCK = 8 if WIDE_REGISTERS else 4
"""Words of every plane that ``mul_block`` multiplies at once."""


def mul_block(out, a, b, w, m):
    """out[:, w:w+BLOCK] = a * b on those words of bitsliced vectors (m, W) of GF(2^m) with
    Classic McEliece's field polynomial (``FIELD_TAPS``, m = 12 or 13); out may alias a or b.
    Compiled: every plane of the block in vector registers, the plane products
    (``PlaneBlocks.product``) and the reduction unrolled, one load of each input plane and one
    store of each output plane (a pass over memory per plane product cost five to nine times as
    much). AND and XOR only: inputs may be secret."""
    taps = FIELD_TAPS[m]
    prod = np.zeros((2 * m - 1, BLOCK), dtype=np.int64)
    for i in range(m):
        for j in range(m):
            prod[i + j] ^= a[i, w:w + BLOCK] & b[j, w:w + BLOCK]
    for i in range(2 * m - 2, m - 1, -1):
        for tap in taps:
            prod[i - m + tap] ^= prod[i]
    out[:, w:w + BLOCK] = prod[:m]


def planes_intrinsic_args(*arrays) -> bool:
    """Whether the arguments are what the block intrinsics take: 2-D C-contiguous int64 arrays."""
    return all(isinstance(arr, types.Array) and arr.ndim == 2 and arr.layout == "C" and arr.dtype == types.int64
               for arr in arrays)


class PlaneBlocks:
    """LLVM IR for BLOCK words of every plane of 2-D int64 arrays: loads, stores, and the field
    product of two sets of planes in vector registers (shared by ``mul_block`` and the FFT's
    butterflies)."""

    def __init__(self, context, builder, signature, args, words=BLOCK):
        self.context, self.builder, self.signature, self.args = context, builder, signature, args
        self.lanes = ir.VectorType(ir.IntType(64), words)
        self.words = words

    def word(self, k):
        """Argument k (an integer) as int64."""
        return self.context.cast(self.builder, self.args[k], self.signature.args[k], types.int64)

    def _plane(self, k, row, start):
        b = self.builder
        arr = self.context.make_array(self.signature.args[k])(self.context, b, self.args[k])
        offset = b.add(b.mul(b.extract_value(arr.shape, 1), ir.Constant(ir.IntType(64), row)), start)
        return b.bitcast(b.gep(arr.data, [offset]), self.lanes.as_pointer())

    def load(self, k, rows, start):
        """Words start.. of planes 0..rows-1 of argument k."""
        out = []
        for row in range(rows):
            value = self.builder.load(self._plane(k, row, start))
            value.align = 8
            out.append(value)
        return out

    def store(self, k, planes, start):
        for row, value in enumerate(planes):
            self.builder.store(value, self._plane(k, row, start)).align = 8

    def xor(self, x, y):
        return [self.builder.xor(a, b) for a, b in zip(x, y)]

    def unreduced(self, A, B, m):
        """The 2m - 1 planes of the carry-less product of A and B: m^2 ANDs and XORs."""
        b = self.builder
        prod: list = [None] * (2 * m - 1)
        for i in range(m):
            for j in range(m):
                term = b.and_(A[i], B[j])
                prod[i + j] = term if prod[i + j] is None else b.xor(prod[i + j], term)
        return prod

    def reduce(self, prod, m):
        """Planes 0..m-1 of ``unreduced``'s result modulo the field polynomial (``FIELD_TAPS[m]``)."""
        prod = list(prod)
        for i in range(2 * m - 2, m - 1, -1):
            for tap in FIELD_TAPS[m]:
                prod[i - m + tap] = self.builder.xor(prod[i - m + tap], prod[i])
        return prod[:m]

    def karatsuba(self, A, B, m):
        """``unreduced`` by one level of Karatsuba: with A = A0 + z^L A1 (L = ceil(m/2)) and B
        alike, A0 B0 + z^L ((A0 + A1)(B0 + B1) - A0 B0 - A1 B1) + z^2L A1 B1: 3 L^2 terms
        instead of m^2, each half-size product needing few registers (``_by_output``)."""
        b = self.builder
        L = (m + 1) // 2
        low, high = self._by_output(A[:L], B[:L]), self._by_output(A[L:], B[L:])
        A_sum = [b.xor(A[i], A[L + i]) if L + i < m else A[i] for i in range(L)]
        B_sum = [b.xor(B[i], B[L + i]) if L + i < m else B[i] for i in range(L)]
        prod: list = low + [None] * (2 * m - 1 - len(low))

        def add(k, v):
            prod[k] = v if prod[k] is None else b.xor(prod[k], v)
        for k, v in enumerate(self._by_output(A_sum, B_sum)):
            v = b.xor(v, low[k])
            add(L + k, b.xor(v, high[k]) if k < len(high) else v)
        for k, v in enumerate(high):
            add(2 * L + k, v)
        return prod

    def _by_output(self, A, B):
        """The carry-less product of two equally long lists of planes, one output plane at a
        time: only that plane's sum is live beside the operands."""
        b = self.builder
        n = len(A)
        out = []
        for k in range(2 * n - 1):
            terms = [b.and_(A[i], B[k - i]) for i in range(max(0, k - n + 1), min(k, n - 1) + 1)]
            total = terms[0]
            for term in terms[1:]:
                total = b.xor(total, term)
            out.append(total)
        return out

    def product(self, A, B, m):
        """The planes of A * B in GF(2^m) (``FIELD_TAPS[m]``), by the schedule that suits the
        registers (``WIDE_REGISTERS``)."""
        return self.reduce(self.unreduced(A, B, m) if WIDE_REGISTERS else self.karatsuba(A, B, m), m)

    def square(self, A, m):
        """The planes of A^2 in GF(2^m): XORs of planes (``square_map``)."""
        result: list = [None] * m
        for k, planes in enumerate(square_map(m)):
            for j in planes:
                result[j] = A[k] if result[j] is None else self.builder.xor(result[j], A[k])
        return result

    def splat(self, value):
        """An i64 in every lane."""
        b = self.builder
        vec = b.insert_element(ir.Constant(self.lanes, None), value, ir.Constant(ir.IntType(32), 0))
        lane0 = ir.Constant(ir.VectorType(ir.IntType(32), self.words), [0] * self.words)
        return b.shuffle_vector(vec, ir.Constant(self.lanes, None), lane0)

    def shifted_up(self, v):
        """The lanes as one bit string (lane 0 lowest) shifted up by one bit."""
        b = self.builder
        up_one = ir.Constant(ir.VectorType(ir.IntType(32), self.words), [self.words] + list(range(self.words - 1)))
        carry = b.lshr(b.shuffle_vector(v, ir.Constant(self.lanes, [0] * self.words), up_one),
                       self.splat(ir.Constant(ir.IntType(64), 63)))
        return b.or_(b.shl(v, self.splat(ir.Constant(ir.IntType(64), 1))), carry)

    def bit_masks(self, x, m):
        """The masks -(bit k of x), k < m, each through the optimisation barrier, in every lane (x may be secret)."""
        b = self.builder
        one = ir.Constant(ir.IntType(64), 1)
        return [self.splat(emit_opaque(b, b.neg(b.and_(b.lshr(x, ir.Constant(ir.IntType(64), k)), one))))
                for k in range(m)]


def _mul_block_intrinsic(m):
    @intrinsic
    def block(typingctx, out, a, b, w):
        if not planes_intrinsic_args(out, a, b):
            return None

        def codegen(context, builder, signature, args):
            g = PlaneBlocks(context, builder, signature, args)
            start = g.word(3)
            A, B = g.load(1, m, start), g.load(2, m, start)     # all loads first: out may alias
            g.store(0, g.product(A, B, m), start)
            return context.get_dummy_value()
        return types.void(out, a, b, w), codegen
    return block


_mul_block_12, _mul_block_13 = _mul_block_intrinsic(12), _mul_block_intrinsic(13)


@overload(mul_block, inline="always")
def _mul_block_compiled(out, a, b, w, m):
    def impl(out, a, b, w, m):
        if m == 12:
            _mul_block_12(out, a, b, w)
        else:
            _mul_block_13(out, a, b, w)
    return impl


def square_map(m):
    """For each plane k, the planes of z^(2k) reduced by ``FIELD_TAPS[m]``: squaring is GF(2)-linear,
    so plane j of a^2 is the XOR of the planes k whose list holds j."""
    out = []
    for k in range(m):
        poly = 1 << (2 * k)
        while poly >> m:
            top = poly.bit_length() - 1
            poly ^= 1 << top
            for tap in FIELD_TAPS[m]:
                poly ^= 1 << (top - m + tap)
        out.append([j for j in range(m) if (poly >> j) & 1])
    return out


def square_block(out, a, w, m):
    """out[:, w:w+BLOCK] = a^2 on those words of bitsliced vectors (m, W), Classic McEliece's field
    (``FIELD_TAPS``); out may alias a. Compiled: every plane of the block in vector registers,
    the XORs of ``square_map`` unrolled. a may be secret."""
    planes = [a[k, w:w + BLOCK].copy() for k in range(m)]
    for j in range(m):
        out[j, w:w + BLOCK] = 0
    for k, targets in enumerate(square_map(m)):
        for j in targets:
            out[j, w:w + BLOCK] ^= planes[k]


def compile_block_map(python_fn, planes_map):
    """Compile ``python_fn(out, a, w, m)``, out[:, w:w+BLOCK] = f(a's block), for both fields:
    an intrinsic per m that loads the block's m planes of a, applies ``planes_map(g, A, m)``
    (LLVM IR through ``PlaneBlocks`` g; returns the m result planes) and stores them to out.
    Where m is a constant of the calling code (a literal), only its field's block is compiled."""
    def intrinsic_for(m):
        @intrinsic
        def block(typingctx, out, a, w):
            if not planes_intrinsic_args(out, a):
                return None

            def codegen(context, builder, signature, args):
                g = PlaneBlocks(context, builder, signature, args)
                start = g.word(2)
                g.store(0, planes_map(g, g.load(1, m, start), m), start)
                return context.get_dummy_value()
            return types.void(out, a, w), codegen
        return block
    blocks = {m: intrinsic_for(m) for m in (12, 13)}
    block_12, block_13 = blocks[12], blocks[13]

    @overload(python_fn, inline="always")
    def compiled(out, a, w, m):
        if isinstance(m, types.IntegerLiteral) and m.literal_value in blocks:
            block = blocks[m.literal_value]
            return lambda out, a, w, m: block(out, a, w)

        def impl(out, a, w, m):
            if m == 12:
                block_12(out, a, w)
            else:
                block_13(out, a, w)
        return impl


compile_block_map(square_block, lambda g, A, m: g.square(A, m))


INVERSE_CHAIN = {12: (1, 2, 3, 5, 10, 11), 13: (1, 2, 3, 6, 12)}
"""Itoh-Tsujii addition chains ending at m - 1: each j is the one before it plus an earlier one."""


def inverse_steps(m):
    """For each chain element after the first: (jj, src), j = previous + jj with jj = chain[src]:
    a^(2^j - 1) = (a^(2^prev - 1))^(2^jj) * a^(2^jj - 1)."""
    chain = INVERSE_CHAIN[m]
    return [(chain[c] - chain[c - 1], chain.index(chain[c] - chain[c - 1])) for c in range(1, len(chain))]


def inverse_square_block(out, a, w, m):
    """out[:, w:w+BLOCK] = 1 / a^2 on those words of bitsliced vectors (m, W), Classic McEliece's
    field (``FIELD_TAPS``; 0 maps to 0); out may alias a. a^(2^(m-1) - 1) by the chain of
    ``inverse_steps``, squared to a^(2^m - 2) = 1 / a and squared again. Compiled: the whole
    chain on the block's planes in vector registers, one load and one store per plane. AND and
    XOR only: a may be secret."""
    known = [a[:, w:w + BLOCK].copy()]
    for jj, src in inverse_steps(m):
        x = known[-1].copy()
        for _ in range(jj):
            square_block(x, x, 0, m)
        mul_block(x, x, known[src], 0, m)
        known.append(x)
    x = known[-1]
    square_block(x, x, 0, m)            # a^(2^m - 2) = 1 / a
    square_block(x, x, 0, m)
    out[:, w:w + BLOCK] = x


def _inverse_square_planes(g, A, m):
    known = [A]
    for jj, src in inverse_steps(m):
        x = known[-1]
        for _ in range(jj):
            x = g.square(x, m)
        known.append(g.product(x, known[src], m))
    return g.square(g.square(known[-1], m), m)


compile_block_map(inverse_square_block, _inverse_square_planes)


@njit(cache=JIT_CACHE, inline="always")
def bm_words(m, t):
    """Words per plane of Berlekamp-Massey's polynomials (coefficients 0 .. t): 2 for t < 128
    (348864, 460896, 6960119), else 4 (t < 256: 6688128, 8192128). GF(2^13)'s locator compiles
    both widths (``decode`` has a locator unit per field); two words keep C and x B side by side
    in one 256-bit register, where four spilled on CPUs with 16 vector registers."""
    return 2 if t < 128 else 4


def bm_discrepancy(P, S, new, m):
    """S <- x S + new (in place), then sum_i C_i S_i in GF(2^m), C the first S.shape[1] words of
    every plane of P (bitsliced, ``FIELD_TAPS[m]``): the parity of every plane of their product.
    Compiled: every plane in vector registers. P, S and new may be secret."""
    H = S.shape[1]
    for k in range(m):
        up = S[k] << 1
        up[1:] |= (S[k, :-1] >> 63) & 1
        up[0] |= (new >> k) & 1
        S[k] = up
    prod = np.zeros((2 * m - 1, H), dtype=np.int64)
    for i in range(m):
        for j in range(m):
            prod[i + j] ^= P[i, :H] & S[j]
    for i in range(2 * m - 2, m - 1, -1):
        for tap in FIELD_TAPS[m]:
            prod[i - m + tap] ^= prod[i]
    d = 0
    for k in range(m):
        d |= int(parity64(np.bitwise_xor.reduce(prod[k]))) << k
    return d


def bm_update(P, b, d, upd, keep, m):
    """One Berlekamp-Massey update in place on P = C | B (each keep.shape[1] words per plane):
    C <- b C + d B, B <- x (C if upd else B) cut to the coefficients in keep; b, d scalars, upd a
    mask (all may be secret). Compiled: b C and d B as one product of P by b's bits beside d's
    bits (the masks through the barrier), every plane in vector registers."""
    H = keep.shape[1]
    prod = np.zeros((2 * m - 1, 2 * H), dtype=np.int64)
    for i in range(m):
        for j in range(m):
            prod[i + j, :H] ^= P[i, :H] & bit_mask(b, j)
            prod[i + j, H:] ^= P[i, H:] & bit_mask(d, j)
    for i in range(2 * m - 2, m - 1, -1):
        for tap in FIELD_TAPS[m]:
            prod[i - m + tap] ^= prod[i]
    for k in range(m):
        v = (P[k, :H] & upd) | (P[k, H:] & ~upd)
        up = v << 1
        up[1:] |= (v[:-1] >> 63) & 1
        P[k, H:] = up & keep[0]
        P[k, :H] = prod[k, :H] ^ prod[k, H:]


def _bm_intrinsics(m, H):
    i64, i32 = ir.IntType(64), ir.IntType(32)

    def halves(builder, v):
        # lanes 0..H-1 and H..2H-1 of a 2H-lane vector
        return [builder.shuffle_vector(v, v, ir.Constant(ir.VectorType(i32, H), list(range(at, at + H))))
                for at in (0, H)]

    @intrinsic
    def discrepancy(typingctx, P, S, new):
        if not planes_intrinsic_args(P, S):
            return None

        def codegen(context, builder, signature, args):
            g = PlaneBlocks(context, builder, signature, args, H)
            zero = ir.Constant(i64, 0)
            first = ir.Constant(g.lanes, [1] + [0] * (H - 1))
            S = [builder.or_(g.shifted_up(plane), builder.and_(mask, first))
                 for plane, mask in zip(g.load(1, m, zero), g.bit_masks(g.word(2), m))]
            g.store(1, S, zero)
            d = zero
            for k, plane in enumerate(g.product(g.load(0, m, zero), S, m)):
                acc = builder.extract_element(plane, ir.Constant(i32, 0))
                for w in range(1, H):
                    acc = builder.xor(acc, builder.extract_element(plane, ir.Constant(i32, w)))
                parity = builder.and_(builder.ctpop(acc), ir.Constant(i64, 1))
                d = builder.or_(d, builder.shl(parity, ir.Constant(i64, k)))
            return d
        return types.int64(P, S, new), codegen

    @intrinsic
    def update(typingctx, P, b, d, upd, keep):
        if not planes_intrinsic_args(P, keep):
            return None

        def codegen(context, builder, signature, args):
            half = PlaneBlocks(context, builder, signature, args, H)
            full = PlaneBlocks(context, builder, signature, args, 2 * H)
            zero, one = ir.Constant(i64, 0), ir.Constant(i64, 1)
            kept, sel = half.load(4, 1, zero)[0], half.splat(half.word(3))
            if 2 * H > BLOCK:
                # C | B is wider than a register: b C and d B as two products of their own
                C, B = half.load(0, m, zero), half.load(0, m, ir.Constant(i64, H))
                bC = half.product(C, half.bit_masks(half.word(1), m), m)
                dB = half.product(B, half.bit_masks(half.word(2), m), m)
                half.store(0, half.xor(bC, dB), zero)
                half.store(0, [builder.and_(half.shifted_up(builder.or_(builder.and_(c, sel),
                                                                        builder.and_(x, builder.not_(sel)))), kept)
                               for c, x in zip(C, B)], ir.Constant(i64, H))
                return context.get_dummy_value()
            rows = full.load(0, m, zero)
            pair = ir.VectorType(i64, 2)
            side_by_side = ir.Constant(ir.VectorType(i32, 2 * H), [0] * H + [1] * H)
            masks = []
            for k in range(m):                  # -(bit k of b) in the first H lanes, of d in the others
                bits = [emit_opaque(builder, builder.neg(builder.and_(builder.lshr(half.word(at), ir.Constant(i64, k)),
                                                                      one)))
                        for at in (1, 2)]
                v = ir.Constant(pair, None)
                for lane, x in enumerate(bits):
                    v = builder.insert_element(v, x, ir.Constant(i32, lane))
                masks.append(builder.shuffle_vector(v, v, side_by_side))
            T = full.product(rows, masks, m)
            concat = ir.Constant(ir.VectorType(i32, 2 * H), list(range(2 * H)))
            out = []
            for k in range(m):
                C, B = halves(builder, rows[k])
                bC, dB = halves(builder, T[k])
                v = builder.or_(builder.and_(C, sel), builder.and_(B, builder.not_(sel)))
                out.append(builder.shuffle_vector(builder.xor(bC, dB), builder.and_(half.shifted_up(v), kept),
                                                  concat))
            full.store(0, out, zero)
            return context.get_dummy_value()
        return types.void(P, b, d, upd, keep), codegen
    return discrepancy, update


_BM = {(m, H): _bm_intrinsics(m, H) for m, H in ((12, 2), (13, 2), (13, 4))}     # (m, bm_words(m, t))


def _bm_fields(m):
    # the fields whose intrinsics a call compiles: m's only when it is a literal (the locator's
    # unit per field), else both
    return (m.literal_value,) if isinstance(m, types.IntegerLiteral) else (12, 13)


@overload(bm_discrepancy, inline="always", prefer_literal=True)
def _bm_discrepancy_compiled(P, S, new, m):
    fields = _bm_fields(m)
    d12 = _BM[12, 2][0] if 12 in fields else None
    d13, d13_wide = (_BM[13, 2][0], _BM[13, 4][0]) if 13 in fields else (None, None)
    if fields == (12,):
        return lambda P, S, new, m: d12(P, S, new)
    if fields == (13,):
        return lambda P, S, new, m: d13(P, S, new) if S.shape[1] == 2 else d13_wide(P, S, new)

    def impl(P, S, new, m):
        if m == 12:
            return d12(P, S, new)
        if S.shape[1] == 2:
            return d13(P, S, new)
        return d13_wide(P, S, new)
    return impl


@overload(bm_update, inline="always", prefer_literal=True)
def _bm_update_compiled(P, b, d, upd, keep, m):
    fields = _bm_fields(m)
    u12 = _BM[12, 2][1] if 12 in fields else None
    u13, u13_wide = (_BM[13, 2][1], _BM[13, 4][1]) if 13 in fields else (None, None)

    def only_12(P, b, d, upd, keep, m):
        u12(P, b, d, upd, keep)

    def only_13(P, b, d, upd, keep, m):
        if keep.shape[1] == 2:
            u13(P, b, d, upd, keep)
        else:
            u13_wide(P, b, d, upd, keep)

    def impl(P, b, d, upd, keep, m):
        if m == 12:
            u12(P, b, d, upd, keep)
        elif keep.shape[1] == 2:
            u13(P, b, d, upd, keep)
        else:
            u13_wide(P, b, d, upd, keep)
    return {(12,): only_12, (13,): only_13}.get(fields, impl)


@njit(cache=JIT_CACHE, inline="always")
def _classic_field(m, taps):
    # whether z^m = sum z^tap is Classic McEliece's field polynomial (``FIELD_TAPS``), which the
    # block intrinsics assume
    return (m == 12 and taps.shape[0] == 2 and taps[0] == 3 and taps[1] == 0) or (
        m == 13 and taps.shape[0] == 4 and taps[0] == 4 and taps[1] == 3 and taps[2] == 1 and taps[3] == 0)


@njit(cache=JIT_CACHE)
def vec_mul(out, a, b, m, taps):
    """out = a * b elementwise for bitsliced vectors (m, W); out may alias a or b.

    Schoolbook product of the planes then reduction by z^m = sum z^tap. Inputs may be secret.
    With Classic McEliece's field polynomials (``taps`` as in ``FIELD_TAPS``) the words go
    through ``mul_block`` BLOCK at a time, the rest (W not a multiple of BLOCK, other
    polynomials) plane by plane here.
    """
    W = a.shape[1]
    done = 0
    if _classic_field(m, taps):
        done = W - W % BLOCK
        for w in range(0, done, BLOCK):
            mul_block(out, a, b, w, m)
    rest = W - done
    if rest == 0:           # public: no allocation for the blocks' case (the FFTs call this per level)
        return
    prod = np.zeros((2 * m - 1, rest), dtype=np.int64)
    for i in range(m):
        for j in range(m):
            for w in range(rest):
                prod[i + j, w] ^= a[i, done + w] & b[j, done + w]
    for i in range(2 * m - 2, m - 1, -1):
        for tap in taps:
            for w in range(rest):
                prod[i - m + tap, w] ^= prod[i, w]
    for i in range(m):
        for w in range(rest):
            out[i, done + w] = prod[i, w]


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside the kernel that calls it
def vec_times_z_table(L, m, taps):
    """T[l] = L * z^l for l < m (bitsliced; L secret): multiplying by L is then a sum of the T[l]
    selected by the bits of the other factor, with no reduction left to do."""
    W = L.shape[1]
    T = np.empty((m, m, W), dtype=np.int64)
    for k in range(m):
        for w in range(W):
            T[0, k, w] = L[k, w]
    for l in range(1, m):
        # times z: planes move up one, the top plane folds back through z^m = sum z^tap
        for k in range(m - 1, 0, -1):
            for w in range(W):
                T[l, k, w] = T[l - 1, k - 1, w]
        for w in range(W):
            T[l, 0, w] = 0
        for tap in taps:
            for w in range(W):
                T[l, tap, w] ^= T[l - 1, m - 1, w]
    return T


@njit(cache=JIT_CACHE)
def vec_mul_table(out, x, T):
    """out = x * L for T = vec_times_z_table(L); out must not alias x. Inputs may be secret.

    Four source planes per pass over an output plane, to save loads and stores.
    """
    m, W = x.shape
    for k in range(m):
        for w in range(W):
            out[k, w] = x[0, w] & T[0, k, w]
    l = 1
    while l + 3 < m:
        for k in range(m):
            for w in range(W):
                out[k, w] ^= ((x[l, w] & T[l, k, w]) ^ (x[l + 1, w] & T[l + 1, k, w])
                              ^ (x[l + 2, w] & T[l + 2, k, w]) ^ (x[l + 3, w] & T[l + 3, k, w]))
        l += 4
    while l < m:
        for k in range(m):
            for w in range(W):
                out[k, w] ^= x[l, w] & T[l, k, w]
        l += 1


@njit(cache=JIT_CACHE)
def vec_add_scalar(a, c, m):
    """a += c for a scalar c in every element (c may be secret: mask per plane)."""
    W = a.shape[1]
    for k in range(m):
        mask = bit_mask(c, k)
        for w in range(W):
            a[k, w] ^= mask


@njit(cache=JIT_CACHE)
def vec_eval(coeffs, L, m, taps):
    """Bitsliced values of the polynomial sum coeffs[i] x^i at every element of L (Horner).

    coeffs and L are secret in decapsulation; the degree is public.
    """
    return vec_eval_table(coeffs, vec_times_z_table(L, m, taps), m)


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside the kernel that calls it
def vec_eval_table(coeffs, T, m):
    """vec_eval with the table of L (see vec_times_z_table) already built; coeffs and T secret."""
    W = T.shape[2]
    acc = np.zeros((m, W), dtype=np.int64)
    tmp = np.empty((m, W), dtype=np.int64)
    deg = coeffs.shape[0] - 1
    vec_add_scalar(acc, coeffs[deg], m)
    for i in range(deg - 1, -1, -1):
        vec_mul_table(tmp, acc, T)
        acc, tmp = tmp, acc
        vec_add_scalar(acc, coeffs[i], m)
    return acc


@njit(cache=JIT_CACHE)
def vec_square(out, a, m, taps):
    """out = a^2 elementwise (a secret; out may alias a). Squaring is GF(2)-linear: bit k moves
    to z^(2k), reduced by z^m = sum z^tap, so it costs XORs of whole planes only. With Classic
    McEliece's field polynomials the words go through ``square_block`` BLOCK at a time, the
    rest plane by plane here."""
    W = a.shape[1]
    done = 0
    if _classic_field(m, taps):
        done = W - W % BLOCK
        for w in range(0, done, BLOCK):
            square_block(out, a, w, m)
    rest = W - done
    prod = np.zeros((2 * m - 1, rest), dtype=np.int64)
    for k in range(m):
        for w in range(rest):
            prod[2 * k, w] = a[k, done + w]
    for i in range(2 * m - 2, m - 1, -1):
        for tap in taps:
            for w in range(rest):
                prod[i - m + tap, w] ^= prod[i, w]
    for k in range(m):
        for w in range(rest):
            out[k, done + w] = prod[k, w]


_CHAIN_12, _CHAIN_13 = INVERSE_CHAIN[12], INVERSE_CHAIN[13]


@njit(cache=JIT_CACHE, inline="always")
def vec_inverse_square(out, a, m, taps):
    """out = 1 / a^2 elementwise for a bitsliced vector (m, W) (a secret; 0 maps to 0; out may
    alias a), ``inverse_square_block`` BLOCK words at a time: Classic McEliece's field
    polynomials (``FIELD_TAPS``) and whole blocks only, which every set's 2^m / 64 words are.
    (No general fallback: compiled beside the blocks, ``vec_inv`` doubled the first use's
    compile time of the unit that calls this; ``vec_inv`` and ``vec_square`` do it for any size.)"""
    W = a.shape[1]
    if not _classic_field(m, taps) or W % BLOCK:
        raise ValueError("vec_inverse_square: Classic McEliece's fields (FIELD_TAPS) and whole blocks of words only")
    for w in range(0, W, BLOCK):
        inverse_square_block(out, a, w, m)


@njit(cache=JIT_CACHE)
def vec_inv(a, m, taps):
    """Elementwise a^(2^m - 2) of a bitsliced vector (secret), by a fixed addition chain on the
    exponents 2^j - 1 (Itoh-Tsujii): a^(2^(i+j) - 1) = (a^(2^i - 1))^(2^j) a^(2^j - 1)."""
    W = a.shape[1]
    # chain of j with known a^(2^j - 1), ending at m - 1
    chain = np.array(_CHAIN_13) if m == 13 else np.array(_CHAIN_12)
    known = np.empty((chain.shape[0], m, W), dtype=np.int64)
    for k in range(m):
        for w in range(W):
            known[0, k, w] = a[k, w]
    x = np.empty((m, W), dtype=np.int64)
    for c in range(1, chain.shape[0]):
        j = chain[c]
        # split j = i + jj with i = chain[c - 1] and jj an earlier chain element
        i = chain[c - 1]
        jj = j - i
        src = 0
        for e in range(c):
            if chain[e] == jj:
                src = e
        for k in range(m):
            for w in range(W):
                x[k, w] = known[c - 1, k, w]
        for _ in range(jj):
            vec_square(x, x, m, taps)
        vec_mul(known[c], x, known[src], m, taps)
    out = known[chain.shape[0] - 1].copy()
    vec_square(out, out, m, taps)
    return out


@njit(cache=JIT_CACHE)
def parity64(x):
    # parity of a 64-bit word by fixed folds (x may be secret)
    x ^= x >> 32
    x ^= x >> 16
    x ^= x >> 8
    x ^= x >> 4
    x ^= x >> 2
    x ^= x >> 1
    return x & 1


@njit(cache=JIT_CACHE)
def vec_from_scalars(vals, m, W):
    """Bitslice a list of field elements (secret values, public length) into (m, W) planes."""
    out = np.zeros((m, W), dtype=np.int64)
    n = vals.shape[0]
    for k in range(m):
        for w in range((n + 63) >> 6):
            acc = 0
            for b in range(min(64, n - 64 * w)):        # a reduction over the word: vectorised
                acc |= ((vals[64 * w + b] >> k) & 1) << b
            out[k, w] = acc
    return out


@njit(cache=JIT_CACHE)
def vec_to_scalars(planes, count):
    """Inverse of vec_from_scalars for the first ``count`` elements (values may be secret)."""
    m = planes.shape[0]
    out = np.zeros(count, dtype=np.int64)
    for k in range(m):
        for w in range((count + 63) >> 6):
            x = planes[k, w]
            for b in range(min(64, count - 64 * w)):    # consecutive elements: vectorised
                out[64 * w + b] |= ((x >> b) & 1) << k
    return out


def field_poly(params) -> int:
    """The field modulus as bits, z^m included."""
    f = 1 << params.m
    for tap in params.field_taps:
        f |= 1 << tap
    return f
