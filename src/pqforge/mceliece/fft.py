"""Additive FFT: a polynomial of degree below K (a power of two) evaluated at all 2^m field
elements at once, then routed to the support order by the Benes network.

Points are indexed by the basis z^(m-1), ..., z, 1 (index bit i selects z^(m-1-i)), so entry x
holds f(bitrev(x)), exactly the sequence the Benes network turns into the support. One level of
the recursion, for basis (b_0 .. b_{d-1}) with last element b:

    g(x) = f(b x) = g0(x^2 + x) + x g1(x^2 + x)          (Taylor expansion at x^2 + x)
    g0, g1 evaluated on the basis c_i = (b_i/b)^2 + b_i/b  (i < d - 1)
    f(b u) = E0 + u E1,  f(b (u + 1)) = f(b u) + E1       (u = sum of the chosen b_i / b)

After log2 K levels the polynomials are constants. Basis, powers and the u vectors are public
constants of (m, K); coefficients and evaluations are secret and only meet masks and XORs.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic, overload

from .benes import _bitrev_bits
from .gf import (BLOCK, PlaneBlocks, gf_inv, gf_mul, mul_block, parity64,
                 planes_intrinsic_args, vec_from_scalars, vec_mul, vec_to_scalars)
from ..jit.cache import JIT_CACHE


# -- the coefficient side, bitsliced -------------------------------------------------------------
#
# The K coefficients of every level live in m planes of BLOCK words (K <= 256 bits) and are never
# moved. They start in bit-reversed order (coefficient i at position bitrev(i)), so that at level
# d (blocks of S = K >> d positions) each sub-polynomial is one block, its coefficient i at offset
# bitrev(i) within it, and every step acts on all blocks at once with masks and shifts. After
# log2 K levels, block p's constant sits at position p.
#
# At level d: scale coefficient i by b_d^i (a product by public planes), then the Taylor
# expansion at x^2 + x (``taylor_pair``, from the block's scale down to the smallest).

TAYLOR_SCALES = 7
"""Scales a < 7 of the Taylor steps: K <= 256 positions."""


@lru_cache(maxsize=None)
def _step_masks(a: int, words: int) -> tuple[int, int, int]:
    """(01, 10, 11): the positions among 64 words whose bits (a + 1, a) are 01, 10 and 11, as
    integers."""
    return tuple(sum(1 << P for P in range(64 * words) if (P >> a) & 3 == pattern) for pattern in (1, 2, 3))


def taylor_pair(c, a, m, transposed):
    """The two Taylor steps at position bits (a + 1, a) on the coefficient planes c (m, words), in
    place: c[P] ^= c[P + 2^(a+1)] where those bits of P are 01, then c[P] ^= c[P - 2^a] where they
    are 10 (in the order of the coefficients, c_i += c_(i+q) for i mod 4q in [2q, 3q), then in
    [q, 2q)). Transposed: c[P] ^= c[P + 2^a] at 01, then c[P] ^= c[P - 2^(a+1)] at 11.
    Positions are public; c may be secret. Compiled: every plane in vector registers, the shifts
    across words as lane shuffles."""
    words = c.shape[1]
    at01, at10, at11 = _step_masks(a, words)
    for k in range(m):
        x = int.from_bytes(c[k].astype("<i8").tobytes(), "little")
        if transposed:
            x ^= (x >> (1 << a)) & at01
            x ^= (x << (2 << a)) & at11
        else:
            x ^= (x >> (2 << a)) & at01
            x ^= (x << (1 << a)) & at10
        c[k] = np.frombuffer((x & ((1 << (64 * words)) - 1)).to_bytes(8 * words, "little"), dtype="<i8")


def _taylor_intrinsic(m, transposed):
    i32, i64 = ir.IntType(32), ir.IntType(64)

    def word_constants(g, value):
        return ir.Constant(g.lanes, [((value >> (64 * w)) & (2**64 - 1)) - ((value >> (64 * w + 63)) & 1) * 2**64
                                     for w in range(g.words)])

    def moved(g, v, n):
        # the lanes as one bit string, the bit at P + n brought to P (n > 0) or at P - |n| (n < 0):
        # n a power of two, whole lanes from 64 on
        b, W = g.builder, g.words
        lanes, bits = abs(n) >> 6, abs(n) & 63
        step = lanes or 1
        order = ([w + step if w + step < W else W for w in range(W)] if n > 0
                 else [w - step if w >= step else W for w in range(W)])
        shuffled = b.shuffle_vector(v, ir.Constant(g.lanes, [0] * W), ir.Constant(ir.VectorType(i32, W), order))
        if not bits:
            return shuffled
        near, far = (b.lshr, b.shl) if n > 0 else (b.shl, b.lshr)
        return b.or_(near(v, g.splat(ir.Constant(i64, bits))), far(shuffled, g.splat(ir.Constant(i64, 64 - bits))))

    @intrinsic
    def pair(typingctx, c, a):
        if not planes_intrinsic_args(c):
            return None

        def codegen(context, builder, signature, args):
            g = PlaneBlocks(context, builder, signature, args)
            zero = ir.Constant(i64, 0)
            planes = g.load(0, m, zero)
            cases = [builder.append_basic_block(f"scale{a}") for a in range(TAYLOR_SCALES)]
            done = builder.append_basic_block("done")
            choose = builder.switch(g.word(1), done)
            for a, block in enumerate(cases):
                choose.add_case(ir.Constant(i64, a), block)
                builder.position_at_end(block)
                at01, at10, at11 = (word_constants(g, mask) for mask in _step_masks(a, g.words))
                steps = ((1 << a, at01), (-(2 << a), at11)) if transposed else ((2 << a, at01), (-(1 << a), at10))
                out = []
                for v in planes:
                    for n, mask in steps:
                        v = builder.xor(v, builder.and_(moved(g, v, n), mask))
                    out.append(v)
                g.store(0, out, zero)
                builder.branch(done)
            builder.position_at_end(done)
            return context.get_dummy_value()
        return types.void(c, a), codegen
    return pair


_TAYLOR = {(m, transposed): _taylor_intrinsic(m, transposed) for m in (12, 13) for transposed in (False, True)}


@overload(taylor_pair, inline="always", prefer_literal=True)
def _taylor_pair_compiled(c, a, m, transposed):
    # a literal direction (every caller's) compiles that direction's intrinsics only
    directions = ((transposed.literal_value,) if isinstance(transposed, types.BooleanLiteral) else (False, True))
    step = _TAYLOR
    if len(directions) == 1:
        d12, d13 = step[12, directions[0]], step[13, directions[0]]

        def impl(c, a, m, transposed):
            if m == 12:
                d12(c, a)
            else:
                d13(c, a)
        return impl
    f12, f13, t12, t13 = step[12, False], step[13, False], step[12, True], step[13, True]

    def impl_either(c, a, m, transposed):
        if transposed:
            if m == 12:
                t12(c, a)
            else:
                t13(c, a)
        elif m == 12:
            f12(c, a)
        else:
            f13(c, a)
    return impl_either


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside the kernel that calls it
def fft_coefficients(f, powers, m):
    """The constants left after log2 K levels (K = 2^powers.shape[0]) of scaling and Taylor
    expansion of f (secret, at most K coefficients), as planes (m, BLOCK): position p holds the
    polynomial whose evaluations fill block p of the output. powers[d] holds level d's public
    scaling powers as planes (the layout above). Products and XORs at public positions only."""
    D = powers.shape[0]
    placed = np.zeros(1 << D, dtype=np.int64)
    for i in range(f.shape[0]):
        placed[_bitrev_bits(i, D)] = f[i]
    c = vec_from_scalars(placed, m, BLOCK)
    taps = _TAPS[m - 12]
    for d in range(D):
        vec_mul(c, c, powers[d], m, taps)
        for a in range(D - d - 1):
            taylor_pair(c, a, m, False)
    return c


@njit(cache=JIT_CACHE, inline="always")
def _log2(x):
    # log2 of a public power of two
    r = 0
    while (1 << r) < x:
        r += 1
    return r


@njit(cache=JIT_CACHE, inline="always")
def _low_word(j, lh):
    # word j of the upper halves (halves of 2^lh words, numbered without gaps) -> the word of
    # its lower partner: one flat loop over all halves instead of a loop per block
    return ((j >> lh) << (lh + 1)) | (j & ((1 << lh) - 1))


# -- butterflies of whole-word halves, BLOCK words at a time in vector registers ---------------

def butterfly(E, U, lo, hi, j, m):
    """One level's step of ``fft_evaluate`` on BLOCK words: E[:, lo..] ^= E[:, hi..] * U[:, j..],
    then E[:, hi..] ^= E[:, lo..] (all planes; lo, hi, j public). Compiled: every plane in
    vector registers (as ``gf.mul_block``). Masks and XORs only: E may be secret."""
    P = np.empty((m, BLOCK), dtype=np.int64)
    mul_block(P, np.ascontiguousarray(E[:, hi:hi + BLOCK]), np.ascontiguousarray(U[:, j:j + BLOCK]), 0, m)
    E[:, lo:lo + BLOCK] ^= P
    E[:, hi:hi + BLOCK] ^= E[:, lo:lo + BLOCK]


def butterfly_transposed(E, U, lo, hi, j, m):
    """The transpose of ``butterfly``: E[:, lo..] ^= E[:, hi..], then E[:, hi..] ^= E[:, lo..] *
    U[:, j..]. As there: public positions, E may be secret."""
    E[:, lo:lo + BLOCK] ^= E[:, hi:hi + BLOCK]
    P = np.empty((m, BLOCK), dtype=np.int64)
    mul_block(P, np.ascontiguousarray(E[:, lo:lo + BLOCK]), np.ascontiguousarray(U[:, j:j + BLOCK]), 0, m)
    E[:, hi:hi + BLOCK] ^= P


def _butterfly_planes(g, low, high, u, m, transposed):
    """IR of one butterfly on planes in registers (``gf.PlaneBlocks`` g): (low + high u, high +
    that), or its transpose (low + high, high + that times u)."""
    if transposed:
        low = g.xor(low, high)
        return low, g.xor(high, g.product(low, u, m))
    low = g.xor(low, g.product(high, u, m))
    return low, g.xor(high, low)


def _butterfly_intrinsic(m, transposed):
    @intrinsic
    def step(typingctx, E, U, lo, hi, j):
        if not planes_intrinsic_args(E, U):
            return None

        def codegen(context, builder, signature, args):
            g = PlaneBlocks(context, builder, signature, args)
            lo, hi, j = g.word(2), g.word(3), g.word(4)
            low, high, u = g.load(0, m, lo), g.load(0, m, hi), g.load(1, m, j)
            low, high = _butterfly_planes(g, low, high, u, m, transposed)
            g.store(0, low, lo)
            g.store(0, high, hi)
            return context.get_dummy_value()
        return types.void(E, U, lo, hi, j), codegen
    return step


def _compiled_per_field(step, transposed, make=None):
    """The compiled form of ``step`` (a butterfly's Python twin): the intrinsic of the field size
    (``make(m, transposed)``, by default ``_butterfly_intrinsic``)."""
    make = make or _butterfly_intrinsic
    for_12, for_13 = make(12, transposed), make(13, transposed)

    @overload(step, inline="always")
    def compiled(E, U, lo, hi, j, m):
        def impl(E, U, lo, hi, j, m):
            if m == 12:
                for_12(E, U, lo, hi, j)
            else:
                for_13(E, U, lo, hi, j)
        return impl


_compiled_per_field(butterfly, False)
_compiled_per_field(butterfly_transposed, True)


# -- butterflies of narrow halves (1, 2 or 4 words): 16 words at a time, shuffled in registers --

NARROW = 2 * BLOCK
"""Words that one narrow butterfly covers: BLOCK lower-half and BLOCK upper-half words."""

_HALVES = {hw: ([w for w in range(NARROW) if not w & hw], [w for w in range(NARROW) if w & hw]) for hw in (1, 2, 4)}
"""Positions of the lower- and upper-half words among NARROW consecutive words, for halves of hw words."""


def narrow_butterfly(E, U, w, j, hw, m):
    """``butterfly`` for a level whose halves are hw = 1, 2 or 4 words: on E[:, w..w+NARROW) (w a
    multiple of NARROW), whose BLOCK upper-half words, in order, meet U[:, j..j+BLOCK). Compiled:
    the words are shuffled into halves and back in vector registers. E may be secret."""
    lo_at, hi_at = (np.array(x) + w for x in _HALVES[hw])
    P = np.empty((m, BLOCK), dtype=np.int64)
    mul_block(P, np.ascontiguousarray(E[:, hi_at]), np.ascontiguousarray(U[:, j:j + BLOCK]), 0, m)
    E[:, lo_at] ^= P
    E[:, hi_at] ^= E[:, lo_at]


def narrow_butterfly_transposed(E, U, w, j, hw, m):
    """The transpose of ``narrow_butterfly`` (as ``butterfly_transposed``)."""
    lo_at, hi_at = (np.array(x) + w for x in _HALVES[hw])
    E[:, lo_at] ^= E[:, hi_at]
    P = np.empty((m, BLOCK), dtype=np.int64)
    mul_block(P, np.ascontiguousarray(E[:, lo_at]), np.ascontiguousarray(U[:, j:j + BLOCK]), 0, m)
    E[:, hi_at] ^= P


def _narrow_intrinsic(m, transposed):
    i32 = ir.IntType(32)

    def shuffle(builder, x, y, positions):
        return builder.shuffle_vector(x, y, ir.Constant(ir.VectorType(i32, len(positions)), positions))

    @intrinsic
    def step(typingctx, E, U, w, j, hw):
        if not planes_intrinsic_args(E, U):
            return None

        def codegen(context, builder, signature, args):
            g = PlaneBlocks(context, builder, signature, args)
            w, j, hw = g.word(2), g.word(3), g.word(4)
            second_at = builder.add(w, ir.Constant(ir.IntType(64), BLOCK))
            first, second, u = g.load(0, m, w), g.load(0, m, second_at), g.load(1, m, j)
            # the halves' positions depend on hw (public): one block of shuffles per width, the
            # product once, after them
            cases = {size: builder.append_basic_block(f"halves{size}") for size in (1, 2, 4)}
            joined = builder.append_basic_block("product")
            choose = builder.switch(hw, cases[4])
            for size in (1, 2):
                choose.add_case(ir.Constant(ir.IntType(64), size), cases[size])
            split = {}
            for size, block in cases.items():
                builder.position_at_end(block)
                lo_at, hi_at = _HALVES[size]
                split[size] = ([shuffle(builder, a, b, lo_at) for a, b in zip(first, second)],
                               [shuffle(builder, a, b, hi_at) for a, b in zip(first, second)])
                builder.branch(joined)
            builder.position_at_end(joined)
            low, high = [], []
            for k in range(m):
                for out, half in ((low, 0), (high, 1)):
                    phi = builder.phi(g.lanes)
                    for size, block in cases.items():
                        phi.add_incoming(split[size][half][k], block)
                    out.append(phi)
            low, high = _butterfly_planes(g, low, high, u, m, transposed)
            # back to word order: position p of the 2 BLOCK words takes lane i of low (p = lo_at[i])
            # or of high (p = hi_at[i]); low | high are lanes 0..BLOCK-1 | BLOCK..2 BLOCK-1
            stores = {size: builder.append_basic_block(f"store{size}") for size in (1, 2, 4)}
            done = builder.append_basic_block("done")
            choose = builder.switch(hw, stores[4])
            for size in (1, 2):
                choose.add_case(ir.Constant(ir.IntType(64), size), stores[size])
            for size, block in stores.items():
                builder.position_at_end(block)
                lo_at, hi_at = _HALVES[size]
                source = {p: i for i, p in enumerate(lo_at)} | {p: BLOCK + i for i, p in enumerate(hi_at)}
                order = [source[p] for p in range(NARROW)]
                g.store(0, [shuffle(builder, a, b, order[:BLOCK]) for a, b in zip(low, high)], w)
                g.store(0, [shuffle(builder, a, b, order[BLOCK:]) for a, b in zip(low, high)], second_at)
                builder.branch(done)
            builder.position_at_end(done)
            return context.get_dummy_value()
        return types.void(E, U, w, j, hw), codegen
    return step


_compiled_per_field(narrow_butterfly, False, _narrow_intrinsic)
_compiled_per_field(narrow_butterfly_transposed, True, _narrow_intrinsic)


@njit(cache=JIT_CACHE, inline="always")
def _wide_level(E, U, hw, m, transposed):
    """One level whose halves are hw >= BLOCK whole words, a butterfly per BLOCK words (forward,
    or its transpose; ``transposed`` is public)."""
    lh = _log2(hw)
    for j in range(0, E.shape[1] >> 1, BLOCK):
        lo = _low_word(j, lh)
        if transposed:
            butterfly_transposed(E, U, lo, lo + hw, j, m)
        else:
            butterfly(E, U, lo, lo + hw, j, m)


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside the kernel that calls it
def fft_evaluate(consts, Uw, Ub, m):
    """Combine the block constants (secret; ``fft_coefficients``'s planes, K = 2^Uw.shape[0] of
    them) upward into f(bitrev(x)) for all x < 2^m, bitsliced (m, 2^m / 64). Uw[d] / Ub[d] hold
    the public u values of level d, laid out like the halves they multiply (Uw for halves of
    whole words, Ub for halves inside a word)."""
    D = Uw.shape[0]
    K = 1 << D
    N = 1 << m
    nw = N >> 6
    E = np.empty((m, nw), dtype=np.int64)
    block = N >> D                       # points per bottom block
    # every point of block p takes bit k of constant p in plane k: stored, never a condition
    if block == 64:
        for k in range(m):
            for p in range(K):
                E[k, p] = -((consts[k, p >> 6] >> (p & 63)) & 1)
    elif block > 64:
        for k in range(m):
            for p in range(K):
                bit = -((consts[k, p >> 6] >> (p & 63)) & 1)
                for w in range(p * (block >> 6), (p + 1) * (block >> 6)):
                    E[k, w] = bit
    else:
        E[:] = 0
        for k in range(m):
            for p in range(K):
                bit = -((consts[k, p >> 6] >> (p & 63)) & 1)
                start = p * block
                E[k, start >> 6] |= (((np.int64(1) << block) - 1) << (start & 63)) & bit
    tmp = np.empty((m, nw), dtype=np.int64)
    for d in range(D - 1, -1, -1):
        half = N >> (d + 1)
        if half >= 64 and (half >> 6) >= BLOCK:      # whole-word halves of BLOCK words or more
            _wide_level(E, Uw[d], half >> 6, m, False)
        elif half >= 64:                                 # halves of 1, 2 or 4 words
            for w in range(0, nw, NARROW):
                narrow_butterfly(E, Uw[d], w, w >> 1, half >> 6, m)
        else:
            low = _LOW_MASKS[half]
            for k in range(m):
                for w in range(nw):
                    tmp[k, w] = (E[k, w] >> half) & low
            vec_mul(tmp, tmp, Ub[d], m, _TAPS[m - 12])
            for k in range(m):
                for w in range(nw):
                    e = E[k, w] ^ tmp[k, w]
                    E[k, w] = e ^ ((e & low) << half)
    return E


# positions whose bit log2(half) is clear, for half = 1 .. 32
_LOW_MASKS = np.zeros(64, dtype=np.int64)
for _h, _mask in ((1, 0x5555555555555555), (2, 0x3333333333333333), (4, 0x0F0F0F0F0F0F0F0F),
                  (8, 0x00FF00FF00FF00FF), (16, 0x0000FFFF0000FFFF), (32, 0x00000000FFFFFFFF)):
    _LOW_MASKS[_h] = _mask
_TAPS = (np.array([3, 0], dtype=np.int64), np.array([4, 3, 1, 0], dtype=np.int64))


@lru_cache(maxsize=None)
def fft_constants(m: int, K: int, fpoly: int):
    """(powers, Uw, Ub) for degree below K over GF(2^m): public, computed once. powers[d] is
    level d's scaling of the coefficient side, b_d^i at offset bitrev(i) of every block of K >> d
    positions, as planes of BLOCK words (``fft_coefficients``; K <= 256).

    Writable, as the kernels' own arrays are: numba compiles a kernel once per array type, and a
    read-only constant would make vec_mul compile a second time for it."""
    if not 2 <= K <= min(256, 64 * BLOCK) or K & (K - 1):
        raise ValueError(f"fft_constants: K must be a power of two from 2 to 256, not {K}")
    N = 1 << m
    D = K.bit_length() - 1
    basis = [1 << (m - 1 - i) for i in range(m)]
    powers = np.zeros((D, m, BLOCK), dtype=np.int64)
    Uw = np.zeros((D, m, N >> 7), dtype=np.int64)
    Ub = np.zeros((D, m, N >> 6), dtype=np.int64)
    size = K
    for d in range(D):
        b = basis[-1]
        pw = [1]
        for _ in range(1, size):
            pw.append(gf_mul(pw[-1], b, m, fpoly))
        offsets = np.arange(K) & (size - 1)                       # coefficient bitrev(offset) of its block
        powers[d] = vec_from_scalars(np.array([pw[_bitrev_bits(int(o), D - d)] for o in offsets], dtype=np.int64),
                                     m, BLOCK)
        binv = gf_inv(b, m, fpoly)
        gam = [gf_mul(x, binv, m, fpoly) for x in basis[:-1]]
        half = N >> (d + 1)
        u = np.zeros(half, dtype=np.int64)
        for i, g in enumerate(gam):
            u[1 << i:2 << i] = u[:1 << i] ^ g
        if half >= 64:
            vals = np.tile(u, (N // 2) // half)                  # one copy per block
            Uw[d] = vec_from_scalars(vals, m, N >> 7)
        else:
            vals = np.zeros(N, dtype=np.int64)
            for start in range(0, N, 2 * half):
                vals[start:start + half] = u
            Ub[d] = vec_from_scalars(vals, m, N >> 6)
        basis = [gf_mul(g, g, m, fpoly) ^ g for g in gam]
        size >>= 1
    return powers, Uw, Ub


def fft_size(degree: int) -> int:
    K = 2
    while K < degree + 1:
        K <<= 1
    return K


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside the kernel that calls it
def fft_transposed(E, Uw, Ub, powers, m):
    """The transpose of fft_coefficients followed by fft_evaluate: from values v (bitsliced,
    entry x belonging to the point bitrev(x); overwritten) to the power sums
    sum_x v_x bitrev(x)^j for j < K = 2^powers.shape[0]. Every step of the forward transform is
    undone in reverse order by its transpose. v is secret; all positions are public.
    """
    D = powers.shape[0]
    K = 1 << D
    N = 1 << m
    nw = N >> 6
    tmp = np.empty((m, nw), dtype=np.int64)
    for d in range(D):
        half = N >> (d + 1)
        if half >= 64 and (half >> 6) >= BLOCK:
            _wide_level(E, Uw[d], half >> 6, m, True)
        elif half >= 64:
            for w in range(0, nw, NARROW):
                narrow_butterfly_transposed(E, Uw[d], w, w >> 1, half >> 6, m)
        else:
            low = _LOW_MASKS[half]
            for k in range(m):
                for w in range(nw):
                    e = E[k, w] ^ ((E[k, w] >> half) & low)
                    E[k, w] = e
                    tmp[k, w] = e & low
            vec_mul(tmp, tmp, Ub[d], m, _TAPS[m - 12])
            for k in range(m):
                for w in range(nw):
                    E[k, w] ^= tmp[k, w] << half
    # bottom blocks: constant p (at position p of the coefficient planes) is the sum of block p
    block = N >> D
    C = np.zeros((m, BLOCK), dtype=np.int64)
    if block == 32:
        # two blocks to a word: XOR folds bring each half's parity to its first bit (0 and 32);
        # the 32 words of one word of C gathered in a loop of their own, which vectorises
        for k in range(m):
            for c in range(nw >> 5):
                acc = 0
                for i in range(32):
                    x = E[k, 32 * c + i]
                    x ^= x >> 16
                    x ^= x >> 8
                    x ^= x >> 4
                    x ^= x >> 2
                    x ^= x >> 1
                    acc |= ((x & 1) | ((x >> 31) & 2)) << (2 * i)
                C[k, c] = acc
    else:
        for k in range(m):
            for p in range(K):
                start = p * block
                if block >= 64:
                    acc = 0
                    for w in range(start >> 6, (start + block) >> 6):
                        acc ^= E[k, w]
                else:
                    acc = (E[k, start >> 6] >> (start & 63)) & ((np.int64(1) << block) - 1)
                C[k, p >> 6] |= parity64(acc) << (p & 63)
    # every step of ``fft_coefficients`` transposed, in reverse order; the sum of power j ends at
    # position bitrev(j)
    taps = _TAPS[m - 12]
    for d in range(D - 1, -1, -1):
        for a in range(D - d - 2, -1, -1):
            taylor_pair(C, a, m, True)
        vec_mul(C, C, powers[d], m, taps)
    by_position = vec_to_scalars(C, K)
    sums = np.empty(K, dtype=np.int64)
    for j in range(K):
        sums[j] = by_position[_bitrev_bits(j, D)]
    return sums
