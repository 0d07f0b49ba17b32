"""pqforge: post-quantum signatures (MAYO) and key encapsulation (Classic McEliece) for Python.

    from pqforge.mayo import MAYO2
    sk = MAYO2.generate_private_key()
    sig = sk.sign(b"data")
    sk.public_key().verify(sig, b"data")     # None, or raises pqforge.InvalidSignature

Keys are written and read in PKCS#8 and SubjectPublicKeyInfo as with pyca/cryptography
(``sk.private_bytes(...)``, ``pqforge.load_pem_private_key(...)``; ``pqforge.serialization``).

Importing pqforge leaves the memory allocator alone: ``retain_freed_heap()`` tunes glibc's malloc
for the whole process (key expansion gets faster); the command line and the service call it when
they start, and a library user who wants it calls it.
"""

from .jit import cache as _cache  # noqa: F401  (first: the numba cache directory, before any kernel)
from .errors import (BackendUnavailable, DeviceOutOfMemory, InvalidInput, InvalidKey, InvalidSignature, InvalidType,
                     PQForgeError, UnknownAlgorithm)

from ._memory import retain_freed_heap
from .serialization import load_der_private_key, load_der_public_key, load_pem_private_key, load_pem_public_key

__version__ = "0.1.0"

__all__ = ["BackendUnavailable", "DeviceOutOfMemory", "InvalidInput", "InvalidKey", "InvalidSignature",
           "InvalidType", "PQForgeError", "UnknownAlgorithm", "__version__", "load_der_private_key",
           "load_der_public_key", "load_pem_private_key", "load_pem_public_key", "retain_freed_heap"]
