"""Decapsulation's decoding core: Goppa syndrome (transposed additive FFT), Berlekamp-Massey, root
finding (additive FFT), the re-encryption check and the implicit-rejection select, in one
compiled pass. Its five large steps are units (``pqforge.jit.units``), compiled on their own and
side by side on a first use, and called through their addresses (``units()``).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types

from .benes import apply_benes
from .fft import fft_coefficients, fft_evaluate, fft_transposed
from .gf import berlekamp_massey, gf_inv, gf_scale, secret_mask, vec_inverse_square
from .matrix import load_le64
from .._barrier import declassify
from ..jit.cache import JIT_CACHE
from ..jit.units import Unit, addresses
from ..shake import shake256_into


@njit(cache=JIT_CACHE)
def _popcount64(x):
    # bit count by fixed folds (x may be secret)
    x = x - ((x >> 1) & 0x5555555555555555)
    x = (x & 0x3333333333333333) + ((x >> 2) & 0x3333333333333333)
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0F
    return ((x * 0x0101010101010101) >> 56) & 0xFF


@njit(cache=JIT_CACHE)
def _monic_values(low, powers, Uw, Ub, xt, m, out):
    # out = x^t + sum low[i] x^i at every field element, bitsliced in the FFT's order (low secret)
    E = fft_evaluate(fft_coefficients(low, powers, m), Uw, Ub, m)
    for k in range(m):
        for x in range(E.shape[1]):
            out[k, x] = E[k, x] ^ xt[k, x]


@njit(cache=JIT_CACHE)
def _inverse_square_12(values, taps, out):
    # out = 1 / values^2 elementwise in GF(2^12) (values secret, nonzero). The field is a
    # constant here, so the unit compiles its own field's block only: half the time of both
    vec_inverse_square(out, values, 12, taps)


@njit(cache=JIT_CACHE)
def _inverse_square_13(values, taps, out):
    # the same in GF(2^13)
    vec_inverse_square(out, values, 13, taps)


@njit(cache=JIT_CACHE)
def _power_sums(E, Uw, Ub, powers, m, out):
    # out = the power sums of the values E (secret; overwritten), ``fft_transposed``
    sums = fft_transposed(E, Uw, Ub, powers, m)
    for j in range(out.shape[0]):
        out[j] = sums[j]


@njit(cache=JIT_CACHE, inline="always")     # compiled once per field, in the units below
def _monic_locator(syn, t, m, fpoly, out):
    # out = the t low coefficients of the error locator of the 2t syndromes syn (secret), made
    # monic (its leading coefficient's inverse times it: the roots stay)
    loc = berlekamp_massey(syn[:2 * t], t, m, fpoly)
    low = gf_scale(loc[:t], gf_inv(loc[t], m, fpoly), m, fpoly)
    for i in range(t):
        out[i] = low[i]


@njit(cache=JIT_CACHE)
def _locator_12(syn, t, fpoly, out):
    # ``_monic_locator`` in GF(2^12): the field a constant, its Berlekamp-Massey steps only
    _monic_locator(syn, t, 12, fpoly, out)


@njit(cache=JIT_CACHE)
def _locator_13(syn, t, fpoly, out):
    # the same in GF(2^13)
    _monic_locator(syn, t, 13, fpoly, out)


_i64 = {d: types.Array(types.int64, d, "C") for d in (1, 2, 3)}
_TAPS = types.Array(types.int64, 1, "C", readonly=True)
MONIC = Unit(_monic_values, types.void(_i64[1], _i64[3], _i64[3], _i64[3], _i64[2], types.int64, _i64[2]))
INVERSE_SQUARE = {m: Unit(kernel, types.void(_i64[2], _TAPS, _i64[2]))
                  for m, kernel in ((12, _inverse_square_12), (13, _inverse_square_13))}
POWER_SUMS = Unit(_power_sums, types.void(_i64[2], _i64[3], _i64[3], _i64[3], types.int64, _i64[1]))
LOCATOR = {m: Unit(kernel, types.void(_i64[1], types.int64, types.int64, _i64[1]))
           for m, kernel in ((12, _locator_12), (13, _locator_13))}
BENES = Unit(apply_benes, types.void(_i64[2], _i64[1], types.int64, types.boolean))


PER_FIELD = {m: (INVERSE_SQUARE[m], LOCATOR[m]) for m in (12, 13)}
"""The units compiled for one field: each set's first decapsulation compiles its own field's."""


def units_of(m: int) -> tuple[Unit, ...]:
    """Decoding's units in GF(2^m), in the order of ``decap_preimage``'s ``units``."""
    return MONIC, INVERSE_SQUARE[m], POWER_SUMS, LOCATOR[m], BENES


monic_unit, power_sums_unit, benes_unit = MONIC.call, POWER_SUMS.call, BENES.call
inverse_square_12_unit, inverse_square_13_unit = INVERSE_SQUARE[12].call, INVERSE_SQUARE[13].call
locator_12_unit, locator_13_unit = LOCATOR[12].call, LOCATOR[13].call


def units(m: int) -> tuple[int, ...]:
    """The addresses of decoding's units for GF(2^m) in this process, ``decap_preimage``'s last
    argument."""
    return addresses(units_of(m))


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside decap_preimage_bytes
def decap_preimage(c, g, cond, s, m, n, t, fpoly, taps, ev_powers, ev_Uw, ev_Ub, xt, sy_powers, sy_Uw, sy_Ub,
                   units):
    """The hash input b | v | C of decapsulation: b = 1 and v = e when C decodes to an error
    vector e of weight t with syndrome C, else b = 0 and v = s (implicit rejection).

    Secret: g (Goppa polynomial, t low coefficients), cond (control bits as int64 words), s, and
    everything derived from them; c is public, and so are the FFT constants for evaluating
    polynomials of degree below t (ev_*), x^t at every field element (xt, bitsliced in the FFT's
    order) and the FFT constants for power sums up to 2t - 1 (sy_*); ``units`` is ``units(m)``.
    Loop bounds and memory indices depend on m, n, t only, and the final choice between e and s
    is a mask.

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
    benes_unit(units[4], r, cond, m, True)

    values = np.empty((m, nw), dtype=np.int64)
    monic_unit(units[0], g, ev_powers, ev_Uw, ev_Ub, xt, m, values)
    ginv2 = np.empty((m, nw), dtype=np.int64)
    if m == 12:                                                 # 1 / g(x)^2 at every field element x
        inverse_square_12_unit(units[1], values, taps, ginv2)
    else:
        inverse_square_13_unit(units[1], values, taps, ginv2)

    # syndrome s_j = sum_x r_x x^j / g(x)^2, j < 2t
    w = np.empty((m, nw), dtype=np.int64)
    for k in range(m):
        for x in range(nw):
            w[k, x] = ginv2[k, x] & r[0, x]
    syn = np.empty(2 * t, dtype=np.int64)
    power_sums_unit(units[2], w, sy_Uw, sy_Ub, sy_powers, m, syn)

    low = np.empty(t, dtype=np.int64)
    if m == 12:
        locator_12_unit(units[3], syn, t, fpoly, low)
    else:
        locator_13_unit(units[3], syn, t, fpoly, low)
    img = values
    monic_unit(units[0], low, ev_powers, ev_Uw, ev_Ub, xt, m, img)

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
    syn2 = np.empty(2 * t, dtype=np.int64)
    power_sums_unit(units[2], w, sy_Uw, sy_Ub, sy_powers, m, syn2)

    benes_unit(units[4], e, cond, m, False)        # back to support order
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


@njit(cache=JIT_CACHE)
def goppa_encoding_ok(sk, m, t):
    """1 when the t 2-byte coefficients of g in the private key (bytes 40 ..) are all below
    2^m, else 0: a check of the key's format, not of its secret value."""
    bad = 0
    for i in range(t):
        bad |= (np.int64(sk[40 + 2 * i]) | (np.int64(sk[41 + 2 * i]) << 8)) >> m
    return declassify(np.int64(bad == 0))      # public: whether the key is well-formed


@njit(cache=JIT_CACHE)
def pivot_field_ok(sk, semi_systematic):
    """1 when the private key's 64-bit pivot field c (bytes 32 .. 39) is well-formed, else 0:
    2^32 - 1 for the plain sets, 32 bits set for the 'f' sets. A check of the key's format,
    compiled so that the field passes no Python integer code (its comparisons branch)."""
    bits = 0
    for i in range(64):
        bits += (np.int64(sk[32 + (i >> 3)]) >> (i & 7)) & 1
    low = 0
    for i in range(4):
        low |= np.int64(sk[32 + i]) << (8 * i)
    ok = bits == 32 if semi_systematic else (bits == 32) & (low == 0xFFFFFFFF)
    return declassify(np.int64(ok))


@njit(cache=JIT_CACHE, inline="always")     # compiled once, inside decapsulation
def decap_preimage_bytes(ct, sk, m, n, t, semi_systematic, fpoly, taps, ev_powers, ev_Uw, ev_Ub, xt, sy_powers,
                         sy_Uw, sy_Ub, units):
    """``decap_preimage`` on the ciphertext and private key as bytes (the submission's layout:
    delta | c | g | control bits | s), parsed here: (-1, empty) when the pivot field c is not of
    its form, (0, empty) when g's encoding is invalid, else (1, b | v | C). Secret: sk."""
    if not pivot_field_ok(sk, semi_systematic):
        return -1, np.empty(0, dtype=np.uint8)
    if not goppa_encoding_ok(sk, m, t):
        return 0, np.empty(0, dtype=np.uint8)
    g = np.empty(t, dtype=np.int64)
    for i in range(t):
        g[i] = np.int64(sk[40 + 2 * i]) | (np.int64(sk[41 + 2 * i]) << 8)
    at = 40 + 2 * t
    cond = np.empty(((2 * m - 1) << (m - 4)) >> 3, dtype=np.int64)
    for w in range(cond.shape[0]):
        cond[w] = load_le64(sk, at + 8 * w)
    at += 8 * cond.shape[0]
    s = np.frombuffer(sk, dtype=np.uint8)[at:at + (n >> 3)]
    return 1, decap_preimage(np.frombuffer(ct, dtype=np.uint8), g, cond, s, m, n, t, fpoly, taps, ev_powers,
                             ev_Uw, ev_Ub, xt, sy_powers, sy_Uw, sy_Ub, units)


@njit(cache=JIT_CACHE)
def decapsulation(ct, sk, m, n, t, semi_systematic, fpoly, taps, ev_powers, ev_Uw, ev_Ub, xt, sy_powers, sy_Uw,
                  sy_Ub, units, key):
    """Decapsulation in one compiled call: ``decap_preimage_bytes``, then key = SHAKE256(b | v | C)
    (32 bytes) and the hash input cleared. Returns the status of ``decap_preimage_bytes`` (key is
    written when it is 1). Secret: sk, the hash input and key."""
    status, pre = decap_preimage_bytes(ct, sk, m, n, t, semi_systematic, fpoly, taps, ev_powers, ev_Uw, ev_Ub, xt,
                                       sy_powers, sy_Uw, sy_Ub, units)
    if status == 1:
        shake256_into(pre, key, np.empty(25, dtype=np.uint64))
        pre[:] = 0
    return status
