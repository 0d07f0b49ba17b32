"""MAYO key objects in the style of pyca/cryptography.

    sk = MAYO2.generate_private_key()
    sig = sk.sign(b"data")
    sk.public_key().verify(sig, b"data")     # None, or raises InvalidSignature

A private key serialises only its compact form (the seed). Expanded keys (the decoded matrices)
are computed on first use and kept, so a key object that signs or verifies repeatedly pays for
expansion once. A private key is a context manager: leaving ``with sk:`` (or ``sk.close()``)
zeroes its expanded secret key in place, as collecting the object does; the compact seed is a
bytes object, which Python cannot wipe (docs/api.md, "Secret keys in memory").
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..algorithms import Algorithm, PrivateKey, PublicKey
from ..drbg import Rng
from .engine.inputs import checked_rng
from ..errors import BytesLike, InvalidKey, InvalidSignature, require_bytes
from . import api, batch, scheme
from .kernels import ahead
from .params import MayoParams


class MayoPublicKey(PublicKey["MayoAlgorithm"]):
    """A MAYO public key (compact form, ``public_key_size`` bytes: seed_pk || P3)."""

    def __init__(self, algorithm: "MayoAlgorithm", cpk: bytes):
        super().__init__(algorithm, cpk)
        self._expanded: scheme.ExpandedPublicKey | None = None

    def expanded(self) -> scheme.ExpandedPublicKey:
        if self._expanded is None:
            self._expanded = scheme.expand_pk(self.algorithm.params, self._raw)
        return self._expanded

    def verify(self, signature: BytesLike, data: BytesLike) -> None:
        """Return None when ``signature`` is valid for ``data``; raise InvalidSignature otherwise."""
        p = self.algorithm.params
        signature = require_bytes(signature, f"{p.name} signature")
        data = require_bytes(data, "data")
        if len(signature) != p.sig_bytes:
            raise InvalidSignature(f"{p.name} signature must be {p.sig_bytes} bytes, got {len(signature)}")
        if not scheme.verify(p, self.expanded(), data, signature):
            raise InvalidSignature(f"{p.name} signature does not verify under this public key")

    def verify_many(self, messages: Sequence[BytesLike], signatures: Sequence[BytesLike], backend: str | None = None,
                    threads: int | None = None, path: str = "bitsliced") -> npt.NDArray[np.bool_]:
        """Verdicts (numpy bool array) for many (message, signature) pairs under this key. A
        signature of the wrong length is False. See ``pqforge.mayo.batch`` for backends, threads
        and paths."""
        return batch.verify_many_one_key(self.algorithm.params, self, messages, signatures,
                                         backend=backend, threads=threads, path=path)


def _zero_arrays(arrays: Sequence[Any]) -> None:
    """Overwrite numpy (or CuPy) arrays with zeros in place; None and read-only arrays are left.
    (Self-contained: a collected key calls it at interpreter shutdown too.)"""
    for array in arrays:
        if array is not None and getattr(getattr(array, "flags", None), "writeable", True):
            array.fill(0)


class MayoPrivateKey(PrivateKey["MayoAlgorithm"]):
    """A MAYO private key (compact form: the ``private_key_size``-byte seed).

    ``close()``, or leaving ``with sk:``, zeroes the expanded secret key (the oil matrix O and
    P1 || L, in every form made) and the tensor path's matrices made from it, in place; any later
    use raises InvalidKey. Collecting the object does the same zeroing; an expanded key that the
    caller still holds (from ``expanded()``) is zeroed when the caller's reference goes."""

    _closed_note = ": its expanded secret key was zeroed"

    def __init__(self, algorithm: "MayoAlgorithm", csk: bytes, cpk: bytes | None = None):
        super().__init__(algorithm, csk, cpk)
        self._expanded: scheme.ExpandedSecretKey | None = None

    def expanded(self) -> scheme.ExpandedSecretKey:
        """The expanded secret key, kept by this object (zeroed in place by ``close()``)."""
        self._check_open()
        if self._expanded is None:
            self._expanded = scheme.expand_sk(self.algorithm.params, self._raw)
        return self._expanded

    def public_key(self) -> MayoPublicKey:
        self._check_open()
        if self._public is None:
            self._public = scheme.public_key_from_seed(self.algorithm.params, self._raw)
        return MayoPublicKey(self.algorithm, self._public)

    def sign(self, data: BytesLike, rng: Rng | None = None) -> bytes:
        """Signature of ``data`` (``signature_size`` bytes). ``rng`` feeds the salt randomness."""
        data = require_bytes(data, "data")
        return scheme.sign(self.algorithm.params, self.expanded(), data, checked_rng(rng))

    def close(self) -> None:
        """Zero the expanded secret key in place and make this object unusable (later calls raise
        InvalidKey; closing again does nothing). Call it when no other thread is using the key.

        Zeroed: the arrays of the expanded key (O, the bit planes P1 || L, the slots of the
        encoded kernels), also through any reference to them that ``expanded()`` handed out,
        and the tensor path's matrices made from them. Not zeroed: the compact seed and the
        seed inside the expanded key (bytes objects, immutable) and copies the caller made."""
        super().close()
        esk, self._expanded = self._expanded, None
        if esk is not None:
            _zero_arrays([esk.O, esk.planes, esk.slots])
        self._forget_prepared()

    def _forget_prepared(self) -> None:
        """Zero and drop the tensor path's matrices made from this key (``pqforge.mayo.tensor``
        keeps them per key object while it lives), when that module is loaded (and not being
        loaded or torn down)."""
        tensor = sys.modules.get("pqforge.mayo.tensor")
        if tensor is not None and hasattr(tensor, "forget_prepared"):
            _zero_arrays(tensor.forget_prepared(self))

    def __del__(self, _ref: Any = weakref.ref, _finalize: Any = weakref.finalize,
                _zero_all: Callable[[Sequence[Any]], None] = _zero_arrays) -> None:
        """Collected: zero the tensor path's matrices and the expanded secret key, unless the
        latter is still referenced elsewhere (an ``expanded()`` the caller kept): its arrays are
        then zeroed when that reference goes. The helpers are bound as defaults, so that this
        also works at interpreter shutdown, when module globals may be gone; it never raises."""
        if getattr(self, "_closed", True):
            return
        try:
            esk, self._expanded = self._expanded, None
            if esk is not None:
                arrays = [a for a in (esk.O, esk.planes, esk.slots) if a is not None]
                kept = _ref(esk)
                del esk
                if kept() is None:              # this object held the only reference
                    _zero_all(arrays)
                else:
                    _finalize(kept(), _zero_all, arrays)
        except Exception:
            pass
        try:
            self._forget_prepared()
        except Exception:
            pass

    def sign_many(self, messages: Sequence[BytesLike], rng: Rng | None = None, backend: str | None = None,
                  threads: int | None = None, path: str = "bitsliced") -> list[bytes]:
        """Signatures of many messages; the same bytes as ``[self.sign(m, rng) for m in messages]``.

        The salt randomness of every message is drawn from ``rng`` up front, in list order.
        """
        self._check_open()
        return batch.sign_many_one_key(self.algorithm.params, self, messages, rng=rng, backend=backend,
                                       threads=threads, path=path)


class MayoAlgorithm(Algorithm[MayoParams]):
    """One MAYO parameter set: key constructors, the NIST-API functions, sizes."""

    kind = "signature"

    def __init__(self, params: MayoParams):
        super().__init__(params, params.cpk_bytes, params.csk_bytes)
        self.signature_size = params.sig_bytes

    def generate_private_key(self, rng: Rng | None = None) -> MayoPrivateKey:
        cpk, csk = api.keypair(self.params, rng)
        return MayoPrivateKey(self, csk, cpk)

    def private_key_from_bytes(self, data: BytesLike) -> MayoPrivateKey:
        """A private key from its compact encoding (the seed)."""
        return MayoPrivateKey(self, require_bytes(data, f"{self.name} private key", self.private_key_size, InvalidKey))

    def public_key_from_bytes(self, data: BytesLike) -> MayoPublicKey:
        """A public key from its compact encoding."""
        return MayoPublicKey(self, require_bytes(data, f"{self.name} public key", self.public_key_size, InvalidKey))

    # the NIST API on bytes, as the functional layer
    def keypair(self, rng: Rng | None = None) -> tuple[bytes, bytes]:
        return api.keypair(self.params, rng)

    def sign(self, sk: BytesLike, msg: BytesLike, rng: Rng | None = None) -> bytes:
        return api.sign(self.params, sk, msg, rng)

    def verify(self, pk: BytesLike, msg: BytesLike, sig: BytesLike) -> bool:
        return api.verify(self.params, pk, msg, sig)

    def sign_nist(self, sk: BytesLike, msg: BytesLike, rng: Rng | None = None) -> bytes:
        return api.sign_nist(self.params, sk, msg, rng)

    def open_nist(self, pk: BytesLike, sm: BytesLike) -> bytes:
        return api.open_nist(self.params, pk, sm)

    def benchmark_ops(self) -> dict[str, Callable[[], Any]]:
        import os
        sk = self.generate_private_key()
        pk = sk.public_key()
        csk, cpk = sk.private_bytes_raw(), pk.public_bytes_raw()
        msg = os.urandom(32)
        sig = sk.sign(msg)
        esk = sk.expanded()
        p = self.params
        return {
            "keygen": lambda: api.keypair(p),
            "sign": lambda: api.sign(p, csk, msg),
            "verify": lambda: api.verify(p, cpk, msg, sig),
            "sign (expanded sk)": lambda: scheme.sign(p, esk, msg, os.urandom),
            "verify (expanded pk)": lambda: pk.verify(sig, msg),   # a key object in steady use
            "expand sk": lambda: scheme.expand_sk(p, csk),
            "expand pk": lambda: scheme.expand_pk(p, cpk),
        }

    def warm_up(self) -> None:
        """Run every compiled path once, so that numba compiles and caches its kernels now
        (``pqforge precompile``, e.g. in a container build) and not on a first request: the
        single operations, a fresh and a steadily used public key, and the batch calls (one key
        and distinct keys, bitsliced and tensor paths, on the CPU)."""
        super().warm_up()
        sk = self.generate_private_key()
        pk = sk.public_key()
        msgs = [bytes([i]) for i in range(2 * scheme.BITSLICED_AFTER)]
        sigs = sk.sign_many(msgs, backend="cpu", threads=1)
        for count in (1, len(msgs)):        # before and after the key turns to bit planes
            pk.verify_many(msgs[:count], sigs[:count], backend="cpu", threads=1)
        for _ in range(scheme.BITSLICED_AFTER):
            pk.verify(sigs[0], msgs[0])
        sk.sign_many(msgs[:2], backend="cpu", path="tensor")
        pk.verify_many(msgs[:2], sigs[:2], backend="cpu", path="tensor")
        keys = self.generate_private_keys(2, backend="cpu", threads=1)
        csks = [key.private_bytes_raw() for key in keys]
        cpks = [key.public_key().public_bytes_raw() for key in keys]
        d_sigs = batch.sign_many(self.params, csks, msgs[:2], backend="cpu", threads=1)
        batch.verify_many(self.params, cpks, msgs[:2], d_sigs, backend="cpu", threads=1)

    def warm_up_serving(self) -> None:
        """The paths of ``pqforge serve``: key generation, and the one-key batch calls on the CPU
        that its sign and verify requests are batched into (the single operations, the tensor
        path and distinct keys are left to ``warm_up``)."""
        def key_in_use() -> MayoPrivateKey:     # generated and expanded, as a stored key signs
            sk = self.generate_private_key()
            sk.expanded()
            return sk
        sk = ahead.compile_serving(self.params, key_in_use)
        msgs = [b"serve", b"warm"]
        sigs = sk.sign_many(msgs, backend="cpu", threads=1)
        pk = sk.public_key()
        pk.verify_many(msgs, sigs, backend="cpu", threads=1)       # a new key: from its encoding
        many = scheme.BITSLICED_AFTER                                # a key in steady use: its bit planes
        pk.verify_many(msgs * many, sigs * many, backend="cpu", threads=1)

    def generate_private_keys(self, n: int, rng: Rng | None = None, backend: str | None = None,
                              threads: int | None = None) -> list[MayoPrivateKey]:
        """``n`` private keys (public halves computed), drawing the seeds from ``rng`` in order:
        the same keys as ``n`` calls of ``generate_private_key(rng)``."""
        seeds, cpks = batch.generate_keys(self.params, n, rng, backend, threads)
        return [MayoPrivateKey(self, csk, cpk) for csk, cpk in zip(seeds, cpks)]
