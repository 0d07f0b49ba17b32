"""The big GF(16) products of MAYO as binary matrix products (GEMMs), for same-key batches.

GF(16) = GF(2)[x]/(x^4 + x + 1) is a 4-dimensional GF(2)-space, and multiplying by a scalar s is
GF(2)-linear: s * P = sum_t s_t (x^t P) with s_t the bits of s. So for a fixed matrix of
m-vectors P (a, b), prepared once per key as the binary matrix

    K[(a, t), (b, q, e)] = bit q of element e of x^t P[a, b]          (4 J rows, C*4*m columns)

the products out[r, b] = sum_a s_r[a] P[a, b] of a whole batch of scalar vectors s_r are one
binary product (S_bits @ K) mod 2, with S_bits[r, (a, t)] = bit t of s_r[a]. Every GEMM here
multiplies 0/1 matrices whose integer sums stay at most 2048 (the bound is given at each GEMM),
so a floating-point GEMM (fp16 inputs and output on a GPU, fp32 on the CPU, both exact on such
integers) followed by the parity (0/1 again in the GEMM dtype, ready for the next GEMM) is the
exact GF(2) result.

Verification, all on the array module: PS_i = s_i^T P (for the whole chunk at once, in column
blocks of the upper-triangular P that skip its zero rows), U[i, j] = s_i^T P s_j (a batched GEMM,
one small product per signature), then the whip y = sum_ell z^ell (U[i, j] + U[j, i]) mod f(z),
which is GF(2)-linear in the bits of U: two fixed binary maps (``whip_matrices``), then the
comparison with the target t. About twenty array operations per chunk, whatever the set.
Signing: M_i = v_i^T L and U[i, j] = v_i^T P1 v_j the same way, handed to the host as bitsliced
words; the whip with its matrix A, the constant-time solve and the assembly run in the compiled
kernels on all cores, overlapped with the next chunk's hashing and GEMMs. Each function takes
``xp`` (numpy or cupy), so the same code runs on both. Secret in signing: the vinegar bits and
every product (only dense arithmetic, no data-driven branches or indices); the prepared key
matrices of L and P1 too.
"""

from __future__ import annotations

import threading
import weakref
from functools import lru_cache

import numba as nb
import numpy as np

from ..gf16 import unbitslice
from ..jit.cache import JIT_CACHE
from .engine import pool
from .engine.backends import OneKeyBackend, array_module, device_memory
from . import batch_data, kernels, scheme


def x_powers_bits(elements, xp):
    """(..., m) elements -> (..., 4, 4, m) bits: [..., t, q, e] = bit q of x^t * element e."""
    b = [(elements >> q) & 1 for q in range(4)]
    out = []
    for _ in range(4):
        out.append(xp.stack(b, axis=-2))
        b = [b[3], b[0] ^ b[3], b[1], b[2]]         # multiply by x: x^4 = x + 1
    return xp.stack(out, axis=-3).astype(xp.uint8)


def key_matrix(words: np.ndarray, m: int, xp=np, dtype=np.float32, coefficient_major: bool = False):
    """K (4 J, C * 4 m) for a bitsliced matrix of m-vectors (J, C, W), on the array module xp.

    Columns (c, q, e) by default; with ``coefficient_major`` (e, c, q), so that a row of the
    product, reshaped (m, 4 C), is the left operand of the pair products without a transpose.
    """
    J, C, _ = words.shape
    e = xp.asarray(unbitslice(words, m))                 # (J, C, m)
    bits = x_powers_bits(e, xp)                         # (J, C, 4t, 4q, m)
    order = (0, 2, 4, 1, 3) if coefficient_major else (0, 2, 1, 3, 4)
    return xp.ascontiguousarray(bits.transpose(order).reshape(4 * J, C * 4 * m)).astype(dtype)


def scalar_bits(s, xp, dtype=np.float32):
    """(..., J) elements -> (..., 4 J) bits, [..., (a, t)] = bit t of s[..., a]."""
    return xp.stack([(s >> t) & 1 for t in range(4)], axis=-1).reshape(s.shape[:-1] + (4 * s.shape[-1],)).astype(dtype)


def scalar_powers(s, xp, dtype=np.float32):
    """(R, k, J) scalars -> (R, 4 J, 4 k) bits, [r, (b, t), (q, j)] = bit q of x^t s[r, j, b]."""
    R, k, J = s.shape
    return x_powers_bits(s, xp).transpose(0, 4, 2, 3, 1).reshape(R, 4 * J, 4 * k).astype(dtype)


def parity(x, xp):
    """Integer-valued floats -> their parity, in place and in the same dtype (0.0 or 1.0).

    One ``fmod`` pass on a GPU; on numpy, whose fmod is a libm call per element (twenty times
    slower), x - 2 floor(x / 2) in four streaming passes. Both exact on these integers.
    """
    if xp is not np:
        return xp.fmod(x, 2, out=x)
    h = x * 0.5
    np.floor(h, out=h)
    h += h
    x -= h
    return x


def left_products(s, K, C: int, m: int, xp, dtype=np.float32):
    """out[..., c, q, e] bits of sum_a s[..., a] P[a, c] for the prepared K of P: uint8 (..., C, 4, m)."""
    Sb = scalar_bits(s, xp, dtype)
    lead = Sb.shape[:-1]
    prod = parity(Sb.reshape(-1, Sb.shape[-1]) @ K, xp)
    return prod.astype(xp.uint8).reshape(lead + (C, 4, m))


TRIANGLE_BLOCKS = 4
"""Column blocks of an upper-triangular key (P, P1): block [lo, hi) needs rows a < hi only, so
four equal blocks do 5/8 of the dense products (eight: 9/16, for twice the launches)."""


def triangle_blocks(dense: np.ndarray, m: int, xp=np, dtype=np.float32, count: int = TRIANGLE_BLOCKS):
    """[(lo, hi, K)]: coefficient-major key matrices of the columns lo..hi-1 of an upper-triangular
    (J, J, W) matrix of m-vectors, rows 0..hi-1 (the rows below are zero in those columns)."""
    J = dense.shape[0]
    edges = np.linspace(0, J, count + 1).round().astype(int)
    return [(lo, hi, key_matrix(dense[:hi, lo:hi], m, xp, dtype, coefficient_major=True))
            for lo, hi in zip(edges[:-1], edges[1:]) if hi > lo]


def pair_products(S, blocks, m: int, xp, dtype=np.float32):
    """Bits of U[r, i, j] = s_i^T P s_j as (R, k, m, 4, k), [r, i, e, q, j] = bit q of U[r, i, j][e].

    S: (R, k, J) scalars; blocks: ``triangle_blocks`` of P. Per block, the columns of PS = S P
    for the whole chunk (one GEMM), then per signature PS_i[b] * s_j[b] summed over the block's b
    (a batched GEMM whose right operand carries the x-powers of the few scalars, so the large
    operand PS is read as it comes out of the first GEMM), accumulated over the blocks. Sums:
    at most 4 J in both (before the last parity, over all blocks together).
    """
    R, k, J = S.shape
    Sb = scalar_bits(S, xp, dtype).reshape(R * k, 4 * J)
    X = scalar_powers(S, xp, dtype)                                         # [r, (b, t), (q, j)]
    U = None
    for lo, hi, K in blocks:
        PS = parity(Sb[:, :4 * hi] @ K, xp).reshape(R, k * m, 4 * (hi - lo))   # [r, (i, e), (b, t)]
        part = xp.matmul(PS, X[:, 4 * lo:4 * hi])                               # [r, (i, e), (q, j)]
        if U is None:
            U = part
        else:
            U += part
    return parity(U, xp).reshape(R, k, m, 4, k)


def bits_to_elements(bits, xp):
    """(..., 4, m) bits -> (..., m) elements."""
    bits = bits.astype(xp.uint8)
    return (bits[..., 0, :] | (bits[..., 1, :] << 1) | (bits[..., 2, :] << 2) | (bits[..., 3, :] << 3)).astype(xp.uint8)


def element_bits(e, xp):
    """(..., m) elements -> (..., 4, m) bits (uint8)."""
    return xp.stack([(e >> q) & 1 for q in range(4)], axis=-2).astype(xp.uint8)


def pair_elements(U_bits, xp):
    """Pair-product bits (R, k, m, 4, k) -> U (R, k, k, m) elements, U[r, i, j]."""
    return bits_to_elements(U_bits.transpose(0, 1, 4, 3, 2), xp)


@lru_cache(maxsize=None)
def _whip_matrices_host(p):
    """(Z, F) as uint8 on the host; see ``whip_matrices``."""
    k, m, E = p.k, p.m, p.pairs
    if E + 3 > m:   # z^(m+d) = z^d f_tail(z) must land below z^m (true for every MAYO set)
        raise ValueError(f"{p.name}: one reduction pass needs k(k+1)/2 + 3 <= m")
    ell = np.zeros((k, k), np.int64)            # ell of the pair {i, j}: i ascending, j descending
    pos = 0
    for i in range(k):
        for j in range(k - 1, i - 1, -1):
            ell[i, j] = ell[j, i] = pos
            pos += 1
    e = np.arange(m)
    Z = np.zeros((k, k, m, m + E), np.uint8)    # U[i, j][e] -> coefficient ell + e of z^ell u_ell
    for i in range(k):
        for j in range(k):
            Z[i, j, e, ell[i, j] + e] = 1
    F = np.zeros((4, m + E, 4, m), np.uint8)    # bit t of coefficient c -> bits of x^t z^c mod f
    for t in range(4):
        F[t, e, t, e] = 1
    tail = x_powers_bits(np.array(p.f_tail, np.uint8), np)      # [t, q, u] = bit q of x^t f_tail[u]
    for d in range(E):
        F[:, m + d, :, d:d + 4] = tail                           # z^(m+d) = z^d f_tail(z)
    return Z.reshape(k * k * m, m + E), F.reshape(4 * (m + E), 4 * m)


def whip_matrices(p, xp=np, dtype=np.float32):
    """The whip as two binary maps (Z, F), built once per parameter set (public constants).

    y = sum_ell z^ell (U[i, j] + U[j, i]) mod f(z) is GF(2)-linear in the bits of U, and keeps
    bit planes apart until the reduction, so it factors into
    Z (k k m, m + E): per bit plane, U[i, j][e] -> coefficient ell(i, j) + e of the unreduced
    sum (a column has one entry per ordered pair: sums <= k^2 <= 144), and
    F (4 (m + E), 4 m): bit t of coefficient c -> the bits of x^t z^c mod f(z) (a column has at
    most 1 + 4 * 4 entries: its own coefficient, and 4 bits of each of the 4 high coefficients
    that reduce onto it). One dense map for all of it would need sums up to 4 k^2 m (~80000 for
    MAYO-5), past fp16's exact range, and 4x the products.
    """
    Z, F = _whip_matrices_host(p)
    return xp.asarray(Z).astype(dtype), xp.asarray(F).astype(dtype)


def whip_bits(U_bits, Z, F, xp):
    """y bits (R, 4 m), [r, (q, e)], of the whip of U given as pair-product bits (R, k, m, 4, k)."""
    R, k, m = U_bits.shape[:3]
    planes = U_bits.transpose(0, 3, 1, 4, 2).reshape(4 * R, k * k * m)     # [(r, q), (i, j, e)]
    ext = parity(planes @ Z, xp)                                           # [(r, q), c]
    return parity(ext.reshape(R, -1) @ F, xp)                             # [r, (q, e)]


def words_on_host(bits, limbs: int, xp) -> np.ndarray:
    """(..., 4, m) bits -> (..., 4 limbs) uint64 on the host, the bitsliced layout of ``gf16``.

    Bytes are packed where the bits are (a weighted sum: no branches), so the transfer is a byte
    per eight bits, and the host only reinterprets them as little-endian words.
    """
    lead, m = bits.shape[:-2], bits.shape[-1]
    padded = xp.zeros(lead + (4, 64 * limbs), xp.uint8)
    padded[..., :m] = bits
    weights = xp.asarray(np.array([1, 2, 4, 8, 16, 32, 64, 128], np.uint8))
    packed = (padded.reshape(lead + (4, 8 * limbs, 8)) * weights).sum(axis=-1, dtype=xp.uint8)
    host = np.ascontiguousarray(_host(packed))
    return host.view("<u8").reshape(lead + (4 * limbs,))


def _host(a) -> np.ndarray:
    return a.get() if hasattr(a, "get") else a


def nibbles(raw, count: int, xp):
    """(R, nbytes) nibble-packed bytes -> (R, count) elements (low nibble first), on xp."""
    return xp.stack([raw & 15, raw >> 4], axis=-1).reshape(raw.shape[0], -1)[:, :count]


class PreparedPublicKey:
    """The key matrix of P and the whip maps for tensor verification (built once; ``xp`` numpy or cupy)."""

    def __init__(self, p, P_words: np.ndarray, xp=np, dtype=np.float32):
        """``P_words``: the expanded public key's P, packed upper triangular (as scheme keeps it)."""
        self.p, self.xp, self.dtype = p, xp, dtype
        self.blocks = triangle_blocks(scheme.dense_upper(P_words, p.n), p.m, xp, dtype)
        self.Z, self.F = whip_matrices(p, xp, dtype)

    def evaluate(self, S):
        """U (R, k, k, m) elements: U[r, i, j] = s_i^T P s_j for signature vectors S (R, k, n)."""
        xp = self.xp
        return pair_elements(pair_products(xp.asarray(S), self.blocks, self.p.m, xp, self.dtype), xp)

    def verify(self, S, T):
        """Verdicts for signature vectors S (R, k, n) and targets T (R, m), on xp."""
        xp = self.xp
        y = whip_bits(pair_products(xp.asarray(S), self.blocks, self.p.m, xp, self.dtype), self.Z, self.F, xp)
        t = element_bits(xp.asarray(T), xp).reshape(y.shape)
        return xp.all(y == t, axis=1)


class PreparedSecretKey:
    """The key matrices of L and P1 for tensor signing (secret; built once per key)."""

    def __init__(self, p, L_words: np.ndarray, P1_words: np.ndarray, xp=np, dtype=np.float32):
        """``P1_words``: the expanded secret key's P1, packed upper triangular."""
        self.p, self.xp, self.dtype = p, xp, dtype
        self.KL = key_matrix(L_words, p.m, xp, dtype)                                   # (4 v, o 4 m)
        self.P1_blocks = triangle_blocks(scheme.dense_upper(P1_words, p.v), p.m, xp, dtype)

    def secret_arrays(self) -> list:
        """The matrices made from the secret key, for zeroing when its key object closes."""
        return [self.KL, *(K for _, _, K in self.P1_blocks)]

    def _bits(self, V):
        """(bits of M_i = v_i^T L (R, k, o, 4, m), pair-product bits of v_i^T P1 v_j)."""
        p, xp = self.p, self.xp
        V = xp.asarray(V)
        return (left_products(V, self.KL, p.o, p.m, xp, self.dtype),
                pair_products(V, self.P1_blocks, p.m, xp, self.dtype))

    def products(self, V):
        """(M, U) for vinegar vectors V (R, k, v): M (R, k, o, m) = v_i^T L, U (R, k, k, m) = v_i^T P1 v_j."""
        M, U = self._bits(V)
        return bits_to_elements(M, self.xp), pair_elements(U, self.xp)

    def words(self, V):
        """(M, U) as bitsliced words on the host: (R, k, o, W) and (R, k, k, W) uint64."""
        M, U = self._bits(V)
        limbs = self.p.limbs
        return words_on_host(M, limbs, self.xp), words_on_host(U.transpose(0, 1, 4, 3, 2), limbs, self.xp)


# -- whole batches -------------------------------------------------------------------------------

DEVICE_HASH_MIN = 1024
"""Smallest batch whose targets are hashed on the GPU, where the two SHAKE256 launches and their
copies (a fixed cost) are outweighed by hashlib's per-element cost: 65536 MAYO-2 targets took
43 ms on an H200 against 270 ms with hashlib on its host. The break-even was not measured; 1024
is a conservative guess."""


def default_chunk(p, xp, dtype=np.float16) -> int:
    """Signatures per chunk in verification: 256 on numpy; on a GPU as many as keep PS, the
    largest operand (k m 4 n entries per signature), near 2 GiB (it is built a block at a time)."""
    if xp is np:
        return 256
    return max(1, (2 << 30) // (p.k * p.m * 4 * p.n * np.dtype(dtype).itemsize))


def _targets_on_device(p, messages, salts: np.ndarray) -> np.ndarray:
    """t bytes (R, m_bytes) hashed on the GPU: SHAKE256(SHAKE256(M, digest) || salt, m_bytes)."""
    from .cuda import keccak
    digests = keccak.shake256_many(list(messages), p.digest_bytes)
    return keccak.shake256_many(list(np.ascontiguousarray(np.concatenate([digests, salts], axis=1))), p.m_bytes)


def verify_batch(p, prepared: PreparedPublicKey, messages, sigs, chunk: int | None = None) -> np.ndarray:
    """Verdicts for well-formed signatures under one prepared key, ``chunk`` signatures per GEMM
    (``default_chunk`` when None).

    The targets are hashed on the host with numpy, and on the GPU (``keccak``) with cupy from
    ``DEVICE_HASH_MIN`` signatures on; the signatures are decoded where the GEMMs run, and the
    verdicts come back once, so the chunks queue on the device without waiting for each other.
    """
    xp = prepared.xp
    count = len(sigs)
    if count == 0:
        return np.zeros(0, bool)
    chunk = chunk or default_chunk(p, xp, prepared.dtype)
    raw = np.frombuffer(b"".join(sigs), np.uint8).reshape(count, p.sig_bytes)
    if xp is np or count < DEVICE_HASH_MIN:
        T = xp.asarray(batch_data.targets(p, messages, [s[p.sig_bytes - p.salt_bytes:] for s in sigs]))
    else:
        T = nibbles(xp.asarray(_targets_on_device(p, messages, raw[:, p.sig_bytes - p.salt_bytes:])), p.m, xp)
    body = xp.asarray(np.ascontiguousarray(raw[:, :(p.k * p.n + 1) // 2]))
    verdicts = [prepared.verify(nibbles(body[lo:lo + chunk], p.k * p.n, xp).reshape(-1, p.k, p.n), T[lo:lo + chunk])
                for lo in range(0, count, chunk)]
    return np.asarray(_host(xp.concatenate(verdicts)), bool)


def sign_batch(p, esk, prepared: PreparedSecretKey, messages, randomness, chunk: int = 256,
               threads: int | None = None) -> list[bytes]:
    """Signatures in chunks of ``chunk`` messages (see ``sign_chunk``), pipelined: while the
    threads finish one chunk, the main thread hashes the next and runs its GEMMs. A chunk's
    tail starts once the previous one is collected, so at most ``threads`` threads work."""
    out, pending = [], None
    for lo in range(0, len(messages), chunk):
        prepared_chunk = _SignChunk(p, esk, prepared, messages[lo:lo + chunk], randomness[lo:lo + chunk], threads)
        if pending is not None:
            out += pending.result()
        pending = prepared_chunk.start()
    return out + (pending.result() if pending is not None else [])


def sign_chunk(p, esk, prepared: PreparedSecretKey, messages, randomness, threads=None) -> list[bytes]:
    """Signatures with the salt randomness given per message: the same bytes as ``scheme.sign``.

    The products run as GEMMs; the whip, the constant-time solve and the assembly run in the
    compiled kernels on ``threads`` threads (all cores by default). A first attempt without
    full rank falls back to ``scheme.sign``.
    """
    return _SignChunk(p, esk, prepared, messages, randomness, threads).start().result()


@nb.njit(nogil=True, cache=JIT_CACHE)
def _finish_chunk(Mw, Uw, T, R, V, O, f_tail, n, S, ok, units):
    """Per element: the whip (y = t - sum z^ell u, and A), SampleSolution and s = (v + O x, x).

    ok[b]: the public rank bit. Secret: everything else; it passes only through the
    constant-time kernels of ``mayo.kernels``. Runs without the GIL.
    """
    B, k, o = Mw.shape[0], Mw.shape[1], Mw.shape[2]
    x = np.zeros(k * o, np.uint8)
    for b in range(B):
        ok[b] = kernels.whip_and_solve(Uw[b], Mw[b], T[b], R[b], f_tail, x, units)
        kernels.assemble_signature(V[b], O, x, n, S[b])


class _SignChunk:
    """One chunk of signing: hashing and the GEMMs on construction, the tail handed to the
    thread pool by ``start()``, the signatures collected by ``result()``."""

    def __init__(self, p, esk, prepared: PreparedSecretKey, messages, randomness, threads=None):
        self.p, self.esk, self.messages, self.randomness = p, esk, messages, randomness
        self.threads = pool.check_threads(threads)
        self.salts, self.T, self.V, self.R = batch_data.signing_inputs(p, messages, randomness, [esk.seed_sk])
        self.Mw, self.Uw = prepared.words(self.V)
        self.S = np.zeros((len(messages), p.k * p.n), np.uint8)
        self.ok = np.zeros(len(messages), np.bool_)

    def start(self) -> "_SignChunk":
        f_tail = np.array(self.p.f_tail, np.int64)
        Mw, Uw, T, R, V, S, ok, O = self.Mw, self.Uw, self.T, self.R, self.V, self.S, self.ok, self.esk.O
        units = kernels.units()

        def work(lo, hi):
            _finish_chunk(Mw[lo:hi], Uw[lo:hi], T[lo:hi], R[lo:hi], V[lo:hi], O, f_tail, self.p.n, S[lo:hi], ok[lo:hi],
                          units)

        self.parts = pool.start_chunks(work, len(self.messages), self.threads)
        return self

    def result(self) -> list[bytes]:
        pool.finish_chunks(self.parts)
        out: list = [None] * len(self.messages)
        batch_data.finish_signatures(self.p, range(len(self.messages)), self.S, self.ok, self.salts,
                                     self.messages, self.randomness, out, lambda row: self.esk)
        return out


# -- the tensor path as a backend of single-key calls --------------------------------------------

_prepared = weakref.WeakKeyDictionary()   # key object -> {array module name: prepared key matrix}
_prepared_lock = threading.Lock()


def _prepared_key(owner, backend: str, build):
    """The key matrix of ``owner`` for this backend, built once per key object (kept while it lives)."""
    xp, dtype = array_module(backend)
    with _prepared_lock:
        slot = _prepared.setdefault(owner, {})
    if xp.__name__ not in slot:
        slot[xp.__name__] = build(xp, dtype)
    return slot[xp.__name__]


def forget_prepared(owner) -> list:
    """Drop the matrices prepared for the key object ``owner``; returns the secret ones among
    them, for the key object to zero."""
    with _prepared_lock:
        slot = _prepared.pop(owner, None)
    return [a for m in (slot or {}).values() if isinstance(m, PreparedSecretKey) for a in m.secret_arrays()]


class TensorPath(OneKeyBackend):
    """``path="tensor"`` of single-key calls on the backend ``name``: numpy (fp32) on "cpu", CuPy
    (fp16) on "cuda"; each key object's matrix prepared once and kept while the object lives."""

    def __init__(self, name: str):
        self.name = name

    def verify_one_key(self, p, key, messages, sigs, good, out, threads) -> None:
        with device_memory(self.name, len(good)):
            prepared = _prepared_key(key, self.name, lambda xp, dt: PreparedPublicKey(p, key.expanded().P, xp, dt))
            out[good] = verify_batch(p, prepared, [messages[j] for j in good], [sigs[j] for j in good])

    def sign_one_key(self, p, key, messages, randomness, out, threads) -> None:
        esk = key.expanded()
        with device_memory(self.name, len(messages)):
            prepared = _prepared_key(key, self.name, lambda xp, dt: PreparedSecretKey(p, esk.L, esk.P1, xp, dt))
            out[:] = sign_batch(p, esk, prepared, messages, randomness, threads=threads)
