"""Decapsulation's decoding core: Goppa syndrome (transposed additive FFT routed through the Benes
network), Berlekamp-Massey, root finding (additive FFT), the re-encryption check and the
implicit-rejection select, in one compiled pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .fft import eval_at_support, support_power_sums
from .gf import berlekamp_massey, vec_inv, vec_mul
from .._compile_cache import JIT_CACHE


@njit(cache=JIT_CACHE)
def _popcount64(x):
    # bit count by fixed folds (x may be secret)
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((x * 0x0101010101010101) >> 56) & 0xFF


@njit(cache=JIT_CACHE)
def decap_preimage(c, g, cond, s, m, n, t, fpoly, taps, ev_powers, ev_Uw, ev_Ub, sy_powers, sy_Uw, sy_Ub):
    """The hash input b | v | C of decapsulation: b = 1 and v = e when C decodes to an error
    vector e of weight t with syndrome C, else b = 0 and v = s (implicit rejection).

    Secret: g (Goppa polynomial, t low coefficients), cond (control bits as int64 words), s, and
    everything derived from them; c is public, and so are the FFT constants for evaluating
    polynomials of degree t (ev_*) and for power sums up to 2t - 1 (sy_*). Loop bounds and
    memory indices depend on m, n, t only, and the final choice between e and s is a mask.
    """
    W = (n + 63) >> 6
    nb = n >> 3
    sb = c.shape[0]

    r = np.zeros(W, dtype=np.int64)
    for i in range(sb):
        r[i >> 3] |= np.int64(c[i]) << (8 * (i & 7))

    gfull = np.empty(t + 1, dtype=np.int64)
    gfull[:t] = g
    gfull[t] = 1
    ginv2 = vec_inv(eval_at_support(gfull, cond, ev_powers, ev_Uw, ev_Ub, m, fpoly, n), m, taps)
    vec_mul(ginv2, ginv2, ginv2, m, taps)          # 1 / g(L_i)^2

    # syndrome s_j = sum_i r_i L_i^j / g(L_i)^2, j < 2t
    w = np.empty((m, W), dtype=np.int64)
    for k in range(m):
        for x in range(W):
            w[k, x] = ginv2[k, x] & r[x]
    syn = support_power_sums(w, cond, sy_powers, sy_Uw, sy_Ub, m, fpoly)

    loc = berlekamp_massey(syn[:2 * t], t, m, fpoly)
    img = eval_at_support(loc, cond, ev_powers, ev_Uw, ev_Ub, m, fpoly, n)

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

    for k in range(m):
        for x in range(W):
            w[k, x] = ginv2[k, x] & e[x]
    syn2 = support_power_sums(w, cond, sy_powers, sy_Uw, sy_Ub, m, fpoly)

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
