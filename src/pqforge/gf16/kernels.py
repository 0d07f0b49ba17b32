"""GF(16) arithmetic kernels (numba), all table-free and branch-free.

Scalars are integers 0..15. Bitsliced vectors are uint64 arrays of 4 * limbs words (see
``pqforge.gf16``). Multiplying a bitsliced vector by x permutes its planes and adds one:
(b0, b1, b2, b3) -> (b3, b0 ^ b3, b1, b2), because x * x^3 = x^4 = x + 1.

Masks derived from secret bits pass through ``value_barrier`` (``pqforge._barrier``, as uint64).
"""

import numba as nb
import numpy as np
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic, overload

from .._barrier import opaque
from ..jit.cache import JIT_CACHE

_INLINE = dict(cache=JIT_CACHE, nogil=True, inline="always")
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


def value_barrier(x):
    """``x`` unchanged, as a uint64 the compiler knows nothing about (identity in Python)."""
    return np.uint64(x)


@overload(value_barrier, inline="always")
def _value_barrier_compiled(x):
    def impl(x):
        return opaque(np.uint64(x))
    return impl


@intrinsic
def _xor4_at(typingctx, dst, d, src, s):
    """dst[d:d+4] ^= src[s:s+4] on 1-D contiguous uint64 arrays, as one 256-bit load, XOR and
    store (numba emits four scalar read-modify-writes otherwise). No bounds check."""
    for arr in (dst, src):
        if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C"
                and arr.dtype == types.uint64):
            return None
    sig = types.void(dst, d, src, s)

    def codegen(context, builder, signature, args):
        vector = ir.VectorType(ir.IntType(64), 4).as_pointer()
        ptrs = []
        for arr_type, arr, at, at_type in ((dst, args[0], args[1], signature.args[1]),
                                           (src, args[2], args[3], signature.args[3])):
            data = context.make_array(arr_type)(context, builder, arr).data
            index = context.cast(builder, at, at_type, types.uint64)
            ptrs.append(builder.bitcast(builder.gep(data, [index]), vector))
        a = builder.load(ptrs[0])
        b = builder.load(ptrs[1])
        a.align = b.align = 8
        builder.store(builder.xor(a, b), ptrs[0]).align = 8
        return context.get_dummy_value()
    return sig, codegen


def xor_block(dst, d, src, s, limbs):
    """dst[d : d + W] ^= src[s : s + W] for one m-vector of W = 4 * len(limbs) words (bitsliced,
    or its encoding in a W-word slot: XOR adds either way).

    ``limbs`` is a tuple of len(limbs) zeros: its length is part of the compiled type, so a
    kernel taking it is compiled once per vector size with constant loop bounds, and the
    block becomes len(limbs) 256-bit operations. Compiled, the indices are not bounds-checked:
    callers derive them from public sizes and from elements known to be below 16.
    """
    n = 4 * len(limbs)
    dst[d:d + n] ^= src[s:s + n]


@overload(xor_block, inline="always")
def _xor_block_compiled(dst, d, src, s, limbs):
    if not isinstance(limbs, types.UniTuple):
        return None

    def impl(dst, d, src, s, limbs):
        for q in range(len(limbs)):
            _xor4_at(dst, np.uint64(d) + np.uint64(4 * q), src, np.uint64(s) + np.uint64(4 * q))
    return impl


@nb.njit(cache=JIT_CACHE, nogil=True)
def compress_nibble_bits(x):
    """Bits 0, 4, 8, ..., 60 of x gathered into bits 0..15 (shift-and-mask, no tables)."""
    x &= np.uint64(0x1111111111111111)
    x = (x | (x >> np.uint64(3))) & np.uint64(0x0303030303030303)
    x = (x | (x >> np.uint64(6))) & np.uint64(0x000F000F000F000F)
    x = (x | (x >> np.uint64(12))) & np.uint64(0x000000FF000000FF)
    return (x | (x >> np.uint64(24))) & np.uint64(0xFFFF)


@nb.njit(**_INLINE)
def gf16_mul(a, b):
    """Product of two GF(16) scalars; both may be secret.

    The carry-less product comes from one integer multiplication: with the bits of a and b
    spread four apart, every partial product lands in its own 4-bit slot (at most 4 terms per
    slot, so no carry crosses a slot) and bit 0 of slot k is the coefficient of x^k. No masks,
    no branches, nothing a compiler can turn into a conditional.
    """
    sa = np.uint64(a) & np.uint64(1) | (np.uint64(a) & np.uint64(2)) << np.uint64(3) \
        | (np.uint64(a) & np.uint64(4)) << np.uint64(6) | (np.uint64(a) & np.uint64(8)) << np.uint64(9)
    sb = np.uint64(b) & np.uint64(1) | (np.uint64(b) & np.uint64(2)) << np.uint64(3) \
        | (np.uint64(b) & np.uint64(4)) << np.uint64(6) | (np.uint64(b) & np.uint64(8)) << np.uint64(9)
    p = np.int64(compress_nibble_bits(sa * sb))          # x^0 .. x^6
    top = p & 0x70
    return (p ^ (top >> 4) ^ (top >> 3)) & 0xF


@nb.njit(**_INLINE)
def gf16_inv(a):
    """a^14 = a^-1 (and 0 -> 0). Constant-time; ``a`` may be secret."""
    a2 = gf16_mul(a, a)
    a4 = gf16_mul(a2, a2)
    a8 = gf16_mul(a4, a4)
    return gf16_mul(gf16_mul(a2, a4), a8)


@nb.njit(**_INLINE)
def nonzero_bit(v):
    """1 (as uint64) when v != 0, else 0: arithmetic only, so loops over it still vectorise.
    ``v`` may be secret."""
    v = np.uint64(v)
    t = (v >> np.uint64(1)) | (v & np.uint64(1))  # < 2^63 and nonzero iff v is; no overflow below
    return (t + np.uint64(0x7FFFFFFFFFFFFFFF)) >> np.uint64(63)


@nb.njit(**_INLINE)
def nonzero_mask(v):
    """All-ones (as uint64) when v != 0, else 0, without a branch. ``v`` may be secret."""
    return value_barrier(_ONES * nonzero_bit(v))


@nb.njit(**_INLINE)
def bit_mask(s, t):
    """All-ones (as uint64) when bit ``t`` of ``s`` is set, else 0. ``s`` may be secret."""
    return value_barrier(_ONES * np.uint64((np.int64(s) >> t) & 1))


@nb.njit(**_INLINE)
def times_x(a):
    """x * a for elements a (0..15, any integer type, a scalar or an array's element): shift up,
    fold bit 4 back as x + 1. Shifts and masks only, so a may be secret."""
    return ((a << 1) & 15) ^ (((a >> 3) & 1) * 3)


@nb.njit(**_INLINE)
def nibbles_times_x(w):
    """x times each of the nibble-packed elements of a uint64 word (up to 16): every nibble shifted
    up one bit, its top bit fed back into bits 0 and 1 (x^4 = x + 1). Shifts and masks only, so w
    may be secret."""
    top = (w >> np.uint64(3)) & np.uint64(0x1111111111111111)
    return ((w << np.uint64(1)) & np.uint64(0xEEEEEEEEEEEEEEEE)) ^ top ^ (top << np.uint64(1))


@nb.njit(**_INLINE)
def planes_times_x(b0, b1, b2, b3):
    """x times a bitsliced limb given as its four plane words: (b3, b0 ^ b3, b1, b2), because
    x * x^3 = x^4 = x + 1. Shifts nothing, so secret-safe."""
    return b3, b0 ^ b3, b1, b2


@nb.njit(**_INLINE)
def mul_add_scalar(acc, a, s, limbs):
    """acc ^= s * a for bitsliced vectors ``acc``, ``a`` and a scalar ``s``.

    Constant-time in ``s`` and in the data (masked XORs only); any of them may be secret.
    """
    mul_add_scalar_from(acc, a, s, limbs, 0)


@nb.njit(**_INLINE)
def mul_add_scalar_from(acc, a, s, limbs, first):
    """acc ^= s * a on limbs first .. limbs-1 only (callers know the lower limbs of ``a`` are
    zero; ``first`` is public). Constant-time in ``s`` and the data."""
    m0 = bit_mask(s, 0)
    m1 = bit_mask(s, 1)
    m2 = bit_mask(s, 2)
    m3 = bit_mask(s, 3)
    for w in range(first, limbs):
        b0 = a[w]
        b1 = a[limbs + w]
        b2 = a[2 * limbs + w]
        b3 = a[3 * limbs + w]
        # s*a = s0 a + s1 x a + s2 x^2 a + s3 x^3 a, with x a = (b3, b0^b3, b1, b2) per plane
        acc[w] ^= (m0 & b0) ^ (m1 & b3) ^ (m2 & b2) ^ (m3 & b1)
        acc[limbs + w] ^= (m0 & b1) ^ (m1 & (b0 ^ b3)) ^ (m2 & (b3 ^ b2)) ^ (m3 & (b2 ^ b1))
        acc[2 * limbs + w] ^= (m0 & b2) ^ (m1 & b1) ^ (m2 & (b0 ^ b3)) ^ (m3 & (b3 ^ b2))
        acc[3 * limbs + w] ^= (m0 & b3) ^ (m1 & b2) ^ (m2 & b1) ^ (m3 & (b0 ^ b3))


@nb.njit(cache=JIT_CACHE, nogil=True)
def bitslice_stream(words, length, out):
    """A stream of nibble-packed vectors -> bitsliced words.

    words: the stream as little-endian uint64 words (16 elements each, zero-padded, with at
    least one spare word at the end); vector i is stream elements i*length .. (i+1)*length-1.
    First every bit plane of the whole stream is gathered into a bit string (a flat,
    vectorised loop), then each vector's 64-bit limbs are cut out of those bit strings at
    public offsets. Shifts and masks only: safe on secret data.
    """
    count = out.shape[0]
    limbs = out.shape[1] // 4
    nq = words.shape[0] // 4                         # 64-bit words of each plane's bit string
    planes = np.empty((4, nq + 1), np.uint64)
    for p in range(4):
        shift = np.uint64(p)
        dst = planes[p]
        for k in range(nq):
            dst[k] = compress_nibble_bits(words[4 * k] >> shift) \
                | (compress_nibble_bits(words[4 * k + 1] >> shift) << np.uint64(16)) \
                | (compress_nibble_bits(words[4 * k + 2] >> shift) << np.uint64(32)) \
                | (compress_nibble_bits(words[4 * k + 3] >> shift) << np.uint64(48))
        dst[nq] = 0
    one = np.uint64(1)
    for i in range(count):
        for l in range(limbs):
            start = i * length + 64 * l
            q = start >> 6
            sh = np.uint64(start & 63)
            keep = min(64, length - 64 * l)
            mask = ~np.uint64(0) if keep == 64 else (one << np.uint64(keep)) - one
            for p in range(4):
                lo = planes[p, q] >> sh
                hi = (planes[p, q + 1] << one) << (np.uint64(63) - sh)   # no shift by 64 when sh = 0
                out[i, p * limbs + l] = (lo | hi) & mask


def stream_words(nbytes: int) -> int:
    """Length of the zero-padded uint64 buffer that ``bitslice_stream`` reads for a stream of
    ``nbytes`` bytes: whole 4-word groups plus a spare group."""
    return (nbytes + 31) // 32 * 4 + 4


def bitslice_nibble_rows(data, count: int, nbytes: int, limbs: int) -> np.ndarray:
    """``count`` nibble-packed vectors of ``nbytes`` bytes each (bytes-like, 2 * nbytes elements
    per vector) -> (count, 4 * limbs) uint64."""
    total = count * nbytes
    words = np.zeros(stream_words(total), np.uint64)
    words.view(np.uint8)[:total] = np.frombuffer(data, np.uint8, total)
    out = np.empty((count, 4 * limbs), np.uint64)
    bitslice_stream(words, 2 * nbytes, out)
    return out
