"""The Benes network: control bits from a permutation, and its application to bitsliced data.

A network for 2^m positions has 2m - 1 layers of 2^(m-1) conditional swaps. Layer l swaps
positions x and x + 2^s (bit s of x clear), s = l for l < m and s = 2m - 2 - l after; its
control bit for x is bit number (x with bit s deleted) of the layer. The private key stores
these bits layer after layer, least significant bit first in each byte.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._barrier import opaque
from ..jit.cache import JIT_CACHE


@njit(cache=JIT_CACHE, inline="always")
def _ct_min(x, y, zero):
    """min(x, y) (x, y may be secret) XORed with ``zero``, a 0 through the barrier: stored over
    x, a bare minimum lets LLVM store only where y < x, a masked store or a branch decided by
    the secret (memcheck found them); with ``zero`` it cannot tell which lanes keep their value."""
    return min(x, y) ^ zero


@njit(cache=JIT_CACHE, inline="always")
def _exchange(a, i, l, desc, zero):
    # a[i], a[l] = sorted pair, reversed when desc = -1; min/max lower to selects, not branches.
    # desc ^ zero (see _ct_min): with desc known (0 after unswitching the loop on it) the
    # stores would be masked ones again
    x = a[i]
    y = a[l]
    lo = min(x, y)
    hi = max(x, y)
    d = (lo ^ hi) & (desc ^ zero)
    a[i] = lo ^ d
    a[l] = hi ^ d


@njit(cache=JIT_CACHE, inline="always")
def _exchange_halves(lo_half, hi_half, desc, zero):
    # _exchange on every pair (lo_half[i], hi_half[i])
    flip = desc ^ zero
    for i in range(lo_half.shape[0]):
        x = lo_half[i]
        y = hi_half[i]
        lo = min(x, y)
        hi = max(x, y)
        d = (lo ^ hi) & flip
        lo_half[i] = lo ^ d
        hi_half[i] = hi ^ d


@njit(cache=JIT_CACHE)
def sort_network(a):
    """Sort an int64 array whose length is a power of two, in place (bitonic network).

    The compare-exchange pattern depends only on the length; each exchange is a masked select,
    so the values (a secret permutation during key generation) steer no branch, index or
    masked store.
    Distances 1, 2 and 4 get unrolled loops so that they vectorise like the long ones.
    """
    n = a.shape[0]
    zero = opaque(np.int64(0))
    k = 2
    lk = 1                                   # k = 2^lk; blocks of k elements alternate direction
    while k <= n:
        j = k >> 1
        while j > 0:
            if j == 1:
                for h in range(n >> 1):
                    i = 2 * h
                    _exchange(a, i, i + 1, -((i >> lk) & 1), zero)
            elif j == 2:
                for h in range(n >> 2):
                    i = 4 * h
                    desc = -((i >> lk) & 1)
                    _exchange(a, i, i + 2, desc, zero)
                    _exchange(a, i + 1, i + 3, desc, zero)
            elif j == 4:
                for h in range(n >> 3):
                    i = 8 * h
                    desc = -((i >> lk) & 1)
                    for o in range(4):
                        _exchange(a, i + o, i + o + 4, desc, zero)
            else:
                for base in range(0, n, 2 * j):
                    # two disjoint views: the compiler then knows the halves do not overlap
                    _exchange_halves(a[base:base + j], a[base + j:base + 2 * j], -((base >> lk) & 1), zero)
            j >>= 1
        k <<= 1
        lk += 1


@njit(cache=JIT_CACHE)
def _set_bit(out, pos, bit):
    # out bit pos ^= bit: the position is public, the bit may be secret
    out[pos >> 3] ^= np.uint8(bit << (pos & 7))


@njit(cache=JIT_CACHE)
def _layer_step(out, pos, step, pi, w, n, q):
    """Outer layers of one sub-network for permutation pi of size n = 2^w (pi secret).

    Writes the first and last layer bits (stride ``step`` from ``pos``) and the two half-size
    permutations for the inner network into q (q[:n/2] acts on even, q[n/2:] on odd positions).
    Values stay below 2^31 as in 32-bit arithmetic; masks emulate its truncating shifts.
    """
    zero = opaque(np.int64(0))
    A = np.empty(n, dtype=np.int64)
    B = np.empty(n, dtype=np.int64)
    for x in range(n):
        A[x] = ((pi[x] ^ 1) << 16) | pi[x ^ 1]
    sort_network(A)
    for x in range(n):
        px = A[x] & 0xFFFF
        cx = _ct_min(px, x, zero)
        B[x] = (px << 16) | cx
    for x in range(n):
        A[x] = ((A[x] & 0xFFFF) << 16) | x
    sort_network(A)
    for x in range(n):
        A[x] = ((A[x] & 0xFFFF) << 16) + (B[x] >> 16)
    sort_network(A)
    if w <= 10:
        for x in range(n):
            B[x] = ((A[x] & 0xFFFF) << 10) | (B[x] & 0x3FF)
        for i in range(1, w - 1):
            for x in range(n):
                A[x] = ((B[x] & ~0x3FF) << 6) | x
            sort_network(A)
            for x in range(n):
                A[x] = ((A[x] & 0xFFF) << 20) | B[x]
            sort_network(A)
            for x in range(n):
                ppcpx = A[x] & 0xFFFFF
                ppcx = (A[x] & 0xFFC00) | (B[x] & 0x3FF)
                B[x] = _ct_min(ppcx, ppcpx, zero)
        for x in range(n):
            B[x] &= 0x3FF
    else:
        for x in range(n):
            B[x] = ((A[x] & 0xFFFF) << 16) | (B[x] & 0xFFFF)
        for i in range(1, w - 1):
            for x in range(n):
                A[x] = (B[x] & ~0xFFFF) | x
            sort_network(A)
            for x in range(n):
                A[x] = ((A[x] & 0xFFFF) << 16) | (B[x] & 0xFFFF)
            if i < w - 2:
                for x in range(n):
                    B[x] = (A[x] & ~0xFFFF) | (B[x] >> 16)
                sort_network(B)
                for x in range(n):
                    B[x] = ((B[x] & 0xFFFF) << 16) | (A[x] & 0xFFFF)
            sort_network(A)
            for x in range(n):
                cpx = (B[x] & ~0xFFFF) | (A[x] & 0xFFFF)
                B[x] = _ct_min(B[x], cpx, zero)
        for x in range(n):
            B[x] &= 0xFFFF
    for x in range(n):
        A[x] = (pi[x] << 16) + x
    sort_network(A)
    half = n >> 1
    for j in range(half):
        x = 2 * j
        fj = B[x] & 1
        Fx = x + fj
        _set_bit(out, pos, fj)
        pos += step
        B[x] = ((A[x] & 0xFFFF) << 16) | Fx
        B[x + 1] = ((A[x + 1] & 0xFFFF) << 16) | (Fx ^ 1)
    sort_network(B)
    pos += (2 * w - 3) * step * half
    for k in range(half):
        y = 2 * k
        lk = B[y] & 1
        Ly = y + lk
        _set_bit(out, pos, lk)
        pos += step
        A[y] = (Ly << 16) | (B[y] & 0xFFFF)
        A[y + 1] = ((Ly ^ 1) << 16) | (B[y + 1] & 0xFFFF)
    sort_network(A)
    for j in range(half):
        q[j] = (A[2 * j] & 0xFFFF) >> 1
        q[j + half] = (A[2 * j + 1] & 0xFFFF) >> 1


_BITREV8 = np.array([int(f"{i:08b}"[::-1], 2) for i in range(256)], dtype=np.int64)
"""Every byte with its bits reversed."""


@njit(cache=JIT_CACHE)
def _bitrev_bits(x, bits):
    # the low ``bits`` (at most 16) of x reversed, by two table lookups (applied to public
    # positions and indices only)
    return ((_BITREV8[x & 0xFF] << 8) | _BITREV8[(x >> 8) & 0xFF]) >> (16 - bits)


@njit(cache=JIT_CACHE)
def control_bits(pi, m):
    """Control bits ((2m - 1) 2^(m-4) bytes) of the Benes network realising pi (secret).

    The recursion is unrolled level by level: level d has 2^d sub-networks of size 2^(m-d);
    sub-network p starts at bit d 2^(m-1) + bitrev_d(p) and strides by 2^d.
    """
    N = 1 << m
    out = np.zeros((2 * m - 1) * (N >> 4), dtype=np.uint8)
    cur = pi.astype(np.int64)
    nxt = np.empty(N, dtype=np.int64)
    for d in range(m):
        w = m - d
        n = 1 << w
        step = 1 << d
        for p in range(1 << d):
            pos = d * (N >> 1) + _bitrev_bits(p, d)
            if w == 1:
                _set_bit(out, pos, cur[p * n])
            else:
                _layer_step(out, pos, step, cur[p * n:(p + 1) * n], w, n, nxt[p * n:(p + 1) * n])
        cur, nxt = nxt, cur
    return out


@njit(cache=JIT_CACHE)
def _spread32(c, s):
    # place 32 control bits at the 64 positions whose bit s is clear
    x = c & 0xFFFFFFFF
    if s <= 4:
        x = (x | (x << 16)) & 0x0000FFFF0000FFFF
    if s <= 3:
        x = (x | (x << 8)) & 0x00FF00FF00FF00FF
    if s <= 2:
        x = (x | (x << 4)) & 0x0F0F0F0F0F0F0F0F
    if s <= 1:
        x = (x | (x << 2)) & 0x3333333333333333
    if s <= 0:
        x = (x | (x << 1)) & 0x5555555555555555
    return x


@njit(cache=JIT_CACHE, inline="always")
def _swap_masked(x, y, masks):
    # swap the bits of x[i] and y[i] selected by masks[i] (disjoint views, so it vectorises)
    for i in range(x.shape[0]):
        d = (x[i] ^ y[i]) & masks[i]
        x[i] ^= d
        y[i] ^= d


@njit(cache=JIT_CACHE)
def apply_benes(planes, cond, m, inverse=False):
    """Apply the network given by control bits ``cond`` (int64 words, secret) to every bitsliced
    plane of ``planes`` (m', 2^m / 64), in place; ``inverse`` runs the layers backwards, which
    undoes the permutation (every layer is an involution). Swaps are masked XORs; the access
    pattern depends on m only.
    """
    N = 1 << m
    nw = N >> 6
    per_layer = N >> 7          # control words per layer
    P = planes.shape[0]
    masks = np.empty(nw, dtype=np.int64)
    for step in range(2 * m - 1):
        layer = 2 * m - 2 - step if inverse else step
        s = layer if layer < m else 2 * m - 2 - layer
        base = layer * per_layer
        if s >= 6:
            # swap whole words wi and wi + st (bit s - 6 of wi clear)
            st = 1 << (s - 6)
            for b in range(0, nw, 2 * st):
                for w in range(st):
                    wi = b + w
                    masks[wi] = cond[base + (((wi >> (s - 5)) << (s - 6)) | (wi & (st - 1)))]
            for k in range(P):
                for b in range(0, nw, 2 * st):
                    _swap_masked(planes[k, b:b + st], planes[k, b + st:b + 2 * st], masks[b:b + st])
        else:
            # swap bits x and x + 2^s inside every word
            sh = 1 << s
            for wi in range(nw):
                masks[wi] = _spread32(cond[base + (wi >> 1)] >> (32 * (wi & 1)), s)
            for k in range(P):
                for wi in range(nw):
                    p = planes[k, wi]
                    d = ((p >> sh) ^ p) & masks[wi]
                    planes[k, wi] = p ^ d ^ (d << sh)


@njit(cache=JIT_CACHE)
def bitrev_planes(m):
    """The public sequence bitrev(0), bitrev(1), ..., bitrev(2^m - 1), bitsliced (m, 2^m / 64)."""
    N = 1 << m
    planes = np.zeros((m, N >> 6), dtype=np.int64)
    for i in range(N):
        a = _bitrev_bits(i, m)
        for k in range(m):
            planes[k, i >> 6] |= np.int64((a >> k) & 1) << (i & 63)
    return planes


@njit(cache=JIT_CACHE)
def support_from_control_bits(cond, m, n, base):
    """Bitsliced support L_0..L_{n-1} (m, ceil(n/64)): the network applied to ``base`` =
    bitrev_planes(m); elements from n on are cleared. cond is secret.
    """
    planes = base.copy()
    apply_benes(planes, cond, m)
    W = (n + 63) >> 6
    out = planes[:, :W].copy()
    if n & 63:
        keep = (np.int64(1) << (n & 63)) - 1
        for k in range(m):
            out[k, W - 1] &= keep
    return out
