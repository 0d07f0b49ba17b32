"""Host side of a MAYO batch element: hashing, and bytes to and from the kernels' arrays.

Shared by every backend that runs the final steps on the CPU (the bitsliced CPU backend and the
tensor path): the targets and vinegar of each element as the specification hashes them, the
signature vectors of a signature, and the signature bytes from a solution.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidKey
from ..gf16.kernels import stream_words
from ..symmetric import shake256
from . import scheme
from .params import MayoParams


def nibbles_rows(rows: np.ndarray, count: int) -> np.ndarray:
    """(B, nbytes) nibble strings -> (B, count) elements."""
    out = np.empty((rows.shape[0], 2 * rows.shape[1]), np.uint8)
    out[:, 0::2] = rows & 0x0F
    out[:, 1::2] = rows >> 4
    return out[:, :count]


def pack_rows(elements: np.ndarray) -> np.ndarray:
    """(B, count) elements -> (B, ceil(count/2)) nibble-packed bytes."""
    B, count = elements.shape
    if count % 2:
        elements = np.concatenate([elements, np.zeros((B, 1), np.uint8)], axis=1)
    return (elements[:, 0::2] | (elements[:, 1::2] << 4)).astype(np.uint8)


def targets(p: MayoParams, messages, salts) -> np.ndarray:
    """t = Decode(SHAKE256(SHAKE256(M) || salt)) for each element, (B, m)."""
    digest_bytes, m_bytes = p.digest_bytes, p.m_bytes
    raw = b"".join(shake256(shake256(msg, digest_bytes) + salt, m_bytes) for msg, salt in zip(messages, salts))
    return np.ascontiguousarray(nibbles_rows(np.frombuffer(raw, np.uint8).reshape(-1, m_bytes), p.m))


def signature_vectors(p: MayoParams, sigs) -> np.ndarray:
    """The vectors s_1..s_k of each signature, (B, k, n)."""
    body = (p.k * p.n + 1) // 2
    raw = np.frombuffer(b"".join(s[:body] for s in sigs), np.uint8).reshape(-1, body)
    return np.ascontiguousarray(nibbles_rows(raw, p.k * p.n).reshape(-1, p.k, p.n))


def verification_arrays(p: MayoParams, messages, sigs, idx):
    """(data, offsets, signatures) of the elements idx, as the compiled verification loops take
    them: the messages joined (message b is data[offsets[b]:offsets[b+1]]) and the well-formed
    signatures as rows of bytes."""
    chosen = [messages[j] for j in idx]
    offsets = np.zeros(len(chosen) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, chosen), np.int64, len(chosen)), out=offsets[1:])
    data = np.frombuffer(b"".join(chosen) + b"\0", np.uint8)
    rows = np.frombuffer(b"".join([sigs[j] for j in idx]), np.uint8).reshape(len(idx), p.sig_bytes)
    return data, offsets, rows


def signing_inputs(p: MayoParams, messages, randomness, seeds):
    """Per element (message, salt randomness, seed_sk of its key): the salt, t, the vinegar
    vectors V (k, v) and r of the first attempt, as the specification hashes them.
    Returns (salts, T, V, R)."""
    k, o, v = p.k, p.o, p.v
    vr_len = k * p.v_bytes + p.r_bytes
    digests = [shake256(msg, p.digest_bytes) for msg in messages]
    salts = [shake256(d + rand + seed, p.salt_bytes) for d, rand, seed in zip(digests, randomness, seeds)]
    raw_t = b"".join(shake256(d + s, p.m_bytes) for d, s in zip(digests, salts))
    T = np.ascontiguousarray(nibbles_rows(np.frombuffer(raw_t, np.uint8).reshape(-1, p.m_bytes), p.m))
    raw_vr = np.frombuffer(b"".join(shake256(d + s + seed + b"\x00", vr_len)
                                    for d, s, seed in zip(digests, salts, seeds)), np.uint8).reshape(-1, vr_len)
    V = np.ascontiguousarray(nibbles_rows(raw_vr[:, :k * p.v_bytes].reshape(-1, p.v_bytes), v).reshape(-1, k, v))
    R = np.ascontiguousarray(nibbles_rows(raw_vr[:, k * p.v_bytes:], k * o))
    return salts, T, V, R


def replay(data: bytes):
    """An rng that returns ``data`` (drawn earlier for this element) to its one call."""
    def rng(n):
        assert n == len(data)
        return data
    return rng


def finish_signatures(p: MayoParams, idx, S, ok, salts, messages, randomness, out, esk_of):
    """out[j] = encoded s || salt for the elements j = idx[row] whose first attempt had full
    rank; the others (rare) go through ``scheme.sign`` with their expanded key ``esk_of(row)``,
    which retries as the specification does."""
    packed = pack_rows(S)
    for row, j in enumerate(idx):
        if ok[row]:
            out[j] = packed[row].tobytes() + salts[row]
        else:
            try:
                out[j] = scheme.sign(p, esk_of(row), messages[j], replay(randomness[j]))
            except InvalidKey as exc:
                raise InvalidKey(f"element {j}: {exc}") from None


def seed_streams(p: MayoParams, seeds):
    """(seed_pks, keystreams of P1 || P2 (K, words), oil matrices (K, v, o)) of secret seeds."""
    streams = np.zeros((len(seeds), stream_words(p.P1_bytes + p.P2_bytes)), np.uint64)
    O = np.empty((len(seeds), p.v, p.o), np.uint8)
    seed_pks = []
    for q, seed in enumerate(seeds):
        seed_pk, o_bytes = scheme._seed_expansion(p, seed)
        scheme.public_stream(p, seed_pk, streams[q])
        O[q] = scheme.decode_oil(p, o_bytes)
        seed_pks.append(seed_pk)
    return seed_pks, streams, O
