"""MAYO key generation and signing on the device.

Pipeline (``batch.py`` drives it):

1. ``seed_expand`` (one thread per key): SHAKE256(seed_sk) -> seed_pk and the oil matrix O.
2. ``aes.keystreams(seed_pk)``: P1 || P2 by AES-128-CTR on the device.
3. ``expand_secret`` (one block per key): P1 (bitsliced, upper), P2, and L = (P1 + P1^T) O + P2.
4a. ``keygen`` (one block per key): P3 = O^T (P1 O + P2), Upper, encoded: the compact public key.
4b. ``sign`` (one block per signature): the salt, the target, the vinegar vectors and r from
    SHAKE256; M = V L and V P1 V; the whipped system A x = y; the constant-time echelon form and
    back substitution; s = (v + O x, x) encoded with the salt. A rank-deficient system (public by
    design) makes the block retry with the next counter, as the specification says.

Secret: seed_sk, O, P1, P2, L (their derivation from seed_sk is secret even where the values are
public), the vinegar vectors, r, M, U, A, y, x, the pivot positions and the running pivot row.
They are used only as masked operands: every loop bound and every memory index is a public size
or a loop counter, and every data-dependent choice is an AND with an all-ones/all-zeros mask.
The only data-driven branch is the public rank bit. Messages, their lengths and the salt
randomness's position are public. seed_pk and the AES keystream are public by definition.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from numba import cuda, int64, uint8, uint64

from . import keccak
from .verify import gf16_mul, mul_add_scalar

ONES = np.uint64(0xFFFFFFFFFFFFFFFF)


@cuda.jit(device=True)
def nonzero_mask(x):
    """All-ones when x != 0, else 0 (no branch)."""
    x = uint64(x)
    t = (x >> uint64(1)) | (x & uint64(1))
    return ONES * ((t + uint64(0x7FFFFFFFFFFFFFFF)) >> uint64(63))


@cuda.jit(device=True)
def eq_mask(a, b):
    return ~nonzero_mask(uint64(int64(a) ^ int64(b)))


@cuda.jit(device=True)
def gt_mask(a, b):
    """All-ones when a > b (small non-negative ints), else 0."""
    return ONES * uint64(((int64(b) - int64(a)) >> 63) & 1)


@cuda.jit(device=True)
def gf16_inv(a):
    a2 = gf16_mul(a, a)
    a4 = gf16_mul(a2, a2)
    a8 = gf16_mul(a4, a4)
    return gf16_mul(gf16_mul(a2, a4), a8)


@lru_cache(maxsize=None)
def kernels_for(p):
    """Device kernels compiled for the MAYO parameter set ``p`` (sizes as compile-time constants)."""
    n, m, o, v, k = p.n, p.m, p.o, p.v, p.k
    limbs, W, mb = p.limbs, p.words, p.m_bytes
    E = k * (k + 1) // 2
    KO = k * o
    LA = (KO + 1 + 63) // 64          # limbs of an augmented row [A | y]
    WA = 4 * LA
    PKS, SKB, DIG, SALT = p.pk_seed_bytes, p.sk_seed_bytes, p.digest_bytes, p.salt_bytes
    OB, VB, RB = p.O_bytes, p.v_bytes, p.r_bytes
    VR = k * VB + RB
    P1B = p.P1_bytes
    SIGB = p.sig_bytes
    BODY = (k * n + 1) // 2
    f0, f1, f2, f3 = p.f_tail
    MPE = m + E
    SEEDBUF = PKS + OB
    HB = DIG + SALT + SKB + 1         # digest || salt || seed_sk || ctr (and digest || R || seed_sk)
    decode_entry = _decoder(p)
    # array shapes must be compile-time constants: products computed here, not in the kernels
    OW, KV, M1, KN1, KOW, KKW, KW = o * W, k * v, m + 1, k * n + 1, KO * W, k * k * W, k * W

    @cuda.jit
    def seed_expand(seeds, seed_pk, O, rho, rc):
        """seed_pk[q], O[q] (v, o) from SHAKE256(seeds[q]); one thread per key."""
        q = cuda.grid(1)
        if q >= seeds.shape[0]:
            return
        A = cuda.local.array(25, uint64)
        B = cuda.local.array(25, uint64)
        buf = cuda.local.array(SEEDBUF, uint8)
        keccak.shake256(seeds[q], 0, SKB, buf, 0, SEEDBUF, A, B, rho, rc)
        for i in range(PKS):
            seed_pk[q, i] = buf[i]
        for e in range(v * o):
            O[q, e // o, e % o] = (buf[PKS + (e >> 1)] >> (4 * (e & 1))) & 15

    @cuda.jit
    def expand_secret(ks, O, P1, P2, L):
        """P1 (upper), P2 and L = (P1 + P1^T) O + P2 of key blockIdx.x."""
        key = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        words = cuda.local.array(W, uint64)
        for e in range(tid, v * v + v * o, nt):
            if e < v * v:
                a = e // v
                b = e % v
                if b < a:
                    for w in range(W):
                        P1[key, a, b, w] = uint64(0)
                else:
                    decode_entry(ks[key], (a * v - a * (a - 1) // 2 + (b - a)) * mb, words)
                    for w in range(W):
                        P1[key, a, b, w] = words[w]
            else:
                a = (e - v * v) // o
                c = (e - v * v) % o
                decode_entry(ks[key], P1B + (a * o + c) * mb, words)
                for w in range(W):
                    P2[key, a, c, w] = words[w]
        cuda.syncthreads()
        acc = cuda.local.array(OW, uint64)
        sym = cuda.local.array(W, uint64)
        for a in range(tid, v, nt):
            for w in range(o * W):
                acc[w] = uint64(0)
            for b in range(v):
                for w in range(W):
                    sym[w] = P1[key, a, b, w] ^ P1[key, b, a, w]
                for c in range(o):
                    mul_add_scalar(acc, c * W, sym, O[key, b, c], limbs)
            for c in range(o):
                for w in range(W):
                    L[key, a, c, w] = acc[c * W + w] ^ P2[key, a, c, w]

    @cuda.jit
    def keygen(seed_pk, O, P1, P2, X, P3, cpk):
        """cpk[key] = seed_pk || Encode(Upper(O^T (P1 O + P2))); X, P3: per-key scratch."""
        key = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        acc = cuda.local.array(OW, uint64)
        for a in range(tid, v, nt):                 # X = P1 O + P2 (row a)
            for w in range(o * W):
                acc[w] = uint64(0)
            for b in range(a, v):
                for c in range(o):
                    mul_add_scalar(acc, c * W, P1[key, a, b], O[key, b, c], limbs)
            for c in range(o):
                for w in range(W):
                    X[key, a, c, w] = acc[c * W + w] ^ P2[key, a, c, w]
        cuda.syncthreads()
        for pair in range(tid, o * o, nt):          # P3 = O^T X
            i = pair // o
            j = pair % o
            for w in range(W):
                acc[w] = uint64(0)
            for a in range(v):
                mul_add_scalar(acc, 0, X[key, a, j], O[key, a, i], limbs)
            for w in range(W):
                P3[key, i, j, w] = acc[w]
        cuda.syncthreads()
        for i in range(tid, PKS, nt):
            cpk[key, i] = seed_pk[key, i]
        for t in range(tid, o * (o + 1) // 2, nt):  # Upper, row-major, encoded
            i = 0
            rem = t
            for r in range(o):                      # public: t is a loop counter
                if rem >= o - r and i == r:
                    rem -= o - r
                    i += 1
            j = i + rem
            for w in range(W):
                acc[w] = P3[key, i, j, w]
                if i != j:
                    acc[w] ^= P3[key, j, i, w]
            for jb in range(mb):
                byte = 0
                for h in range(2):
                    e = 2 * jb + h
                    if e < m:
                        nib = 0
                        for q in range(4):
                            nib |= int64((acc[q * limbs + (e >> 6)] >> uint64(e & 63)) & uint64(1)) << q
                        byte |= nib << (4 * h)
                cpk[key, PKS + t * mb + jb] = byte

    @cuda.jit
    def sign(key_of, seeds, O, P1, L, data, offsets, rand, VP1, Aext, rows, out, status, rho, rc):
        """out[inst] = signature of data[offsets[inst]:offsets[inst+1]] with salt randomness rand[inst]."""
        inst = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        key = key_of[inst]
        V = cuda.shared.array(KV, uint8)
        R = cuda.shared.array(KO, uint8)
        T = cuda.shared.array(M1, uint8)
        Y = cuda.shared.array(m, uint8)
        X = cuda.shared.array(KO, uint8)
        S = cuda.shared.array(KN1, uint8)
        M = cuda.shared.array(KOW, uint64)
        U = cuda.shared.array(KKW, uint64)
        piv = cuda.shared.array(WA, uint64)
        scaled = cuda.shared.array(WA, uint64)
        hb = cuda.shared.array(HB, uint8)
        ctl = cuda.shared.array(4, int64)           # 0 pivot_row, 1 found (mask bit), 2 full rank
        if tid == 0:
            A = cuda.local.array(25, uint64)
            B = cuda.local.array(25, uint64)
            tb = cuda.local.array(mb, uint8)
            keccak.shake256(data, offsets[inst], offsets[inst + 1] - offsets[inst], hb, 0, DIG, A, B, rho, rc)
            for j in range(SALT):                   # digest || R || seed_sk -> salt
                hb[DIG + j] = rand[inst, j]
            for j in range(SKB):
                hb[DIG + SALT + j] = seeds[key, j]
            salt = cuda.local.array(SALT, uint8)
            keccak.shake256(hb, 0, DIG + SALT + SKB, salt, 0, SALT, A, B, rho, rc)
            for j in range(SALT):
                hb[DIG + j] = salt[j]
                out[inst, SIGB - SALT + j] = salt[j]
            keccak.shake256(hb, 0, DIG + SALT, tb, 0, mb, A, B, rho, rc)
            for j in range(mb):
                T[2 * j] = tb[j] & 15
                if 2 * j + 1 <= m:
                    T[2 * j + 1] = tb[j] >> 4
            ctl[2] = 0
        cuda.syncthreads()
        for ctr in range(256):
            if tid == 0:
                A2 = cuda.local.array(25, uint64)
                B2 = cuda.local.array(25, uint64)
                vr = cuda.local.array(VR, uint8)
                hb[DIG + SALT + SKB] = ctr
                keccak.shake256(hb, 0, HB, vr, 0, VR, A2, B2, rho, rc)
                for i in range(k):
                    for a in range(v):
                        V[i * v + a] = (vr[i * VB + (a >> 1)] >> (4 * (a & 1))) & 15
                for c in range(KO):
                    R[c] = (vr[k * VB + (c >> 1)] >> (4 * (c & 1))) & 15
            cuda.syncthreads()
            acc = cuda.local.array(KW, uint64)
            for col in range(tid, KO, nt):          # M[i, c] = v_i^T L[:, c]
                i = col // o
                c = col % o
                for w in range(W):
                    acc[w] = uint64(0)
                for a in range(v):
                    mul_add_scalar(acc, 0, L[key, a, c], V[i * v + a], limbs)
                for w in range(W):
                    M[col * W + w] = acc[w]
            for b in range(tid, v, nt):             # VP1[i, b] = v_i^T P1[:, b] (P1 upper)
                for w in range(k * W):
                    acc[w] = uint64(0)
                for a in range(b + 1):
                    for i in range(k):
                        mul_add_scalar(acc, i * W, P1[key, a, b], V[i * v + a], limbs)
                for i in range(k):
                    for w in range(W):
                        VP1[inst, i, b, w] = acc[i * W + w]
            cuda.syncthreads()
            for pair in range(tid, k * k, nt):      # U[i, j] = v_i^T P1 v_j
                i = pair // k
                j = pair % k
                for w in range(W):
                    acc[w] = uint64(0)
                for b in range(v):
                    mul_add_scalar(acc, 0, VP1[inst, i, b], V[j * v + b], limbs)
                for w in range(W):
                    U[pair * W + w] = acc[w]
            cuda.syncthreads()
            # the whipped system: column (qb, c) of A, and y (the last thread), modulo f(z)
            for col in range(tid, KO + 1, nt):
                for e in range(MPE):
                    Aext[inst, e, col] = 0
                qb = col // o
                c = col % o
                ell = 0
                for i in range(k):
                    for j in range(k - 1, i - 1, -1):
                        for e in range(m):
                            wi = e >> 6
                            sh = uint64(e & 63)
                            val = 0
                            if col == KO:           # y: U[i, j] + U[j, i]
                                for q in range(4):
                                    word = U[(i * k + j) * W + q * limbs + wi]
                                    if i != j:
                                        word ^= U[(j * k + i) * W + q * limbs + wi]
                                    val |= int64((word >> sh) & uint64(1)) << q
                            else:
                                if i == qb:
                                    for q in range(4):
                                        val |= int64((M[(j * o + c) * W + q * limbs + wi] >> sh) & uint64(1)) << q
                                if j == qb and i != j:
                                    for q in range(4):
                                        val ^= int64((M[(i * o + c) * W + q * limbs + wi] >> sh) & uint64(1)) << q
                            Aext[inst, ell + e, col] ^= val
                        ell += 1
                for d in range(MPE - 1, m - 1, -1):
                    yd = Aext[inst, d, col]
                    Aext[inst, d - m, col] ^= gf16_mul(yd, f0)
                    Aext[inst, d - m + 1, col] ^= gf16_mul(yd, f1)
                    Aext[inst, d - m + 2, col] ^= gf16_mul(yd, f2)
                    Aext[inst, d - m + 3, col] ^= gf16_mul(yd, f3)
                if col == KO:
                    for e in range(m):
                        Y[e] = T[e] ^ Aext[inst, e, col]
            cuda.syncthreads()
            # augmented rows [A | y - A r], bitsliced
            for e in range(tid, m, nt):
                for w in range(WA):
                    rows[inst, e, w] = uint64(0)
                yy = int64(Y[e])
                for c in range(KO):
                    a_ec = Aext[inst, e, c]
                    yy ^= gf16_mul(a_ec, R[c])
                    for q in range(4):
                        rows[inst, e, q * LA + (c >> 6)] |= uint64((a_ec >> q) & 1) << uint64(c & 63)
                for q in range(4):
                    rows[inst, e, q * LA + (KO >> 6)] |= uint64((yy >> q) & 1) << uint64(KO & 63)
            if tid == 0:
                ctl[0] = 0
            cuda.syncthreads()
            for col in range(KO):                   # echelon form, every row touched for every column
                if tid == 0:
                    pr = ctl[0]
                    for w in range(WA):
                        piv[w] = uint64(0)
                    found = uint64(0)
                    for rr in range(m):
                        take = eq_mask(rr, pr) | (gt_mask(rr, pr) & ~found)
                        for w in range(WA):
                            piv[w] ^= take & rows[inst, rr, w]
                        found = nonzero_mask(_entry(piv, col, LA))
                    ctl[1] = int64(found & uint64(1))
                    for w in range(WA):
                        scaled[w] = uint64(0)
                    mul_add_scalar(scaled, 0, piv, gf16_inv(_entry(piv, col, LA)), LA)
                cuda.syncthreads()
                pr = ctl[0]
                fmask = ONES * uint64(ctl[1])
                for rr in range(tid, m, nt):
                    is_pr = eq_mask(rr, pr) & fmask
                    for w in range(WA):
                        rows[inst, rr, w] = (rows[inst, rr, w] & ~is_pr) | (scaled[w] & is_pr)
                    f = int64(_entry(rows[inst, rr], col, LA)) & int64(gt_mask(rr, pr) & uint64(15))
                    mul_add_scalar(rows[inst, rr], 0, scaled, f, LA)
                cuda.syncthreads()
                if tid == 0:
                    ctl[0] = pr + ctl[1]
                cuda.syncthreads()
            if tid == 0:
                full = ctl[0] == m                  # the public rank bit
                yv = cuda.local.array(m, uint8)
                onehot = cuda.local.array(LA, uint64)
                for e in range(m):
                    yv[e] = _entry(rows[inst, e], KO, LA)
                for c in range(KO):
                    X[c] = R[c]
                for rr in range(m - 1, -1, -1):
                    for w in range(LA):
                        onehot[w] = uint64(0)
                    found = uint64(0)
                    yr = yv[rr]
                    for c in range(KO):
                        nz = nonzero_mask(_entry(rows[inst, rr], c, LA))
                        hit = nz & ~found
                        found |= nz
                        X[c] ^= uint8(uint64(yr) & hit)
                        onehot[c >> 6] |= (hit & uint64(1)) << uint64(c & 63)
                    for i in range(rr):
                        coef = int64(0)
                        for q in range(4):
                            bits = uint64(0)
                            for w in range(LA):
                                bits |= rows[inst, i, q * LA + w] & onehot[w]
                            coef |= int64(nonzero_mask(bits) & uint64(1)) << q
                        yv[i] ^= gf16_mul(coef, yr)
                ctl[2] = 1 if full else 0
                status[inst] = ctr
            cuda.syncthreads()
            if ctl[2] == 1:                         # public: full rank, this counter's solution stands
                break
        # s_i = (v_i + O x_i, x_i), encoded, then the salt (already in place)
        for idx in range(tid, k * n, nt):
            i = idx // n
            a = idx % n
            if a < v:                               # public index
                val = int64(V[i * v + a])
                for c in range(o):
                    val ^= gf16_mul(O[key, a, c], X[i * o + c])
                S[idx] = val
            else:
                S[idx] = X[i * o + a - v]
        if tid == 0:
            S[k * n] = 0
        cuda.syncthreads()
        for j in range(tid, BODY, nt):
            out[inst, j] = S[2 * j] | (S[2 * j + 1] << 4)
        if tid == 0 and ctl[2] != 1:
            status[inst] = -1

    return seed_expand, expand_secret, keygen, sign


@cuda.jit(device=True)
def _entry(row, col, la):
    """Element at public column col of a bitsliced row with la limbs per plane."""
    w = col >> 6
    b = uint64(col & 63)
    one = uint64(1)
    return int64(((row[w] >> b) & one) | (((row[la + w] >> b) & one) << one)
                 | (((row[2 * la + w] >> b) & one) << uint64(2)) | (((row[3 * la + w] >> b) & one) << uint64(3)))


def _decoder(p):
    """The nibble -> bitsliced entry decoder of the verification kernels, for these sizes."""
    m, limbs, W, mb = p.m, p.limbs, p.words, p.m_bytes

    @cuda.jit(device=True)
    def decode_entry(src, off, words):
        for w in range(W):
            words[w] = uint64(0)
        for chunk in range(0, mb, 8):
            word = uint64(0)
            for t in range(8):
                if chunk + t < mb:
                    word |= uint64(src[off + chunk + t]) << uint64(8 * t)
            base = 2 * chunk
            for q in range(4):
                x = (word >> uint64(q)) & uint64(0x1111111111111111)
                x = (x | (x >> uint64(3))) & uint64(0x0303030303030303)
                x = (x | (x >> uint64(6))) & uint64(0x000F000F000F000F)
                x = (x | (x >> uint64(12))) & uint64(0x000000FF000000FF)
                x = (x | (x >> uint64(24))) & uint64(0xFFFF)
                words[q * limbs + (base >> 6)] |= x << uint64(base & 63)
        if m % 64 != 0:
            keep = (uint64(1) << uint64(m % 64)) - uint64(1)
            for q in range(4):
                words[q * limbs + limbs - 1] &= keep
    return decode_entry
