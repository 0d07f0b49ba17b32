"""AES-128 in counter mode on the device, bitsliced across 64 counter blocks per thread.

A thread holds 64 consecutive counter blocks as 128 uint64 words: word ``8 * i + b`` carries
bit ``b`` of byte ``i`` of every block (block ``base + lane`` in bit ``lane``); 64-bit words because the
simulator's cost is per operation and a GPU does the same work per block either way. SubBytes is
computed, not looked up: the S-box is inversion in GF(2^8) = GF(2)[x]/(x^8+x^4+x^3+x+1)
(as x^254, four bitsliced multiplications and seven squarings, squaring being linear) followed
by the affine map. There are no tables at all, so nothing is indexed by data; in MAYO the AES
key (seed_pk) is public anyway. The key schedule runs on the device with the same S-box,
its bytes broadcast to all lanes.

The counter block of block j is the 128-bit big-endian integer j (an all-zero IV), as in the
specification's AES-128-CTR.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, uint64

ONES = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW_LANE_PATTERNS = np.array([0xAAAAAAAAAAAAAAAA, 0xCCCCCCCCCCCCCCCC, 0xF0F0F0F0F0F0F0F0, 0xFF00FF00FF00FF00,
                               0xFFFF0000FFFF0000, 0xFFFFFFFF00000000], np.uint64)
_RCON = np.array([0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x1B, 0x36], np.uint8)


@cuda.jit(device=True)
def _gf_mul(a, ao, b, bo, out, oo, c):
    """out[oo:oo+8] = a[ao:ao+8] * b[bo:bo+8] in bitsliced GF(2^8); c: 15 words of scratch."""
    for t in range(15):
        c[t] = uint64(0)
    for i in range(8):
        ai = a[ao + i]
        for j in range(8):
            c[i + j] ^= ai & b[bo + j]
    for t in range(14, 7, -1):      # x^8 = x^4 + x^3 + x + 1
        ct = c[t]
        c[t - 4] ^= ct
        c[t - 5] ^= ct
        c[t - 7] ^= ct
        c[t - 8] ^= ct
    for i in range(8):
        out[oo + i] = c[i]


@cuda.jit(device=True)
def _gf_sq(a, ao, out, oo):
    """out = a^2 (a linear map of the bits; out and a must not overlap)."""
    a0 = a[ao]
    a1 = a[ao + 1]
    a2 = a[ao + 2]
    a3 = a[ao + 3]
    a4 = a[ao + 4]
    a5 = a[ao + 5]
    a6 = a[ao + 6]
    a7 = a[ao + 7]
    out[oo] = a0 ^ a4 ^ a6
    out[oo + 1] = a4 ^ a6 ^ a7
    out[oo + 2] = a1 ^ a5
    out[oo + 3] = a4 ^ a5 ^ a6 ^ a7
    out[oo + 4] = a2 ^ a4 ^ a7
    out[oo + 5] = a5 ^ a6
    out[oo + 6] = a3 ^ a5
    out[oo + 7] = a6 ^ a7


@cuda.jit(device=True)
def sbox(st, so, tmp, c):
    """st[so:so+8] = S(st[so:so+8]) for all 64 lanes. tmp: 48 words, c: 15 words of scratch."""
    # tmp slots (8 words each): 0 x2, 1 x3, 2 scratch, 3 x12, 4 x15, 5 scratch
    _gf_sq(st, so, tmp, 0)                  # x^2
    _gf_mul(tmp, 0, st, so, tmp, 8, c)      # x^3
    _gf_sq(tmp, 8, tmp, 16)                 # x^6
    _gf_sq(tmp, 16, tmp, 24)                # x^12
    _gf_mul(tmp, 24, tmp, 8, tmp, 32, c)    # x^15
    _gf_sq(tmp, 32, tmp, 40)                # x^30
    _gf_sq(tmp, 40, tmp, 16)                # x^60
    _gf_sq(tmp, 16, tmp, 40)                # x^120
    _gf_sq(tmp, 40, tmp, 16)                # x^240
    _gf_mul(tmp, 16, tmp, 24, tmp, 40, c)   # x^252
    _gf_mul(tmp, 40, tmp, 0, tmp, 16, c)    # x^254 = x^-1 (0 -> 0)
    # affine map: b_i = a_i + a_{i+4} + a_{i+5} + a_{i+6} + a_{i+7} + bit i of 0x63
    for i in range(8):
        v = tmp[16 + i] ^ tmp[16 + (i + 4) % 8] ^ tmp[16 + (i + 5) % 8] ^ tmp[16 + (i + 6) % 8] \
            ^ tmp[16 + (i + 7) % 8]
        if (0x63 >> i) & 1:                 # a public constant, not data
            v = ~v
        st[so + i] = v


@cuda.jit(device=True)
def sbox_byte(x, st, tmp, c):
    """S(x) for one byte, computed by broadcasting it to every lane of the bitsliced S-box."""
    for b in range(8):
        st[b] = ONES * uint64((x >> b) & 1)
    sbox(st, 0, tmp, c)
    out = uint64(0)
    for b in range(8):
        out |= (st[b] & uint64(1)) << uint64(b)
    return out


@cuda.jit
def key_schedule_kernel(keys, rcon, round_keys):
    """round_keys[q] (11, 16) from keys[q] (16 bytes), one thread per key. Keys are public here."""
    q = cuda.grid(1)
    if q >= keys.shape[0]:
        return
    st = cuda.local.array(8, uint64)
    tmp = cuda.local.array(48, uint64)
    c = cuda.local.array(15, uint64)
    for i in range(16):
        round_keys[q, 0, i] = keys[q, i]
    for r in range(1, 11):
        t0 = sbox_byte(round_keys[q, r - 1, 13], st, tmp, c) ^ uint64(rcon[r - 1])
        t1 = sbox_byte(round_keys[q, r - 1, 14], st, tmp, c)
        t2 = sbox_byte(round_keys[q, r - 1, 15], st, tmp, c)
        t3 = sbox_byte(round_keys[q, r - 1, 12], st, tmp, c)
        round_keys[q, r, 0] = round_keys[q, r - 1, 0] ^ t0
        round_keys[q, r, 1] = round_keys[q, r - 1, 1] ^ t1
        round_keys[q, r, 2] = round_keys[q, r - 1, 2] ^ t2
        round_keys[q, r, 3] = round_keys[q, r - 1, 3] ^ t3
        for i in range(4, 16):
            round_keys[q, r, i] = round_keys[q, r - 1, i] ^ round_keys[q, r, i - 4]


@cuda.jit(device=True)
def _add_round_key(st, round_keys, q, r):
    for i in range(16):
        kb = round_keys[q, r, i]
        for b in range(8):
            st[8 * i + b] ^= ONES * uint64((kb >> b) & 1)


@cuda.jit(device=True)
def encrypt_counters(round_keys, q, base, patterns, st, nx, tmp, c):
    """st = AES(round_keys[q], counter blocks base .. base+63), bitsliced; base % 64 == 0."""
    for i in range(128):
        st[i] = uint64(0)
    # block j = base + lane, big-endian: byte 15 - s holds bits 8s .. 8s+7 of j
    for s in range(4):
        for b in range(8):
            bit = 8 * s + b
            if bit < 6:
                w = patterns[bit]
            else:
                w = ONES * uint64((base >> bit) & 1)
            st[8 * (15 - s) + b] = w
    _add_round_key(st, round_keys, q, 0)
    for r in range(1, 11):
        for i in range(16):
            sbox(st, 8 * i, tmp, c)
        # ShiftRows (byte 4 col + row <- byte 4 ((col + row) % 4) + row) into nx
        for col in range(4):
            for row in range(4):
                src = 8 * (4 * ((col + row) % 4) + row)
                dst = 8 * (4 * col + row)
                for b in range(8):
                    nx[dst + b] = st[src + b]
        if r < 10:
            # MixColumns: out_row = 2 a_row + 3 a_{row+1} + a_{row+2} + a_{row+3}
            for col in range(4):
                for row in range(4):
                    a0 = 8 * (4 * col + row)
                    a1 = 8 * (4 * col + (row + 1) % 4)
                    a2 = 8 * (4 * col + (row + 2) % 4)
                    a3 = 8 * (4 * col + (row + 3) % 4)
                    # xtime(a0 ^ a1): bits shift up, x^8 = x^4 + x^3 + x + 1
                    hi = nx[a0 + 7] ^ nx[a1 + 7]
                    for b in range(8):
                        d = nx[a0 + b - 1] ^ nx[a1 + b - 1] if b > 0 else uint64(0)
                        if b == 0 or b == 1 or b == 3 or b == 4:
                            d ^= hi
                        st[a0 + b] = d ^ nx[a1 + b] ^ nx[a2 + b] ^ nx[a3 + b]
        else:
            for i in range(128):
                st[i] = nx[i]
        _add_round_key(st, round_keys, q, r)


@cuda.jit
def ctr_kernel(round_keys, patterns, nbytes, out):
    """out[q, :nbytes] = AES-128-CTR keystream of key q; one thread per (key, 64 blocks)."""
    g = cuda.grid(1)
    groups = (nbytes + 1023) // 1024
    q = g // groups
    if q >= round_keys.shape[0]:
        return
    base = (g % groups) * 64
    st = cuda.local.array(128, uint64)
    nx = cuda.local.array(128, uint64)
    tmp = cuda.local.array(48, uint64)
    c = cuda.local.array(15, uint64)
    encrypt_counters(round_keys, q, base, patterns, st, nx, tmp, c)
    for lane in range(64):
        start = (base + lane) * 16
        for i in range(16):
            pos = start + i
            if pos < nbytes:
                v = uint64(0)
                for b in range(8):
                    v |= ((st[8 * i + b] >> uint64(lane)) & uint64(1)) << uint64(b)
                out[q, pos] = v


def keystreams(keys: np.ndarray, nbytes: int, threads_per_block: int = 128):
    """Device array (K, nbytes) of AES-128-CTR keystreams for the 16-byte keys (K, 16) (host or device)."""
    keys_d = cuda.to_device(np.ascontiguousarray(keys, np.uint8)) if isinstance(keys, np.ndarray) else keys
    K = keys_d.shape[0]
    rk = cuda.device_array((K, 11, 16), np.uint8)
    key_schedule_kernel[(K + 31) // 32, 32](keys_d, cuda.to_device(_RCON), rk)
    out = cuda.device_array((K, nbytes), np.uint8)
    total = K * ((nbytes + 1023) // 1024)
    tpb = min(threads_per_block, max(1, total))
    ctr_kernel[(total + tpb - 1) // tpb, tpb](rk, cuda.to_device(_LOW_LANE_PATTERNS), nbytes, out)
    return out
