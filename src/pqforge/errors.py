"""One exception hierarchy for everything pqforge raises on purpose.

The same mistake raises the same class everywhere (key objects, the functional layer and the
batch calls of both schemes): a key of the wrong length or encoding is InvalidKey, any other
argument of the wrong length or content InvalidInput, a wrong type InvalidType.
"""

from __future__ import annotations

from typing import Union

import numpy as np
from cryptography import exceptions as _pyca

BytesLike = Union[bytes, bytearray, memoryview]
"""What pqforge accepts where it takes bytes."""


class PQForgeError(Exception):
    """Base class of all pqforge errors."""


class InvalidSignature(PQForgeError, _pyca.InvalidSignature):
    """A signature did not verify (wrong key, wrong message or malformed signature).

    Also pyca's ``cryptography.exceptions.InvalidSignature``, so that code written for pyca's
    keys catches it unchanged."""


class InvalidKey(PQForgeError, ValueError):
    """A key has the wrong length or cannot be decoded."""


class InvalidInput(PQForgeError, ValueError):
    """An argument has the wrong length, range or content."""


class KernelSetUnavailable(InvalidInput):
    """``PQFORGE_KERNELS`` names a kernel set this CPU cannot run, or no set at all."""


class InvalidType(PQForgeError, TypeError):
    """An argument has the wrong type (for example str where bytes are expected)."""


class UnknownAlgorithm(PQForgeError, ValueError):
    """An algorithm name that pqforge does not implement."""


def require_bytes(value: object, what: str, length: int | None = None,
                  wrong_length: type[PQForgeError] = InvalidInput) -> bytes:
    """Return ``value`` as bytes or raise a clear error naming ``what`` and the expected size
    (``wrong_length``, InvalidInput unless the value is a key).

    bytes, bytearray and memoryview are accepted; str, numpy.bytes_ (it drops trailing zero
    bytes) and everything else is a type error.
    """
    if type(value) is bytes:        # the common case first: each check costs on every call
        if length is not None and len(value) != length:
            raise wrong_length(f"{what} must be {length} bytes, got {len(value)}")
        return value
    if isinstance(value, (bytearray, memoryview)):
        value = bytes(value)
    if isinstance(value, np.bytes_):
        raise InvalidType(f"{what} is a numpy.bytes_, which has lost any trailing zero bytes; pass bytes")
    if not isinstance(value, bytes):
        raise InvalidType(f"{what} must be bytes, not {type(value).__name__}")
    if length is not None and len(value) != length:
        raise wrong_length(f"{what} must be {length} bytes, got {len(value)}")
    return value


class BackendUnavailable(PQForgeError, RuntimeError):
    """A compute backend was requested that this machine or installation cannot provide."""


class DeviceOutOfMemory(PQForgeError, MemoryError):
    """The GPU ran out of memory for a batch; a smaller batch (or the CPU backend) will work."""
