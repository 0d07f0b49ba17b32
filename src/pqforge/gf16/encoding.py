"""Conversions at the byte boundary: nibble strings <-> element arrays <-> bitsliced words.

These are whole-array numpy operations without value-dependent branches or table look-ups, so
they are safe on secret data (the oil matrix, the vinegar values).
"""

from __future__ import annotations

import numpy as np


def decode_nibbles(data: bytes | np.ndarray, count: int) -> np.ndarray:
    """The first ``count`` GF(16) elements of a nibble string (low nibble first) as uint8."""
    raw = np.frombuffer(data, dtype=np.uint8) if isinstance(data, (bytes, bytearray)) else data
    out = np.empty(2 * raw.size, dtype=np.uint8)
    out[0::2] = raw & 0x0F
    out[1::2] = raw >> 4
    return out[:count]


def encode_nibbles(elements: np.ndarray) -> bytes:
    """Pack GF(16) elements two per byte (low nibble first); an odd length is padded with 0."""
    e = np.asarray(elements, dtype=np.uint8).ravel()
    if e.size % 2:
        e = np.concatenate([e, np.zeros(1, np.uint8)])
    return (e[0::2] | (e[1::2] << 4)).tobytes()


def bitslice(elements: np.ndarray, limbs: int) -> np.ndarray:
    """Elements of shape (..., length) -> bitsliced words of shape (..., 4 * limbs), uint64.

    Word ``p * limbs + w`` holds bit ``p`` of elements ``64 w .. 64 w + 63`` (element ``64 w + b``
    in bit ``b``).
    """
    e = np.asarray(elements, dtype=np.uint8)
    length = e.shape[-1]
    padded = np.zeros(e.shape[:-1] + (64 * limbs,), dtype=np.uint8)
    padded[..., :length] = e
    planes = np.stack([(padded >> p) & 1 for p in range(4)], axis=-2)  # (..., 4, 64*limbs)
    packed = np.packbits(planes, axis=-1, bitorder="little")           # (..., 4, 8*limbs)
    words = np.ascontiguousarray(packed).view("<u8")                    # (..., 4, limbs)
    return words.reshape(e.shape[:-1] + (4 * limbs,)).astype(np.uint64, copy=False)


def unbitslice(words: np.ndarray, length: int) -> np.ndarray:
    """Inverse of :func:`bitslice`: (..., 4 * limbs) uint64 -> (..., length) uint8 elements."""
    w = np.ascontiguousarray(words, dtype=np.uint64)
    limbs = w.shape[-1] // 4
    planes = w.reshape(w.shape[:-1] + (4, limbs)).view(np.uint8)       # (..., 4, 8*limbs)
    bits = np.unpackbits(planes, axis=-1, bitorder="little")[..., :length]
    return (bits[..., 0, :] | (bits[..., 1, :] << 1) | (bits[..., 2, :] << 2) | (bits[..., 3, :] << 3)).astype(np.uint8)
