"""The big GF(16) products of MAYO as binary matrix products (GEMMs), for same-key batches.

GF(16) = GF(2)[x]/(x^4 + x + 1) is a 4-dimensional GF(2)-space, and multiplying by a scalar s is
GF(2)-linear: s * P = sum_t s_t (x^t P) with s_t the bits of s. So for a fixed matrix of
m-vectors P (a, b), prepared once per key as the binary matrix

    K[(a, t), (b, q, e)] = bit q of element e of x^t P[a, b]          (4 J rows, C*4*m columns)

the products out[r, b] = sum_a s_r[a] P[a, b] of a whole batch of scalar vectors s_r are one
binary product (S_bits @ K) mod 2, with S_bits[r, (a, t)] = bit t of s_r[a]. The sums are at
most 4 J <= 616 < 2048, so a floating-point GEMM (fp16 inputs on a GPU, fp32 on the CPU, both
exact on such integers) followed by the parity gives the exact GF(2) result.

Verification: PS_i = s_i^T P (one GEMM with the key matrix, all signatures and i at once), then
U[i, j] = s_j^T PS_i (a batched GEMM, one small product per signature), then the z^ell
combination modulo f(z) and the comparison with t. Signing: M_i = v_i^T L and v_i^T P1 (one GEMM
with [L | P1]), then U[i, j] = v_i^T P1 v_j (batched); the linear solve and the rest stay in the
bitsliced kernels. Each function takes ``xp`` (numpy or cupy), so the same code runs on both.
Secret in signing: the vinegar bits and every product (only dense arithmetic, no data-driven
branches or indices); the prepared key matrix of L and P1 is secret too.
"""

from __future__ import annotations

import numpy as np

from ..gf16 import unbitslice
from ..mayo import scheme


def x_powers_bits(elements, xp):
    """(..., m) elements -> (..., 4, 4, m) bits: [..., t, q, e] = bit q of x^t * element e."""
    b = [(elements >> q) & 1 for q in range(4)]
    out = []
    for _ in range(4):
        out.append(xp.stack(b, axis=-2))
        b = [b[3], b[0] ^ b[3], b[1], b[2]]         # multiply by x: x^4 = x + 1
    return xp.stack(out, axis=-3).astype(xp.uint8)


def key_matrix(words: np.ndarray, m: int, xp=np, dtype=np.float32):
    """K (4 J, C * 4 m) for a bitsliced matrix of m-vectors (J, C, W), on the array module xp."""
    J, C, _ = words.shape
    e = xp.asarray(unbitslice(words, m))                 # (J, C, m)
    bits = x_powers_bits(e, xp)                         # (J, C, 4t, 4q, m)
    return xp.ascontiguousarray(bits.transpose(0, 2, 1, 3, 4).reshape(4 * J, C * 4 * m)).astype(dtype)


def scalar_bits(s, xp, dtype=np.float32):
    """(..., J) elements -> (..., 4 J) bits, [..., (a, t)] = bit t of s[..., a]."""
    return xp.stack([(s >> t) & 1 for t in range(4)], axis=-1).reshape(s.shape[:-1] + (4 * s.shape[-1],)).astype(dtype)


def parity(x, xp):
    """Exact integer-valued floats (or ints) -> their parity as uint8."""
    return (xp.rint(x).astype(xp.int32) & 1).astype(xp.uint8)


def left_products(s, K, C: int, m: int, xp, dtype=np.float32):
    """out[..., c, q, e] bits of sum_a s[..., a] P[a, c] for the prepared K of P: shape (..., C, 4, m)."""
    Sb = scalar_bits(s, xp, dtype)
    lead = Sb.shape[:-1]
    prod = Sb.reshape(-1, Sb.shape[-1]) @ K
    return parity(prod, xp).reshape(lead + (C, 4, m))


def bits_to_elements(bits, xp):
    """(..., 4, m) bits -> (..., m) elements."""
    return (bits[..., 0, :] | (bits[..., 1, :] << 1) | (bits[..., 2, :] << 2) | (bits[..., 3, :] << 3)).astype(xp.uint8)


def pair_products(S_left, PS_bits, xp, dtype=np.float32):
    """U[r, i, j] = sum_b S_left[r, j, b] * PS[r, i, b] as elements (R, k, k, m).

    PS_bits: (R, k, n, 4, m) bits of PS[r, i, b]; one batched GEMM per batch element.
    """
    R, k, n, _, m = PS_bits.shape
    ps = bits_to_elements(PS_bits, xp)                  # (R, k, n, m)
    Q = x_powers_bits(ps, xp)                           # (R, k, n, 4t, 4q, m)
    Q = Q.transpose(0, 2, 3, 1, 4, 5).reshape(R, 4 * n, k * 4 * m).astype(dtype)   # rows (b, t)
    Sb = scalar_bits(S_left, xp, dtype)                 # (R, k_j, 4 n)
    U = parity(xp.matmul(Sb, Q), xp).reshape(R, k, k, 4, m)                       # [r, j, i, q, e]
    return bits_to_elements(U, xp).transpose(0, 2, 1, 3)                          # [r, i, j, e]


def gf16_mul_vec(a, c: int, xp):
    """a * c for an array of elements a and a public constant c (shifts and masks)."""
    a = a.astype(xp.int32)
    p = xp.zeros_like(a)
    for t in range(4):
        if (c >> t) & 1:
            p ^= a << t
    top = p & 0x70
    return ((p ^ (top >> 4) ^ (top >> 3)) & 0xF).astype(xp.uint8)


def whip_y(U, m: int, f_tail, xp):
    """y[r] = sum_ell z^ell (U[r, i, j] + U[r, j, i]) mod f(z), ell over pairs i <= j (j descending)."""
    R, k = U.shape[0], U.shape[1]
    E = k * (k + 1) // 2
    y = xp.zeros((R, m + E), xp.uint8)
    ell = 0
    for i in range(k):
        for j in range(k - 1, i - 1, -1):
            u = U[:, i, j] if i == j else U[:, i, j] ^ U[:, j, i]
            y[:, ell:ell + m] ^= u
            ell += 1
    for d in range(m + E - 1, m - 1, -1):
        for t in range(4):
            y[:, d - m + t] ^= gf16_mul_vec(y[:, d], f_tail[t], xp)
    return y[:, :m]


class PreparedPublicKey:
    """The key matrix of P for tensor verification (built once; ``xp`` numpy or cupy)."""

    def __init__(self, p, P_words: np.ndarray, xp=np, dtype=np.float32):
        """``P_words``: the expanded public key's P, packed upper triangular (as scheme keeps it)."""
        self.p, self.xp, self.dtype = p, xp, dtype
        self.K = key_matrix(scheme.dense_upper(P_words, p.n), p.m, xp, dtype)     # (4 n, n 4 m)

    def evaluate(self, S):
        """U (R, k, k, m) elements: U[r, i, j] = s_i^T P s_j for signature vectors S (R, k, n)."""
        p, xp = self.p, self.xp
        S = xp.asarray(S)
        PS = left_products(S, self.K, p.n, p.m, xp, self.dtype)        # (R, k, n, 4, m)
        return pair_products(S, PS, xp, self.dtype)

    def verify(self, S, T):
        """Verdicts for signature vectors S (R, k, n) and targets T (R, m)."""
        xp = self.xp
        y = whip_y(self.evaluate(S), self.p.m, self.p.f_tail, xp)
        return xp.all(y == xp.asarray(T), axis=1)


class PreparedSecretKey:
    """The key matrix of [L | P1] for tensor signing (secret; built once per key)."""

    def __init__(self, p, L_words: np.ndarray, P1_words: np.ndarray, xp=np, dtype=np.float32):
        """``P1_words``: the expanded secret key's P1, packed upper triangular."""
        self.p, self.xp, self.dtype = p, xp, dtype
        P1 = scheme.dense_upper(P1_words, p.v)
        self.K = key_matrix(np.concatenate([L_words, P1], axis=1), p.m, xp, dtype)   # (4 v, (o + v) 4 m)

    def products(self, V):
        """(M, U) for vinegar vectors V (R, k, v): M (R, k, o, m) = v_i^T L, U (R, k, k, m) = v_i^T P1 v_j."""
        p, xp = self.p, self.xp
        V = xp.asarray(V)
        prod = left_products(V, self.K, p.o + p.v, p.m, xp, self.dtype)   # (R, k, o + v, 4, m)
        M = bits_to_elements(prod[:, :, :p.o], xp)
        VP1 = prod[:, :, p.o:]                                            # bits of v_i^T P1
        return M, pair_products(V, VP1, xp, self.dtype)


# -- whole batches (host hashing as in the CPU backend; the products as GEMMs) -------------------

def verify_batch(p, prepared: PreparedPublicKey, messages, sigs, chunk: int = 256) -> np.ndarray:
    """Verdicts for well-formed signatures under one prepared key, ``chunk`` signatures per GEMM."""
    from ..mayo import batch
    out = np.zeros(len(sigs), bool)
    for lo in range(0, len(sigs), chunk):
        part = sigs[lo:lo + chunk]
        S = batch.signature_vectors(p, part)
        T = batch.targets(p, messages[lo:lo + chunk], [s[p.sig_bytes - p.salt_bytes:] for s in part])
        ok = prepared.verify(S, T)
        out[lo:lo + len(part)] = np.asarray(ok.get() if hasattr(ok, "get") else ok, bool)
    return out


def sign_batch(p, esk, prepared: PreparedSecretKey, messages, randomness, chunk: int = 256) -> list[bytes]:
    """Signatures in chunks of ``chunk`` messages (see ``sign_chunk``)."""
    out = []
    for lo in range(0, len(messages), chunk):
        out += sign_chunk(p, esk, prepared, messages[lo:lo + chunk], randomness[lo:lo + chunk])
    return out


def sign_chunk(p, esk, prepared: PreparedSecretKey, messages, randomness) -> list[bytes]:
    """Signatures with the salt randomness given per message: the same bytes as ``scheme.sign``.

    The products run as GEMMs; the combination, the constant-time solve and the assembly run in
    the bitsliced CPU kernels. A first attempt without full rank falls back to ``scheme.sign``.
    """
    from ..gf16 import bitslice
    from ..mayo import batch, kernels
    from ..symmetric import shake256
    k, o, v, m = p.k, p.o, p.v, p.m
    vr_len = k * p.v_bytes + p.r_bytes
    digests = [shake256(msg, p.digest_bytes) for msg in messages]
    salts = [shake256(d + r + esk.seed_sk, p.salt_bytes) for d, r in zip(digests, randomness)]
    T = np.ascontiguousarray(batch.nibbles_rows(np.frombuffer(
        b"".join(shake256(d + s, p.m_bytes) for d, s in zip(digests, salts)), np.uint8).reshape(-1, p.m_bytes), m))
    raw = np.frombuffer(b"".join(shake256(d + s + esk.seed_sk + b"\x00", vr_len) for d, s in zip(digests, salts)),
                        np.uint8).reshape(-1, vr_len)
    V = np.ascontiguousarray(batch.nibbles_rows(raw[:, :k * p.v_bytes].reshape(-1, p.v_bytes), v).reshape(-1, k, v))
    R = np.ascontiguousarray(batch.nibbles_rows(raw[:, k * p.v_bytes:], k * o))
    M, U = prepared.products(V)
    if hasattr(M, "get"):
        M, U = M.get(), U.get()
    Mw = bitslice(M, p.limbs)                      # (B, k, o, W)
    Uw = bitslice(U, p.limbs)                      # (B, k, k, W)
    f_tail = np.array(p.f_tail, np.int64)
    out = []
    x = np.zeros(k * o, np.uint8)
    for b, msg in enumerate(messages):
        y = T[b].copy()
        A = np.zeros((m, k * o), np.uint8)
        kernels.whip(Uw[b], Mw[b], m, f_tail, y, A)
        if kernels.sample_solution(A, y, R[b], x):
            s = np.zeros(k * p.n, np.uint8)
            kernels.assemble_signature(V[b], esk.O, x, p.n, s)
            out.append(batch.pack_rows(s[None])[0].tobytes() + salts[b])
        else:
            out.append(scheme.sign(p, esk, msg, batch._replay(randomness[b])))
    return out
