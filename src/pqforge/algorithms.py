"""Every algorithm pqforge implements, by its liboqs-style name ("MAYO-2", "Classic-McEliece-348864").

An algorithm object has ``name``, ``kind`` ("signature" or "kem"), its byte sizes, the NIST-API
functions (``keypair``; ``sign_nist``/``open_nist``/``sign``/``verify`` or
``encapsulate``/``decapsulate``), the key-object constructors, ``benchmark_ops()`` and
``warm_up()`` (compile every kernel now). The command line, the KAT generator and the benchmark
harness see only this uniform shape.

What the algorithm and key objects of both schemes share is here too, as base classes:
``Algorithm`` (the parameter set, name, key sizes), ``PublicKey`` (the encoding, equality) and
``PrivateKey`` (the encoding, ``close()`` and the ``with`` statement). Each scheme adds its
operations.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from importlib import resources
from types import TracebackType
from typing import Any, Callable, ClassVar, Generic, Protocol, TypeVar

from . import pkix
from .errors import InvalidKey, InvalidType, UnknownAlgorithm

_FAMILIES = (("MAYO-", "pqforge.mayo", "signature"), ("Classic-McEliece-", "pqforge.mceliece", "kem"))
"""The package that implements each family of names, and its kind: a lookup imports only that
one (a command on a McEliece key does not import MAYO's kernels)."""


def names(kind: str | None = None) -> list[str]:
    """Every algorithm's name, MAYO first, or those of one ``kind`` ("signature" or "kem"). Read
    from the official KAT hashes that ship with the package (every algorithm has them), so that
    listing names, e.g. for ``pqforge --help``, does not import the schemes and their compiled
    kernels."""
    listed = [name for name in _official_kat_data()
              if kind is None or any(name.startswith(prefix) and kind == family_kind
                                     for prefix, _, family_kind in _FAMILIES)]
    return sorted(listed, key=lambda name: (not name.startswith("MAYO"), name))


@functools.lru_cache(maxsize=None)
def _official_kat_data() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads(resources.files("pqforge.data").joinpath("kat-sha256.json").read_text())
    return data


def name_key(name: object) -> str:
    """The form in which algorithm names are compared: case, hyphens, underscores, spaces and a
    leading "Classic" do not matter, so "MAYO-2", "mayo2" and "McEliece348864" are names too."""
    return _name_key(str(name))


@functools.lru_cache(maxsize=256)       # every functional call names its algorithm
def _name_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower()).removeprefix("classic")


def lookup(registry: dict[str, Any], name: object, what: str) -> Any:
    """``registry[name]`` under ``name_key``, or UnknownAlgorithm naming ``what`` and the known names."""
    wanted = name_key(name)
    for key, alg in registry.items():
        if name_key(key) == wanted:
            return alg
    raise UnknownAlgorithm(f"unknown {what} {name!r}; expected one of: {', '.join(registry)}")


@functools.lru_cache(maxsize=256)       # a service looks a name up on every request
def _canonical(name: Any) -> str:
    return str(lookup({known: known for known in names()}, name, "algorithm"))


def get(name: str) -> Any:
    """The algorithm object called ``name`` (in any spelling ``name_key`` accepts), or
    UnknownAlgorithm listing the known names."""
    canonical = _canonical(name) if isinstance(name, str) else _canonical.__wrapped__(name)  # (not cached)
    package = next(package for prefix, package, _ in _FAMILIES if canonical.startswith(prefix))
    return importlib.import_module(package).ALGORITHMS[canonical]


def official_kat_hashes(name: str) -> dict[str, Any]:
    """SHA-256 of the official KAT text for ``name``: {"single", "all", "all_count"}."""
    return _official_kat_data()[name]


# -- what the schemes' objects share -------------------------------------------------------------

class Parameters(Protocol):
    """A parameter set of either scheme (``MayoParams``, ``mceliece.Params``)."""

    @property
    def name(self) -> str: ...


P = TypeVar("P", bound=Parameters)
A = TypeVar("A", bound="Algorithm[Any]")
Key = TypeVar("Key", bound="PrivateKey[Any]")


def resolve_params(params: object, kind: type[P], registry: dict[str, P], what: str) -> P:
    """The parameter set of type ``kind`` that ``params`` stands for: the set itself, its
    algorithm object, or its name in ``registry``; InvalidType for anything else."""
    if isinstance(params, kind):
        return params
    if isinstance(params, Algorithm) and isinstance(params.params, kind):
        return params.params
    if isinstance(params, str):
        found: P = lookup(registry, params, what)
        return found
    raise InvalidType(f"params must be a {what}, algorithm or name, not {type(params).__name__}")


class Algorithm(Generic[P]):
    """One parameter set as an object: ``params``, ``name``, ``kind`` and the key sizes; each
    scheme adds its NIST-API functions, key constructors and ``benchmark_ops``."""

    kind: ClassVar[str]

    def __init__(self, params: P, public_key_size: int, private_key_size: int):
        self.params = params
        self.name = params.name
        self.public_key_size = public_key_size
        self.private_key_size = private_key_size

    def benchmark_ops(self) -> dict[str, Callable[[], Any]]:
        """Operations as the benchmark measures them, on prepared inputs."""
        raise NotImplementedError

    def warm_up(self) -> None:
        """Run every compiled path once, so that numba compiles and caches its kernels now."""
        for op in self.benchmark_ops().values():
            op()

    def warm_up_serving(self) -> None:
        """Run the compiled paths a server's requests take, so that it can answer them without a
        compile (the rest of ``warm_up`` may follow in the background). Every path, unless the
        algorithm says fewer."""
        self.warm_up()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


class PublicKey(Generic[A]):
    """A public key: its algorithm and its encoding (``public_bytes_raw``); equal when both are."""

    __slots__ = ("_algorithm", "_raw")

    def __init__(self, algorithm: A, raw: bytes):
        self._algorithm = algorithm
        self._raw = raw

    @property
    def algorithm(self) -> A:
        return self._algorithm

    def public_bytes_raw(self) -> bytes:
        """The key as the specification encodes it."""
        return self._raw

    def public_bytes(self, encoding: Any, format: Any) -> bytes:
        """The key as pyca's ``public_bytes`` writes it: ``Encoding.PEM`` or ``Encoding.DER`` with
        ``PublicFormat.SubjectPublicKeyInfo`` (sets with an object identifier,
        ``pqforge.pkix.OIDS``), or ``Encoding.Raw`` with ``PublicFormat.Raw``."""
        return pkix.public_bytes(self, encoding, format)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PublicKey) and other.algorithm is self._algorithm
                and other.public_bytes_raw() == self._raw)

    def __hash__(self) -> int:
        return hash((self._algorithm.name, self._raw[:64]))     # a McEliece key is up to 1.3 MB

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._algorithm.name}>"


class PrivateKey(Generic[A]):
    """A private key: its algorithm, its encoding, the public key's encoding once known, and
    ``close()`` with the ``with`` statement. Closing drops the encoding and makes the object
    unusable (later calls raise InvalidKey); a scheme whose key keeps more extends ``close``."""

    __slots__ = ("_algorithm", "_raw", "_public", "_closed")
    _closed_note: ClassVar[str] = ""
    """What closing did beyond making the key unusable, for the error of a later use."""

    def __init__(self, algorithm: A, raw: bytes, public: bytes | None = None):
        self._algorithm = algorithm
        self._raw = raw
        self._public = public
        self._closed = False

    @property
    def algorithm(self) -> A:
        return self._algorithm

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidKey(f"this {self._algorithm.name} private key has been closed{self._closed_note}; "
                             "load the key again to use it")

    def private_bytes_raw(self) -> bytes:
        """The key as the specification encodes it. Keep it secret."""
        self._check_open()
        return self._raw

    def private_bytes(self, encoding: Any, format: Any, encryption_algorithm: Any) -> bytes:
        """The key as pyca's ``private_bytes`` writes it: ``Encoding.PEM`` or ``Encoding.DER`` with
        ``PrivateFormat.PKCS8`` and ``NoEncryption()`` or ``BestAvailableEncryption(password)``
        (sets with an object identifier, ``pqforge.serialization.OIDS``), or ``Encoding.Raw`` with
        ``PrivateFormat.Raw`` and ``NoEncryption()``."""
        self._check_open()
        return pkix.private_bytes(self, encoding, format, encryption_algorithm)

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has run (the key cannot be used)."""
        return self._closed

    def close(self) -> None:
        """Make this object unusable and drop its reference to the key's bytes (closing again
        does nothing). Those bytes are not wiped: Python cannot overwrite a bytes object."""
        self._closed = True
        self._raw = b""

    def __enter__(self: Key) -> Key:
        self._check_open()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._algorithm.name}{' (closed)' if self._closed else ''}>"
