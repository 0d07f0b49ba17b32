"""SHAKE256 as compiled code (numba), for hashing inside GIL-free batch loops.

``symmetric.shake256`` (hashlib, OpenSSL) is the hash everywhere else; this one exists so that a
compiled loop can hash its elements itself instead of returning to Python, where hashing holds
the GIL and the threads of a batch wait for each other. The rotation offsets and round
constants are derived from their definitions in FIPS 202 (the (x, y) -> (y, 2x + 3y) walk and
the degree-8 LFSR); ``pqforge.mayo.cuda.keccak`` uses the same tables. Constant-time: fixed shifts,
XORs and ANDs; only the (public) input and output lengths decide the loop bounds.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from .jit.cache import JIT_CACHE

RATE = 136  # SHAKE256: 1088-bit rate


def _rho_offsets() -> np.ndarray:
    r = np.zeros(25, np.int64)
    x, y = 1, 0
    for t in range(24):
        r[x + 5 * y] = ((t + 1) * (t + 2) // 2) % 64
        x, y = y, (2 * x + 3 * y) % 5
    return r


def _round_constants() -> np.ndarray:
    def rc_bit(t):
        if t % 255 == 0:
            return 1
        reg = 1
        for _ in range(t % 255):
            reg <<= 1
            if reg & 0x100:
                reg ^= 0x171   # x^8 + x^6 + x^5 + x^4 + 1
        return reg & 1
    out = np.zeros(24, np.uint64)
    for i in range(24):
        v = 0
        for j in range(7):
            v |= rc_bit(j + 7 * i) << ((1 << j) - 1)
        out[i] = v
    return out


RHO = _rho_offsets()
RC = _round_constants()
_PI = np.array([y + 5 * ((2 * x + 3 * y) % 5) for y in range(5) for x in range(5)], np.int64)
"""Lane x + 5y moves to lane y + 5(2x + 3y) in the rho-pi step, as _PI[x + 5y]."""
_SHIFT_LEFT = RHO.astype(np.uint64)
_SHIFT_RIGHT = ((64 - RHO) % 64).astype(np.uint64)


# compiled once and called: inlined at shake256_into's three calls, each loop that hashes
# compiled three copies of the 24 rounds (2.2 of the 8.5 s that the batch verification loop took
# to compile); as a call it costs nothing measurable beside a permutation
@nb.njit(nogil=True, cache=JIT_CACHE)
def keccak_f1600(A, B, C):
    """Permute the 25 lanes of A in place (B: 25 lanes, C: 5 lanes of scratch)."""
    for rnd in range(24):
        for x in range(5):
            C[x] = A[x] ^ A[x + 5] ^ A[x + 10] ^ A[x + 15] ^ A[x + 20]
        for x in range(5):
            c1 = C[(x + 1) % 5]
            d = C[(x + 4) % 5] ^ ((c1 << np.uint64(1)) | (c1 >> np.uint64(63)))
            for y in range(5):
                A[x + 5 * y] ^= d
        for i in range(25):   # rho then pi; a rotation by 0 is (v << 0) | (v >> 0) = v
            v = A[i]
            B[_PI[i]] = (v << _SHIFT_LEFT[i]) | (v >> _SHIFT_RIGHT[i])
        for y in range(5):
            for x in range(5):
                A[x + 5 * y] = B[x + 5 * y] ^ (~B[(x + 1) % 5 + 5 * y] & B[(x + 2) % 5 + 5 * y])
        A[0] ^= RC[rnd]


@nb.njit(nogil=True, cache=JIT_CACHE)
def shake256_into(src, out, A, B, C):
    """out[:] = SHAKE256(src) (uint8 arrays; A, B: 25 lanes, C: 5 lanes of uint64 scratch)."""
    A[:] = 0
    pos = 0
    for i in range(src.shape[0]):
        A[pos >> 3] ^= np.uint64(src[i]) << np.uint64(8 * (pos & 7))
        pos += 1
        if pos == RATE:
            keccak_f1600(A, B, C)
            pos = 0
    A[pos >> 3] ^= np.uint64(0x1F) << np.uint64(8 * (pos & 7))
    A[(RATE - 1) >> 3] ^= np.uint64(0x80) << np.uint64(8 * ((RATE - 1) & 7))
    keccak_f1600(A, B, C)
    pos = 0
    for i in range(out.shape[0]):
        if pos == RATE:
            keccak_f1600(A, B, C)
            pos = 0
        out[i] = np.uint8((A[pos >> 3] >> np.uint64(8 * (pos & 7))) & np.uint64(0xFF))
        pos += 1


@nb.njit(nogil=True, cache=JIT_CACHE)
def shake256_rows(data, offsets, out):
    """out[i] = SHAKE256(data[offsets[i]:offsets[i+1]]) for every row of out (for tests and
    whole-batch use)."""
    A, B, C = np.zeros(25, np.uint64), np.zeros(25, np.uint64), np.zeros(5, np.uint64)
    for i in range(out.shape[0]):
        shake256_into(data[offsets[i]:offsets[i + 1]], out[i], A, B, C)
