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


# the 25 lanes in local variables (aXY: lane x + 5y) and RHO's offsets written into the
# rotations: LLVM keeps the state in registers, where lanes in an array with a table of offsets
# cost 2.8x the time (770 against 275 ns a permutation, Zen 4); plain statements, no helper
# inlined by numba, which would lengthen every hashing kernel's compile. Compiled once and
# called: inlined at shake256_into's three calls, each loop that hashes would compile three copies
@nb.njit(nogil=True, cache=JIT_CACHE)
def keccak_f1600(A):
    """Permute the 25 lanes of A (uint64, lane x + 5y at A[x + 5y]) in place."""
    a00 = A[0]; a10 = A[1]; a20 = A[2]; a30 = A[3]; a40 = A[4]
    a01 = A[5]; a11 = A[6]; a21 = A[7]; a31 = A[8]; a41 = A[9]
    a02 = A[10]; a12 = A[11]; a22 = A[12]; a32 = A[13]; a42 = A[14]
    a03 = A[15]; a13 = A[16]; a23 = A[17]; a33 = A[18]; a43 = A[19]
    a04 = A[20]; a14 = A[21]; a24 = A[22]; a34 = A[23]; a44 = A[24]
    for rnd in range(24):
        # theta
        c0 = a00 ^ a01 ^ a02 ^ a03 ^ a04
        c1 = a10 ^ a11 ^ a12 ^ a13 ^ a14
        c2 = a20 ^ a21 ^ a22 ^ a23 ^ a24
        c3 = a30 ^ a31 ^ a32 ^ a33 ^ a34
        c4 = a40 ^ a41 ^ a42 ^ a43 ^ a44
        d0 = c4 ^ ((c1 << 1) | (c1 >> 63))
        d1 = c0 ^ ((c2 << 1) | (c2 >> 63))
        d2 = c1 ^ ((c3 << 1) | (c3 >> 63))
        d3 = c2 ^ ((c4 << 1) | (c4 >> 63))
        d4 = c3 ^ ((c0 << 1) | (c0 >> 63))
        a00 ^= d0; a10 ^= d1; a20 ^= d2; a30 ^= d3; a40 ^= d4
        a01 ^= d0; a11 ^= d1; a21 ^= d2; a31 ^= d3; a41 ^= d4
        a02 ^= d0; a12 ^= d1; a22 ^= d2; a32 ^= d3; a42 ^= d4
        a03 ^= d0; a13 ^= d1; a23 ^= d2; a33 ^= d3; a43 ^= d4
        a04 ^= d0; a14 ^= d1; a24 ^= d2; a34 ^= d3; a44 ^= d4
        # rho and pi: lane (x, y) rotated left by its offset into lane (y, 2x + 3y)
        b00 = a00
        b02 = (a10 << 1) | (a10 >> 63)
        b04 = (a20 << 62) | (a20 >> 2)
        b01 = (a30 << 28) | (a30 >> 36)
        b03 = (a40 << 27) | (a40 >> 37)
        b13 = (a01 << 36) | (a01 >> 28)
        b10 = (a11 << 44) | (a11 >> 20)
        b12 = (a21 << 6) | (a21 >> 58)
        b14 = (a31 << 55) | (a31 >> 9)
        b11 = (a41 << 20) | (a41 >> 44)
        b21 = (a02 << 3) | (a02 >> 61)
        b23 = (a12 << 10) | (a12 >> 54)
        b20 = (a22 << 43) | (a22 >> 21)
        b22 = (a32 << 25) | (a32 >> 39)
        b24 = (a42 << 39) | (a42 >> 25)
        b34 = (a03 << 41) | (a03 >> 23)
        b31 = (a13 << 45) | (a13 >> 19)
        b33 = (a23 << 15) | (a23 >> 49)
        b30 = (a33 << 21) | (a33 >> 43)
        b32 = (a43 << 8) | (a43 >> 56)
        b42 = (a04 << 18) | (a04 >> 46)
        b44 = (a14 << 2) | (a14 >> 62)
        b41 = (a24 << 61) | (a24 >> 3)
        b43 = (a34 << 56) | (a34 >> 8)
        b40 = (a44 << 14) | (a44 >> 50)
        # chi and iota
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
    A[0] = a00; A[1] = a10; A[2] = a20; A[3] = a30; A[4] = a40
    A[5] = a01; A[6] = a11; A[7] = a21; A[8] = a31; A[9] = a41
    A[10] = a02; A[11] = a12; A[12] = a22; A[13] = a32; A[14] = a42
    A[15] = a03; A[16] = a13; A[17] = a23; A[18] = a33; A[19] = a43
    A[20] = a04; A[21] = a14; A[22] = a24; A[23] = a34; A[24] = a44


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
