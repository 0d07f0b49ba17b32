"""GF(16) arithmetic kernels (numba), all table-free and branch-free.

Scalars are integers 0..15. Bitsliced vectors are uint64 arrays of 4 * limbs words (see
``pqforge.gf16``). Multiplying a bitsliced vector by x permutes its planes and adds one:
(b0, b1, b2, b3) -> (b3, b0 ^ b3, b1, b2), because x * x^3 = x^4 = x + 1.
"""

import numba as nb
import numpy as np

_INLINE = dict(cache=True, inline="always")
_ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@nb.njit(**_INLINE)
def gf16_mul(a, b):
    """Product of two GF(16) scalars. Constant-time: masks and shifts only; both may be secret."""
    a = np.int64(a)
    b = np.int64(b)
    p = ((-(a & 1)) & b) ^ ((-((a >> 1) & 1)) & (b << 1)) ^ ((-((a >> 2) & 1)) & (b << 2)) \
        ^ ((-((a >> 3) & 1)) & (b << 3))
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
def nonzero_mask(v):
    """All-ones (as uint64) when v != 0, else 0, without a branch. ``v`` may be secret."""
    v = np.uint64(v)
    t = (v >> np.uint64(1)) | (v & np.uint64(1))  # < 2^63 and nonzero iff v is; no overflow below
    return _ONES * ((t + np.uint64(0x7FFFFFFFFFFFFFFF)) >> np.uint64(63))


@nb.njit(**_INLINE)
def bit_mask(s, t):
    """All-ones (as uint64) when bit ``t`` of ``s`` is set, else 0. ``s`` may be secret."""
    return _ONES * np.uint64((np.int64(s) >> t) & 1)


@nb.njit(**_INLINE)
def mul_add_scalar(acc, a, s, limbs):
    """acc ^= s * a for bitsliced vectors ``acc``, ``a`` and a scalar ``s``.

    Constant-time in ``s`` and in the data (masked XORs only); any of them may be secret.
    """
    m0 = bit_mask(s, 0)
    m1 = bit_mask(s, 1)
    m2 = bit_mask(s, 2)
    m3 = bit_mask(s, 3)
    for w in range(limbs):
        b0 = a[w]
        b1 = a[limbs + w]
        b2 = a[2 * limbs + w]
        b3 = a[3 * limbs + w]
        # s*a = s0 a + s1 x a + s2 x^2 a + s3 x^3 a, with x a = (b3, b0^b3, b1, b2) per plane
        acc[w] ^= (m0 & b0) ^ (m1 & b3) ^ (m2 & b2) ^ (m3 & b1)
        acc[limbs + w] ^= (m0 & b1) ^ (m1 & (b0 ^ b3)) ^ (m2 & (b3 ^ b2)) ^ (m3 & (b2 ^ b1))
        acc[2 * limbs + w] ^= (m0 & b2) ^ (m1 & b1) ^ (m2 & (b0 ^ b3)) ^ (m3 & (b3 ^ b2))
        acc[3 * limbs + w] ^= (m0 & b3) ^ (m1 & b2) ^ (m2 & b1) ^ (m3 & (b0 ^ b3))


@nb.njit(cache=True)
def compress_nibble_bits(x):
    """Bits 0, 4, 8, ..., 60 of x gathered into bits 0..15 (shift-and-mask, no tables)."""
    x &= np.uint64(0x1111111111111111)
    x = (x | (x >> np.uint64(3))) & np.uint64(0x0303030303030303)
    x = (x | (x >> np.uint64(6))) & np.uint64(0x000F000F000F000F)
    x = (x | (x >> np.uint64(12))) & np.uint64(0x000000FF000000FF)
    return (x | (x >> np.uint64(24))) & np.uint64(0xFFFF)


@nb.njit(cache=True)
def gather_planes(words, planes):
    """planes[p, i] = bit p of the 16 nibbles of words[i], as 16 contiguous bits.

    The inner loops are straight-line shifts and masks over a flat array, so they vectorise;
    no tables, no branches: safe on secret data.
    """
    for p in range(4):
        shift = np.uint64(p)
        out = planes[p]
        for i in range(words.shape[0]):
            out[i] = compress_nibble_bits(words[i] >> shift)


def bitslice_nibble_rows(raw: np.ndarray, limbs: int) -> np.ndarray:
    """Nibble-packed vectors raw (count, nbytes) uint8 -> bitsliced (count, 4 * limbs) uint64.

    Each vector is zero-padded to 32 * limbs bytes (4 * limbs words of 16 nibbles); bit plane
    p of word k is then exactly the 16-bit chunk k of plane p in the bitsliced layout.
    """
    count, nbytes = raw.shape
    padded = np.zeros((count, 32 * limbs), np.uint8)
    padded[:, :nbytes] = raw
    planes = np.empty((4, count * 4 * limbs), np.uint16)
    gather_planes(padded.view("<u8").reshape(-1), planes)
    per_vector = np.ascontiguousarray(planes.reshape(4, count, 4 * limbs).transpose(1, 0, 2))
    return per_vector.view("<u8").reshape(count, 4 * limbs)
