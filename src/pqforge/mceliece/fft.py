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

from .gf import (BLOCK, PlaneBlocks, bit_mask, gf_inv, gf_mul, mul_block, parity64,
                 planes_intrinsic_args, vec_from_scalars, vec_mul)
from ..jit.cache import JIT_CACHE


@njit(cache=JIT_CACHE)
def _mul_elementwise(x, masks, m, fpoly, scratch):
    """x <- [x_i * y_i] in place, for x secret (below 2^m) and public y given as ``masks`` (m,
    len(x) / 2): bit b's masks of y, two elements to a word (y_2j in the low 32 bits, y_2j+1 in
    the high ones). The products are formed two to a word too (a carry-less product has under 32
    bits), with x's pairs, in ``scratch`` (two rows of len(x) / 2 words: no allocation, the FFTs
    call this once per level), and reduced by two folds through the field polynomial's low
    terms (at most four, public)."""
    LO = 0xFFFFFFFF
    keep = ((1 << m) - 1) * 0x100000001
    pairs = masks.shape[1]
    x2, acc = scratch[0], scratch[1]
    for i in range(pairs):
        x2[i] = x[2 * i] | (x[2 * i + 1] << 32)
        acc[i] = 0
    for b in range(m):
        for i in range(pairs):
            acc[i] ^= (x2[i] << b) & masks[b, i]
    t0 = t1 = t2 = t3 = 0
    m0 = m1 = m2 = m3 = 0
    n_taps = 0
    for j in range(m):
        if (fpoly >> j) & 1:                     # public
            if n_taps == 0:
                t0, m0 = j, -1
            elif n_taps == 1:
                t1, m1 = j, -1
            elif n_taps == 2:
                t2, m2 = j, -1
            else:
                t3, m3 = j, -1
            n_taps += 1
    for _ in range(2):
        for i in range(pairs):
            h = (acc[i] & ~keep) >> m
            acc[i] = ((acc[i] & keep) ^ ((h << t0) & m0) ^ ((h << t1) & m1) ^ ((h << t2) & m2)
                      ^ ((h << t3) & m3))
    for i in range(pairs):
        x[2 * i] = acc[i] & LO
        x[2 * i + 1] = (acc[i] >> 32) & LO


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside the kernel that calls it
def fft_coefficients(f, powers, K, m, fpoly):
    """The constants left after log2 K levels of scaling and Taylor expansion of f (secret):
    entry p is the polynomial whose evaluations fill block p of the output. powers[d] holds the
    public scaling powers b_d^i of level d, tiled over the blocks, as ``_mul_elementwise``'s bit
    masks. XORs at public positions only.
    """
    c = np.zeros(K, dtype=np.int64)
    for i in range(f.shape[0]):
        c[i] = f[i]
    nxt = np.empty(K, dtype=np.int64)
    scratch = np.empty((2, K >> 1), dtype=np.int64)
    size = K
    d = 0
    while size > 1:
        _mul_elementwise(c, powers[d], m, fpoly, scratch)
        # Taylor expansion at x^2 + x of every block of length size, in place: dividing by
        # (x^2 + x)^(s/4) = x^(s/2) + x^(s/4) at every scale s = size, size/2, ..., 4
        s = size
        while s >= 4:
            h = s >> 1
            q = s >> 2
            for lo in range(0, K, s):
                for i in range(lo + s - 1, lo + h - 1, -1):
                    c[i - q] ^= c[i]
            s >>= 1
        # even coefficients form g0 (child 2p), odd ones g1 (child 2p + 1)
        half = size >> 1
        for lo in range(0, K, size):
            for i in range(half):
                nxt[lo + i] = c[lo + 2 * i]
                nxt[lo + half + i] = c[lo + 2 * i + 1]
        c, nxt = nxt, c
        size = half
        d += 1
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
    """Combine the block constants (secret) upward into f(bitrev(x)) for all x < 2^m, bitsliced
    (m, 2^m / 64). Uw[d] / Ub[d] hold the public u values of level d, laid out like the halves
    they multiply (Uw for halves of whole words, Ub for halves inside a word)."""
    K = consts.shape[0]
    N = 1 << m
    nw = N >> 6
    D = 0
    while (1 << D) < K:
        D += 1
    E = np.zeros((m, nw), dtype=np.int64)
    block = N >> D                       # points per bottom block
    for p in range(K):
        for k in range(m):
            bit = bit_mask(consts[p], k)
            start = p * block
            if block >= 64:
                for w in range(start >> 6, (start + block) >> 6):
                    E[k, w] = bit
            else:
                run = ((np.int64(1) << block) - 1) << (start & 63)
                E[k, start >> 6] |= run & bit
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
# the first bit of every block-bit lane of a word, for block = 16 and 32
_LANE_STARTS = np.zeros(64, dtype=np.int64)
_LANE_STARTS[16] = 0x0001000100010001
_LANE_STARTS[32] = 0x0000000100000001


@lru_cache(maxsize=None)
def fft_constants(m: int, K: int, fpoly: int):
    """(powers, Uw, Ub) for degree below K over GF(2^m): public, computed once (powers as the bit
    masks ``_mul_elementwise`` takes).

    Writable, as the kernels' own arrays are: numba compiles a kernel once per array type, and a
    read-only constant would make vec_mul compile a second time for it."""
    N = 1 << m
    D = K.bit_length() - 1
    basis = [1 << (m - 1 - i) for i in range(m)]
    powers = np.zeros((D, m, K // 2), dtype=np.int64)
    Uw = np.zeros((D, m, N >> 7), dtype=np.int64)
    Ub = np.zeros((D, m, N >> 6), dtype=np.int64)
    size = K
    for d in range(D):
        b = basis[-1]
        pw = [1]
        for _ in range(1, size):
            pw.append(gf_mul(pw[-1], b, m, fpoly))
        tiled = np.tile(np.array(pw, dtype=np.int64), K // size)
        for bit in range(m):                                     # as _mul_elementwise's masks
            bits = (tiled >> bit) & 1
            powers[d, bit] = (-bits[0::2] & 0xFFFFFFFF) | (-bits[1::2] << 32)
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
def fft_transposed(E, Uw, Ub, powers, m, fpoly):
    """The transpose of fft_coefficients followed by fft_evaluate: from values v (bitsliced,
    entry x belonging to the point bitrev(x); overwritten) to the power sums
    sum_x v_x bitrev(x)^j for j < K = 2 powers.shape[2]. Every step of the forward transform is
    undone in reverse order by its transpose. v is secret; all positions are public.
    """
    K = 2 * powers.shape[2]
    N = 1 << m
    nw = N >> 6
    D = 0
    while (1 << D) < K:
        D += 1
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
    # bottom blocks: each constant is the sum of its block
    block = N >> D
    c = np.zeros(K, dtype=np.int64)
    if m <= block < 64:
        # every block of a word at once: XOR folds bring each block-bit lane's parity to the
        # lane's first bit (block = 16 or 32), plane k's at bit k of the lane (m <= block: no overlap)
        fold16 = -1 if block == 32 else 0
        starts = _LANE_STARTS[block]
        y = np.zeros(nw, dtype=np.int64)
        for k in range(m):
            for w in range(nw):
                x = E[k, w]
                x ^= (x >> 16) & fold16
                x ^= x >> 8
                x ^= x >> 4
                x ^= x >> 2
                x ^= x >> 1
                y[w] |= (x & starts) << k
        per = 64 // block
        for p in range(K):
            c[p] = (y[p // per] >> (block * (p % per))) & ((1 << m) - 1)
    else:
        for p in range(K):
            start = p * block
            v = 0
            for k in range(m):
                if block >= 64:
                    acc = 0
                    for w in range(start >> 6, (start + block) >> 6):
                        acc ^= E[k, w]
                else:
                    acc = (E[k, start >> 6] >> (start & 63)) & ((np.int64(1) << block) - 1)
                v |= parity64(acc) << k
            c[p] = v
    nxt = np.empty(K, dtype=np.int64)
    scratch = np.empty((2, K >> 1), dtype=np.int64)
    for d in range(D - 1, -1, -1):
        size = K >> d
        half = size >> 1
        for lo in range(0, K, size):
            for i in range(half):
                nxt[lo + 2 * i] = c[lo + i]
                nxt[lo + 2 * i + 1] = c[lo + half + i]
        c, nxt = nxt, c
        s = 4
        while s <= size:
            h = s >> 1
            q = s >> 2
            for lo in range(0, K, s):
                for i in range(lo + h, lo + s):
                    c[i] ^= c[i - q]
            s <<= 1
        _mul_elementwise(c, powers[d], m, fpoly, scratch)
    return c
