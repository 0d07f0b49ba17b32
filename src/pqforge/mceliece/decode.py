"""Decapsulation's decoding core: support from the Benes network, Goppa syndrome, Berlekamp-Massey,
root finding, the re-encryption check and the implicit-rejection select, in one compiled pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .benes import support_from_control_bits
from .fft import eval_at_support
from .gf import berlekamp_massey, masked_sums, vec_inv, vec_mul, vec_powers, vec_times_z_table


@njit(cache=True)
def _popcount64(x):
    # bit count by fixed folds (x may be secret)
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((x * 0x0101010101010101) >> 56) & 0xFF


@njit(cache=True)
def decap_preimage(c, g, cond, s, m, n, t, fpoly, taps, base, powers, U):
    """The hash input b | v | C of decapsulation: b = 1 and v = e when C decodes to an error
    vector e of weight t with syndrome C, else b = 0 and v = s (implicit rejection).

    Secret: g (Goppa polynomial, t low coefficients), cond (control bits as int64 words), s, and
    everything derived from them; c is public, and so are base = bitrev_planes(m) and the FFT
    constants (powers, U) = fft_constants(m, K, fpoly). Loop bounds and memory indices depend on
    m, n, t only, and the final choice between e and s is a mask.
    """
    W = (n + 63) >> 6
    nb = n >> 3
    sb = c.shape[0]
    L = support_from_control_bits(cond, m, n, base)

    r = np.zeros(W, dtype=np.int64)
    for i in range(sb):
        r[i >> 3] |= np.int64(c[i]) << (8 * (i & 7))

    gfull = np.empty(t + 1, dtype=np.int64)
    gfull[:t] = g
    gfull[t] = 1
    T = vec_times_z_table(L, m, taps)
    ginv2 = vec_inv(eval_at_support(gfull, cond, powers, U, m, fpoly, n), m, taps)
    vec_mul(ginv2, ginv2, ginv2, m, taps)          # 1 / g(L_i)^2

    # the syndrome map is linear in the received word: keep L^j / g(L)^2 for both uses
    V = vec_powers(ginv2, T, 2 * t)
    syn = masked_sums(V, r)

    loc = berlekamp_massey(syn, t, m, fpoly)
    img = eval_at_support(loc, cond, powers, U, m, fpoly, n)

    e = np.zeros(W, dtype=np.int64)
    weight = 0
    for x in range(W):
        nz = 0
        for k in range(m):
            nz |= img[k, x]
        valid = -1
        if x == W - 1 and (n & 63):                # public: the tail of the last word
            valid = (np.int64(1) << (n & 63)) - 1
        e[x] = ~nz & valid
        weight += _popcount64(e[x])

    syn2 = masked_sums(V, e)

    diff = weight ^ t
    for j in range(2 * t):
        diff |= syn[j] ^ syn2[j]
    ok = ((diff - 1) >> 63) & 1                    # 1 exactly when diff == 0
    mask = -ok

    out = np.empty(1 + nb + sb, dtype=np.uint8)
    out[0] = ok
    for i in range(nb):
        eb = (e[i >> 3] >> (8 * (i & 7))) & 0xFF
        out[1 + i] = ((np.int64(s[i]) & ~mask) | (eb & mask)) & 0xFF
    for i in range(sb):
        out[1 + nb + i] = c[i]
    return out
