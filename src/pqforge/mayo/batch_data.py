"""Host side of a MAYO batch element: hashing, and bytes to and from the kernels' arrays.

Shared by every backend that runs the final steps on the CPU (the bitsliced CPU backend and the
tensor path): the targets and vinegar of each element as the specification hashes them, the
signature vectors of a signature, and the signature bytes from a solution.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidKey
from ..gf16.kernels import stream_words
from . import scheme
from .kernels import batch as batch_kernels
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
    """t = Decode(SHAKE256(SHAKE256(M) || salt)) for each element, (B, m) (``batch_kernels.targets``)."""
    data, offsets = joined(messages)
    salt_rows = np.frombuffer(b"".join(salts), np.uint8).reshape(len(salts), p.salt_bytes)
    T = np.empty((len(messages), p.m), np.uint8)
    batch_kernels.targets(data, offsets, salt_rows, p.digest_bytes, T)
    return T


def signature_vectors(p: MayoParams, sigs) -> np.ndarray:
    """The vectors s_1..s_k of each signature, (B, k, n)."""
    body = (p.k * p.n + 1) // 2
    raw = np.frombuffer(b"".join(s[:body] for s in sigs), np.uint8).reshape(-1, body)
    return np.ascontiguousarray(nibbles_rows(raw, p.k * p.n).reshape(-1, p.k, p.n))


def verification_arrays(p: MayoParams, messages, sigs, idx):
    """(data, offsets, signatures) of the elements idx, as the compiled verification loops take
    them: the messages joined (message b is data[offsets[b]:offsets[b+1]]) and the well-formed
    signatures as rows of bytes."""
    data, offsets = joined([messages[j] for j in idx])
    rows = np.frombuffer(b"".join([sigs[j] for j in idx]), np.uint8).reshape(len(idx), p.sig_bytes)
    return data, offsets, rows


def joined(messages):
    """(data, offsets): the messages as one byte array, message b at data[offsets[b]:offsets[b+1]]."""
    offsets = np.zeros(len(messages) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, messages), np.int64, len(messages)), out=offsets[1:])
    return np.frombuffer(b"".join(messages) + b"\0", np.uint8), offsets


def signing_inputs(p: MayoParams, messages, randomness, seeds, first=None):
    """Per element (message, salt randomness): the salt, t, the vinegar vectors V (k, v) and r of
    the first attempt, hashed as the specification does (``batch_kernels.signing_hashes``), under
    the secret seed seeds[q] for the elements first[q] .. first[q+1]-1 (``first`` None: one seed
    for all). Returns (salts (B, salt_bytes), T, V, R)."""
    size = len(messages)
    data, offsets = joined(messages)
    rand = np.frombuffer(b"".join(randomness), np.uint8).reshape(size, p.salt_bytes)
    seed_rows = np.frombuffer(b"".join(seeds), np.uint8).reshape(len(seeds), p.sk_seed_bytes)
    key_of = np.zeros(size, np.int64) if first is None else np.repeat(np.arange(len(seeds)), np.diff(first))
    salts = np.empty((size, p.salt_bytes), np.uint8)
    T = np.empty((size, p.m), np.uint8)
    V = np.empty((size, p.k, p.v), np.uint8)
    R = np.empty((size, p.k * p.o), np.uint8)
    batch_kernels.signing_hashes(data, offsets, rand, seed_rows, key_of, p.digest_bytes, salts, T, V, R)
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
    signatures = np.concatenate([pack_rows(S), salts], axis=1)
    for row, j in enumerate(idx):
        if ok[row]:
            out[j] = signatures[row].tobytes()
        else:
            try:
                out[j] = scheme.sign(p, esk_of(row), messages[j], replay(randomness[j]))
            except InvalidKey as exc:
                raise InvalidKey(f"element {j}: {exc}") from None


def seed_slots(p: MayoParams, seeds):
    """(seed_pks, P1 || P2 of each seed in the GFNI kernels' slots (K, slot words), oil matrices
    as encoded (K, O_bytes) and as elements (K, v, o)) of secret seeds."""
    count = p.v * (p.v + 1) // 2 + p.v * p.o
    slots = np.empty((len(seeds), count * p.words), np.uint64)
    oils = np.empty((len(seeds), p.O_bytes), np.uint8)
    O = np.empty((len(seeds), p.v, p.o), np.uint8)
    seed_pks = []
    for q, seed in enumerate(seeds):
        seed_pk, o_bytes = scheme.seed_expansion(p, seed)
        slots[q] = scheme.public_slots(p, seed_pk)
        oils[q] = np.frombuffer(o_bytes, np.uint8)
        O[q] = scheme.decode_oil(p, o_bytes)
        seed_pks.append(seed_pk)
    return seed_pks, slots, oils, O


def seed_streams(p: MayoParams, seeds):
    """(seed_pks, keystreams of P1 || P2 (K, words), oil matrices (K, v, o)) of secret seeds."""
    streams = np.zeros((len(seeds), stream_words(p.P1_bytes + p.P2_bytes)), np.uint64)
    O = np.empty((len(seeds), p.v, p.o), np.uint8)
    seed_pks = []
    for q, seed in enumerate(seeds):
        seed_pk, o_bytes = scheme.seed_expansion(p, seed)
        scheme.public_stream(p, seed_pk, streams[q])
        O[q] = scheme.decode_oil(p, o_bytes)
        seed_pks.append(seed_pk)
    return seed_pks, streams, O
