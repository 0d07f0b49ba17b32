"""Key objects and algorithm objects for the Classic McEliece parameter sets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..algorithms import Algorithm, PrivateKey, PublicKey
from ..drbg import Rng
from ..errors import BytesLike
from . import scheme
from .params import Params


class McEliecePublicKey(PublicKey["McElieceAlgorithm"]):
    """A Classic McEliece public key: the matrix T, ``public_key_size`` bytes (261,120 to 1,357,824)."""

    __slots__ = ()

    def encapsulate(self, rng: Rng | None = None) -> tuple[bytes, bytes]:
        """(ciphertext, 32-byte shared secret). rng: callable n -> bytes, default os.urandom."""
        return scheme.encapsulate(self.algorithm.params, self._raw, rng)


class McEliecePrivateKey(PrivateKey["McElieceAlgorithm"]):
    """A Classic McEliece private key, ``private_key_size`` bytes (6,492 to 14,120).

    A context manager like the MAYO keys: ``close()``, or leaving ``with sk:``, makes the object
    unusable (later calls raise InvalidKey). The key is used in its encoding, a bytes object that
    Python cannot wipe, so the object keeps no expanded secret arrays to zero; decapsulation and
    recomputing the public key zero the secret arrays they make in Python (docs/api.md)."""

    __slots__ = ()

    def public_key(self) -> McEliecePublicKey:
        """The matching public key (recomputed from the private key once if it was loaded from bytes)."""
        self._check_open()
        if self._public is None:
            self._public = scheme.public_key_from_private(self.algorithm.params, self._raw)
        return McEliecePublicKey(self.algorithm, self._public)

    def decapsulate(self, ciphertext: BytesLike) -> bytes:
        """The 32-byte shared secret; a ciphertext that does not decode gives the implicit-rejection value."""
        self._check_open()
        return scheme.decapsulate(self.algorithm.params, self._raw, ciphertext)


class McElieceAlgorithm(Algorithm[Params]):
    """One Classic McEliece parameter set: sizes, NIST-API functions and key constructors."""

    kind = "kem"

    def __init__(self, params: Params):
        super().__init__(params, params.public_key_size, params.private_key_size)
        self.ciphertext_size = params.ciphertext_size
        self.shared_secret_size = params.shared_secret_size

    # NIST API
    def keypair(self, rng: Rng | None = None) -> tuple[bytes, bytes]:
        return scheme.keypair(self.params, rng)

    def encapsulate(self, pk: BytesLike, rng: Rng | None = None) -> tuple[bytes, bytes]:
        return scheme.encapsulate(self.params, pk, rng)

    def decapsulate(self, sk: BytesLike, ct: BytesLike) -> bytes:
        return scheme.decapsulate(self.params, sk, ct)

    # key objects
    def generate_private_key(self, rng: Rng | None = None) -> McEliecePrivateKey:
        pk, sk = scheme.keypair(self.params, rng)
        return McEliecePrivateKey(self, sk, pk)

    def private_key_from_bytes(self, data: BytesLike) -> McEliecePrivateKey:
        return McEliecePrivateKey(self, scheme.check_private_key(self.params, data))

    def public_key_from_bytes(self, data: BytesLike) -> McEliecePublicKey:
        return McEliecePublicKey(self, scheme.check_public_key(self.params, data))

    def benchmark_ops(self) -> dict[str, Callable[[], Any]]:
        pk, sk = self.keypair()
        ct, _ = self.encapsulate(pk)
        return {
            "keygen": lambda: self.keypair(),
            "encaps": lambda: self.encapsulate(pk),
            "decaps": lambda: self.decapsulate(sk, ct),
        }
