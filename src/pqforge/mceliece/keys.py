"""Key objects and algorithm objects for the Classic McEliece parameter sets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..drbg import Rng
from ..closable import ClosablePrivateKey
from ..errors import BytesLike, InvalidKey
from . import scheme
from .params import Params


class McEliecePublicKey:
    """A Classic McEliece public key: the matrix T, ``public_key_size`` bytes (261,120 to 1,357,824)."""

    __slots__ = ("_alg", "_raw")

    def __init__(self, alg: "McElieceAlgorithm", raw: bytes):
        self._alg = alg
        self._raw = raw

    @property
    def algorithm(self) -> "McElieceAlgorithm":
        return self._alg

    def encapsulate(self, rng: Rng | None = None) -> tuple[bytes, bytes]:
        """(ciphertext, 32-byte shared secret). rng: callable n -> bytes, default os.urandom."""
        return scheme.encapsulate(self._alg.params, self._raw, rng)

    def public_bytes_raw(self) -> bytes:
        """The key as the specification encodes it."""
        return self._raw

    def __eq__(self, other: object) -> bool:
        return isinstance(other, McEliecePublicKey) and other._alg is self._alg and other._raw == self._raw

    def __hash__(self) -> int:
        return hash((self._alg.name, self._raw[:64]))

    def __repr__(self) -> str:
        return f"<McEliecePublicKey {self._alg.name}>"


class McEliecePrivateKey(ClosablePrivateKey):
    """A Classic McEliece private key, ``private_key_size`` bytes (6,492 to 14,120).

    A context manager like the MAYO keys: ``close()``, or leaving ``with sk:``, makes the object
    unusable (later calls raise InvalidKey). The key is used in its encoding, a bytes object that
    Python cannot wipe, so the object keeps no expanded secret arrays to zero; decapsulation and
    recomputing the public key zero the secret arrays they make in Python (docs/api.md)."""

    __slots__ = ("_alg", "_raw", "_public", "_closed")

    def __init__(self, alg: "McElieceAlgorithm", raw: bytes, public: bytes | None = None):
        self._alg = alg
        self._raw = raw
        self._public = public
        self._closed = False

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidKey(f"this {self._alg.name} private key has been closed; load the key again to use it")

    @property
    def algorithm(self) -> "McElieceAlgorithm":
        return self._alg

    def public_key(self) -> McEliecePublicKey:
        """The matching public key (recomputed from the private key once if it was loaded from bytes)."""
        self._check_open()
        if self._public is None:
            self._public = scheme.public_key_from_private(self._alg.params, self._raw)
        return McEliecePublicKey(self._alg, self._public)

    def decapsulate(self, ciphertext: BytesLike) -> bytes:
        """The 32-byte shared secret; a ciphertext that does not decode gives the implicit-rejection value."""
        self._check_open()
        return scheme.decapsulate(self._alg.params, self._raw, ciphertext)

    def private_bytes_raw(self) -> bytes:
        """The key as the specification encodes it (delta, c, g, control bits, s)."""
        self._check_open()
        return self._raw

    def close(self) -> None:
        """Make this object unusable and drop its reference to the key's bytes (closing again does
        nothing). Those bytes are not wiped: Python cannot overwrite a bytes object."""
        self._closed = True
        self._raw = b""

    def __repr__(self) -> str:
        return f"<McEliecePrivateKey {self._alg.name}{' (closed)' if self._closed else ''}>"


class McElieceAlgorithm:
    """One Classic McEliece parameter set: sizes, NIST-API functions and key constructors."""

    kind = "kem"

    def __init__(self, params: Params):
        self.params = params
        self.name = params.name
        self.public_key_size = params.public_key_size
        self.private_key_size = params.private_key_size
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

    def warm_up(self) -> None:
        """Run every compiled path once, so that numba compiles and caches its kernels now."""
        for op in self.benchmark_ops().values():
            op()

    def __repr__(self) -> str:
        return f"<{self.name}>"
