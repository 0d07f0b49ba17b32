"""SHAKE256 as compiled code (numba), for hashing inside GIL-free batch loops.

``symmetric.shake256`` (hashlib, OpenSSL) is the hash everywhere else; this one exists so that a
compiled loop can hash its elements itself instead of returning to Python, where hashing holds
the GIL and the threads of a batch wait for each other. The rotation offsets and round
constants are derived from their definitions in FIPS 202 (the (x, y) -> (y, 2x + 3y) walk and
the degree-8 LFSR); ``keccak_f1600`` has the offsets written into its rounds, and
``pqforge.mayo.cuda.keccak`` reads the tables. Constant-time: fixed shifts, XORs and ANDs; only
the (public) input and output lengths decide the loop bounds.
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


@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def _rotl(v, r):
    return (v << np.uint64(r)) | (v >> np.uint64(64 - r))


# the 25 lanes in local variables (aXY: lane x + 5y), the rotations by RHO's offsets written out:
# LLVM keeps the state in registers, where array lanes with a table of offsets cost 2.8x the time
# (770 against 275 ns a permutation, Zen 4); compiled once and called: inlined at shake256_into's
# three calls, each loop that hashes would compile three copies of the 24 rounds
@nb.njit(nogil=True, cache=JIT_CACHE)
def keccak_f1600(A):
    """Permute the 25 lanes of A (uint64, lane x + 5y at A[x + 5y]) in place."""
    (a00, a10, a20, a30, a40, a01, a11, a21, a31, a41, a02, a12, a22, a32, a42,
     a03, a13, a23, a33, a43, a04, a14, a24, a34, a44) = (
        A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9], A[10], A[11], A[12], A[13], A[14],
        A[15], A[16], A[17], A[18], A[19], A[20], A[21], A[22], A[23], A[24])
    for rnd in range(24):
        # theta
        c0 = a00 ^ a01 ^ a02 ^ a03 ^ a04
        c1 = a10 ^ a11 ^ a12 ^ a13 ^ a14
        c2 = a20 ^ a21 ^ a22 ^ a23 ^ a24
        c3 = a30 ^ a31 ^ a32 ^ a33 ^ a34
        c4 = a40 ^ a41 ^ a42 ^ a43 ^ a44
        d0 = c4 ^ _rotl(c1, 1)
        d1 = c0 ^ _rotl(c2, 1)
        d2 = c1 ^ _rotl(c3, 1)
        d3 = c2 ^ _rotl(c4, 1)
        d4 = c3 ^ _rotl(c0, 1)
        # rho and pi: lane (x, y) rotated into (y, 2x + 3y), then chi and iota
        b00 = a00 ^ d0
        b02 = _rotl(a10 ^ d1, 1)
        b04 = _rotl(a20 ^ d2, 62)
        b01 = _rotl(a30 ^ d3, 28)
        b03 = _rotl(a40 ^ d4, 27)
        b13 = _rotl(a01 ^ d0, 36)
        b10 = _rotl(a11 ^ d1, 44)
        b12 = _rotl(a21 ^ d2, 6)
        b14 = _rotl(a31 ^ d3, 55)
        b11 = _rotl(a41 ^ d4, 20)
        b21 = _rotl(a02 ^ d0, 3)
        b23 = _rotl(a12 ^ d1, 10)
        b20 = _rotl(a22 ^ d2, 43)
        b22 = _rotl(a32 ^ d3, 25)
        b24 = _rotl(a42 ^ d4, 39)
        b34 = _rotl(a03 ^ d0, 41)
        b31 = _rotl(a13 ^ d1, 45)
        b33 = _rotl(a23 ^ d2, 15)
        b30 = _rotl(a33 ^ d3, 21)
        b32 = _rotl(a43 ^ d4, 8)
        b42 = _rotl(a04 ^ d0, 18)
        b44 = _rotl(a14 ^ d1, 2)
        b41 = _rotl(a24 ^ d2, 61)
        b43 = _rotl(a34 ^ d3, 56)
        b40 = _rotl(a44 ^ d4, 14)
        a00 = b00 ^ (~b10 & b20)
        a10 = b10 ^ (~b20 & b30)
        a20 = b20 ^ (~b30 & b40)
        a30 = b30 ^ (~b40 & b00)
        a40 = b40 ^ (~b00 & b10)
        a01 = b01 ^ (~b11 & b21)
        a11 = b11 ^ (~b21 & b31)
        a21 = b21 ^ (~b31 & b41)
        a31 = b31 ^ (~b41 & b01)
        a41 = b41 ^ (~b01 & b11)
        a02 = b02 ^ (~b12 & b22)
        a12 = b12 ^ (~b22 & b32)
        a22 = b22 ^ (~b32 & b42)
        a32 = b32 ^ (~b42 & b02)
        a42 = b42 ^ (~b02 & b12)
        a03 = b03 ^ (~b13 & b23)
        a13 = b13 ^ (~b23 & b33)
        a23 = b23 ^ (~b33 & b43)
        a33 = b33 ^ (~b43 & b03)
        a43 = b43 ^ (~b03 & b13)
        a04 = b04 ^ (~b14 & b24)
        a14 = b14 ^ (~b24 & b34)
        a24 = b24 ^ (~b34 & b44)
        a34 = b34 ^ (~b44 & b04)
        a44 = b44 ^ (~b04 & b14)
        a00 ^= RC[rnd]
    (A[0], A[1], A[2], A[3], A[4], A[5], A[6], A[7], A[8], A[9], A[10], A[11], A[12], A[13], A[14],
     A[15], A[16], A[17], A[18], A[19], A[20], A[21], A[22], A[23], A[24]) = (
        a00, a10, a20, a30, a40, a01, a11, a21, a31, a41, a02, a12, a22, a32, a42,
        a03, a13, a23, a33, a43, a04, a14, a24, a34, a44)


@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def _load64(src, at):
    """The little-endian word of src[at:at + 8]."""
    word = np.uint64(0)
    for j in range(8):
        word |= np.uint64(src[at + j]) << np.uint64(8 * j)
    return word


@nb.njit(nogil=True, cache=JIT_CACHE)
def shake256_into(src, out, A):
    """out[:] = SHAKE256(src) (src: uint8 array or bytes; out: uint8 array; A: 25 lanes of uint64
    scratch)."""
    A[:] = 0
    blocks = len(src) // RATE
    for b in range(blocks):          # whole blocks a word at a time
        for w in range(RATE // 8):
            A[w] ^= _load64(src, b * RATE + 8 * w)
        keccak_f1600(A)
    for pos in range(len(src) - blocks * RATE):
        A[pos >> 3] ^= np.uint64(src[blocks * RATE + pos]) << np.uint64(8 * (pos & 7))
    pos = len(src) - blocks * RATE
    A[pos >> 3] ^= np.uint64(0x1F) << np.uint64(8 * (pos & 7))
    A[(RATE - 1) >> 3] ^= np.uint64(0x80) << np.uint64(8 * ((RATE - 1) & 7))
    keccak_f1600(A)
    pos = 0
    for i in range(out.shape[0]):
        if pos == RATE:
            keccak_f1600(A)
            pos = 0
        out[i] = np.uint8((A[pos >> 3] >> np.uint64(8 * (pos & 7))) & np.uint64(0xFF))
        pos += 1


@nb.njit(nogil=True, cache=JIT_CACHE)
def shake256_rows(data, offsets, out):
    """out[i] = SHAKE256(data[offsets[i]:offsets[i+1]]) for every row of out (for tests and
    whole-batch use)."""
    A = np.zeros(25, np.uint64)
    for i in range(out.shape[0]):
        shake256_into(data[offsets[i]:offsets[i + 1]], out[i], A)
