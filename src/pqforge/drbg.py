"""Randomness sources.

An rng in pqforge is any callable ``rng(n) -> bytes``. ``system_rng`` draws from the operating
system; ``NistCtrDrbg`` is the AES-256 CTR_DRBG (no derivation function, no prediction resistance)
that NIST's known-answer-test generators use as ``randombytes``, so a KAT seed reproduces the
official vectors exactly.
"""

import os
from collections.abc import Callable

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from .errors import require_bytes, InvalidInput


Rng = Callable[[int], bytes]
"""The type of an rng: n -> n random bytes."""


def system_rng(n: int) -> bytes:
    """n bytes from the operating system's CSPRNG."""
    return os.urandom(n)


class NistCtrDrbg:
    """AES-256 CTR_DRBG as in NIST's ``rng.c`` (``randombytes_init`` / ``randombytes``).

    ``NistCtrDrbg(entropy48)(n)`` returns the same bytes as ``randombytes`` after
    ``randombytes_init(entropy48, NULL, 256)``.
    """

    def __init__(self, entropy: bytes, personalization: bytes | None = None):
        entropy = require_bytes(entropy, "DRBG entropy input", 48)
        seed = entropy
        if personalization is not None:
            personalization = require_bytes(personalization, "DRBG personalization string", 48)
            seed = bytes(a ^ b for a, b in zip(entropy, personalization))
        self._key = bytes(32)
        self._v = 0
        self._update(seed)

    def _blocks(self, count: int) -> bytes:
        # Counter blocks V+1 .. V+count (big-endian, mod 2^128) encrypted in one ECB call.
        blocks = b"".join(((self._v + i) % (1 << 128)).to_bytes(16, "big") for i in range(1, count + 1))
        self._v = (self._v + count) % (1 << 128)
        enc = Cipher(algorithms.AES(self._key), modes.ECB()).encryptor()
        return enc.update(blocks) + enc.finalize()

    def _update(self, provided: bytes | None) -> None:
        temp = self._blocks(3)
        if provided is not None:
            temp = bytes(a ^ b for a, b in zip(temp, provided))
        self._key = temp[:32]
        self._v = int.from_bytes(temp[32:], "big")

    def random_bytes(self, n: int) -> bytes:
        if not isinstance(n, int) or n < 0:
            raise InvalidInput(f"number of random bytes must be a non-negative int, got {n!r}")
        out = self._blocks((n + 15) // 16)[:n]
        self._update(None)
        return out

    __call__ = random_bytes
