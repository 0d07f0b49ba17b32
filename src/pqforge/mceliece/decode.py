"""Decapsulation's decoding core: Goppa syndrome (transposed additive FFT), Berlekamp-Massey, root
finding (additive FFT), the re-encryption check and the implicit-rejection select, in one
compiled pass.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .benes import apply_benes
from .fft import fft_coefficients, fft_evaluate, fft_transposed
from .gf import berlekamp_massey, gf_inv, gf_scale, secret_mask, vec_inv, vec_square
from .._compile_cache import JIT_CACHE


@njit(cache=JIT_CACHE)
def _popcount64(x):
    # bit count by fixed folds (x may be secret)
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((x * 0x0101010101010101) >> 56) & 0xFF


@njit(cache=JIT_CACHE)
def _monic_values(low, powers, Uw, Ub, xt, m, fpoly):
    # x^t + sum low[i] x^i at every field element, bitsliced in the FFT's order (low secret)
    E = fft_evaluate(fft_coefficients(low, powers, powers.shape[1], m, fpoly), Uw, Ub, m)
    for k in range(m):
        for x in range(E.shape[1]):
            E[k, x] ^= xt[k, x]
    return E


@njit(cache=JIT_CACHE)
def decap_preimage(c, g, cond, s, m, n, t, fpoly, taps, ev_powers, ev_Uw, ev_Ub, xt, sy_powers, sy_Uw, sy_Ub):
    """The hash input b | v | C of decapsulation: b = 1 and v = e when C decodes to an error
    vector e of weight t with syndrome C, else b = 0 and v = s (implicit rejection).

    Secret: g (Goppa polynomial, t low coefficients), cond (control bits as int64 words), s, and
    everything derived from them; c is public, and so are the FFT constants for evaluating
    polynomials of degree below t (ev_*), x^t at every field element (xt, bitsliced in the FFT's
    order) and the FFT constants for power sums up to 2t - 1 (sy_*). Loop bounds and memory
    indices depend on m, n, t only, and the final choice between e and s is a mask.

    Both polynomials of degree t are evaluated as monic ones: the t low coefficients by the FFT
    (half the size when t is a power of two) plus x^t. g is monic; the locator is made monic by
    its leading coefficient's inverse, which leaves its roots alone.

    Decoding runs in the FFT's order of all 2^m field elements: the received word goes there
    through the inverse Benes network and the error vector comes back through the network, one
    bit plane each, so no m-plane vector is routed. A locator root outside the support would
    be counted in field order but is cut off on the way back, so the weight is taken there.
    """
    N = 1 << m
    nw = N >> 6
    W = (n + 63) >> 6
    nb = n >> 3
    sb = c.shape[0]

    # received word C | 0 in support order, routed to field order
    r = np.zeros((1, nw), dtype=np.int64)
    for i in range(sb):
        r[0, i >> 3] |= np.int64(c[i]) << (8 * (i & 7))
    apply_benes(r, cond, m, True)

    ginv2 = vec_inv(_monic_values(g, ev_powers, ev_Uw, ev_Ub, xt, m, fpoly), m, taps)
    vec_square(ginv2, ginv2, m, taps)              # 1 / g(x)^2 at every field element x

    # syndrome s_j = sum_x r_x x^j / g(x)^2, j < 2t
    w = np.empty((m, nw), dtype=np.int64)
    for k in range(m):
        for x in range(nw):
            w[k, x] = ginv2[k, x] & r[0, x]
    syn = fft_transposed(w, sy_Uw, sy_Ub, sy_powers, m, fpoly)

    loc = berlekamp_massey(syn[:2 * t], t, m, fpoly)
    img = _monic_values(gf_scale(loc[:t], gf_inv(loc[t], m, fpoly), m, fpoly), ev_powers, ev_Uw, ev_Ub, xt, m,
                        fpoly)

    # roots of the locator: the error positions in field order
    e = np.empty((1, nw), dtype=np.int64)
    for x in range(nw):
        nz = 0
        for k in range(m):
            nz |= img[k, x]
        e[0, x] = ~nz
    for k in range(m):
        for x in range(nw):
            w[k, x] = ginv2[k, x] & e[0, x]
    syn2 = fft_transposed(w, sy_Uw, sy_Ub, sy_powers, m, fpoly)

    apply_benes(e, cond, m)                        # back to support order
    weight = 0
    for x in range(W):
        if x == W - 1 and (n & 63):                # public: the tail of the last word
            e[0, x] &= (np.int64(1) << (n & 63)) - 1
        weight += _popcount64(e[0, x])

    diff = weight ^ t
    for j in range(2 * t):
        diff |= syn[j] ^ syn2[j]
    ok = ((diff - 1) >> 63) & 1                    # 1 exactly when diff == 0
    mask = secret_mask(-ok)

    out = np.empty(1 + nb + sb, dtype=np.uint8)
    out[0] = ok
    for i in range(nb):
        eb = (e[0, i >> 3] >> (8 * (i & 7))) & 0xFF
        out[1 + i] = ((np.int64(s[i]) & ~mask) | (eb & mask)) & 0xFF
    for i in range(sb):
        out[1 + nb + i] = c[i]
    return out
