"""MAYO verification on the device: public-key assembly and one thread block per signature.

Pipeline for a batch (``batch.py`` drives it):

1. ``aes.keystreams``: AES-128-CTR(seed_pk) for every distinct key (bitsliced AES, on the device).
2. ``assemble``: one block per key turns the keystream (P1 || P2) and the P3 bytes of the compact
   key into the bitsliced upper-triangular matrix P (n, n, W): it stays on the device and is
   shared by every signature under that key.
3. ``verify``: one block per signature, from the message and signature bytes to the verdict:
   SHAKE256 twice for the target t (thread 0), the signature vectors decoded into shared memory,
   P*(s) column by column (one thread per column b: PS[i, b] = sum_a s_i[a] P[a, b]), then
   U[i, j] = s_j^T PS[i] (one thread per pair), then the z^ell combination modulo f(z) and the
   comparison with t (thread 0).

Everything here is public (verification). Kernels are compiled per parameter set, whose sizes
become compile-time constants (shared and local array shapes).
"""

from __future__ import annotations

from functools import lru_cache

from numba import cuda, int64, uint8, uint64

from . import keccak


@cuda.jit(device=True)
def gf16_mul(a, b):
    """Product of two GF(16) elements by masks and shifts (x^4 = x + 1)."""
    a = int64(a)
    b = int64(b)
    p = ((-(a & 1)) & b) ^ ((-((a >> 1) & 1)) & (b << 1)) ^ ((-((a >> 2) & 1)) & (b << 2)) \
        ^ ((-((a >> 3) & 1)) & (b << 3))
    top = p & 0x70
    return (p ^ (top >> 4) ^ (top >> 3)) & 0xF


@cuda.jit(device=True)
def mul_add_scalar(acc, ao, a, s, limbs):
    """acc[ao : ao + 4 limbs] ^= s * a for a bitsliced vector a and a scalar s (masks only)."""
    ones = uint64(0xFFFFFFFFFFFFFFFF)
    m0 = ones * uint64(s & 1)
    m1 = ones * uint64((s >> 1) & 1)
    m2 = ones * uint64((s >> 2) & 1)
    m3 = ones * uint64((s >> 3) & 1)
    for w in range(limbs):
        b0 = a[w]
        b1 = a[limbs + w]
        b2 = a[2 * limbs + w]
        b3 = a[3 * limbs + w]
        acc[ao + w] ^= (m0 & b0) ^ (m1 & b3) ^ (m2 & b2) ^ (m3 & b1)
        acc[ao + limbs + w] ^= (m0 & b1) ^ (m1 & (b0 ^ b3)) ^ (m2 & (b3 ^ b2)) ^ (m3 & (b2 ^ b1))
        acc[ao + 2 * limbs + w] ^= (m0 & b2) ^ (m1 & b1) ^ (m2 & (b0 ^ b3)) ^ (m3 & (b3 ^ b2))
        acc[ao + 3 * limbs + w] ^= (m0 & b3) ^ (m1 & b2) ^ (m2 & b1) ^ (m3 & (b0 ^ b3))


@lru_cache(maxsize=None)
def kernels_for(p):
    """(assemble, verify) kernels compiled for the MAYO parameter set ``p``."""
    n, m, o, v, k = p.n, p.m, p.o, p.v, p.k
    limbs, W, mb = p.limbs, p.words, p.m_bytes
    P1_bytes, P3_OFF = p.P1_bytes, p.pk_seed_bytes
    E = k * (k + 1) // 2
    KN = k * n
    KKW = k * k * W
    KW = k * W
    MB2 = 2 * p.digest_bytes + p.salt_bytes       # local buffer for digest || salt
    DIG, SALT, SIG = p.digest_bytes, p.salt_bytes, p.sig_bytes
    f0, f1, f2, f3 = p.f_tail
    MPE = m + E
    MM = ((m + 1) // 2) * 2

    @cuda.jit(device=True)
    def decode_entry(src, off, words):
        """words[0:W] = bitsliced m-vector from the nibble string src[off : off + m_bytes].

        Eight bytes (16 elements) at a time: bit q of every nibble is gathered into 16 bits by
        shift-and-mask steps, then placed at the elements' position in plane q.
        """
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
        if m % 64 != 0:                # clear the padding nibble of an odd m (m_bytes * 2 > m)
            keep = (uint64(1) << uint64(m % 64)) - uint64(1)
            for q in range(4):
                words[q * limbs + limbs - 1] &= keep

    @cuda.jit
    def assemble(ks, cpk, P):
        """P[key] (n, n, W) from the keystream ks[key] (P1 || P2) and the compact key cpk[key]."""
        key = cuda.blockIdx.x
        words = cuda.local.array(W, uint64)
        for e in range(cuda.threadIdx.x, n * n, cuda.blockDim.x):
            a = e // n
            b = e % n
            if b < a:
                for w in range(W):
                    P[key, a, b, w] = uint64(0)
                continue
            if a < v and b < v:        # P1, upper, row-major
                decode_entry(ks[key], (a * v - a * (a - 1) // 2 + (b - a)) * mb, words)
            elif a < v:                # P2
                decode_entry(ks[key], P1_bytes + (a * o + (b - v)) * mb, words)
            else:                      # P3, upper, row-major, from the compact key
                aa = a - v
                bb = b - v
                decode_entry(cpk[key], P3_OFF + (aa * o - aa * (aa - 1) // 2 + (bb - aa)) * mb, words)
            for w in range(W):
                P[key, a, b, w] = words[w]

    @cuda.jit
    def verify(P, key_of, data, offsets, sigs, PS, out, rho, rc):
        """out[i] = 1 when sigs[i] is a valid signature of data[offsets[i]:offsets[i+1]] under P[key_of[i]]."""
        inst = cuda.blockIdx.x
        tid = cuda.threadIdx.x
        nt = cuda.blockDim.x
        key = key_of[inst]
        S = cuda.shared.array(KN, uint8)
        T = cuda.shared.array(MM, uint8)
        U = cuda.shared.array(KKW, uint64)
        sig = sigs[inst]
        for idx in range(tid, KN, nt):
            S[idx] = (sig[idx >> 1] >> (4 * (idx & 1))) & 15
        if tid == 0:
            A = cuda.local.array(25, uint64)
            B = cuda.local.array(25, uint64)
            buf = cuda.local.array(MB2, uint8)
            tb = cuda.local.array(mb, uint8)
            keccak.shake256(data, offsets[inst], offsets[inst + 1] - offsets[inst], buf, 0, DIG, A, B, rho, rc)
            for j in range(SALT):
                buf[DIG + j] = sig[SIG - SALT + j]
            keccak.shake256(buf, 0, DIG + SALT, tb, 0, mb, A, B, rho, rc)
            for j in range(mb):
                T[2 * j] = tb[j] & 15
                T[2 * j + 1] = tb[j] >> 4
        cuda.syncthreads()
        # PS[i, b] = sum_{a <= b} s_i[a] P[a, b]
        acc = cuda.local.array(KW, uint64)
        for b in range(tid, n, nt):
            for w in range(KW):
                acc[w] = uint64(0)
            for a in range(b + 1):
                pab = P[key, a, b]
                for i in range(k):
                    mul_add_scalar(acc, i * W, pab, S[i * n + a], limbs)
            for i in range(k):
                for w in range(W):
                    PS[inst, i, b, w] = acc[i * W + w]
        cuda.syncthreads()
        # U[i, j] = sum_b s_j[b] PS[i, b]
        for pair in range(tid, k * k, nt):
            i = pair // k
            j = pair % k
            for w in range(W):
                acc[w] = uint64(0)
            for b in range(n):
                mul_add_scalar(acc, 0, PS[inst, i, b], S[j * n + b], limbs)
            for w in range(W):
                U[pair * W + w] = acc[w]
        cuda.syncthreads()
        if tid == 0:
            y = cuda.local.array(MPE, uint8)
            for e in range(MPE):
                y[e] = 0
            ell = 0
            for i in range(k):
                for j in range(k - 1, i - 1, -1):
                    for e in range(m):
                        wi = (e >> 6)
                        sh = uint64(e & 63)
                        val = 0
                        for q in range(4):
                            word = U[(i * k + j) * W + q * limbs + wi]
                            if i != j:
                                word ^= U[(j * k + i) * W + q * limbs + wi]
                            val |= int64((word >> sh) & uint64(1)) << q
                        y[ell + e] ^= val
                    ell += 1
            for d in range(MPE - 1, m - 1, -1):     # z^(m+d) = z^d f_tail(z)
                yd = y[d]
                y[d - m] ^= gf16_mul(yd, f0)
                y[d - m + 1] ^= gf16_mul(yd, f1)
                y[d - m + 2] ^= gf16_mul(yd, f2)
                y[d - m + 3] ^= gf16_mul(yd, f3)
            same = 1
            for e in range(m):
                if y[e] != T[e]:
                    same = 0
            out[inst] = same

    return assemble, verify
