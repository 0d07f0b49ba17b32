"""Symmetric primitives used by the schemes: SHAKE256 (hashlib) and AES-128-CTR (OpenSSL via cryptography)."""

import hashlib
import threading

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

_COUNTER_FROM_ZERO = modes.CTR(bytes(16))     # immutable: one object for every keystream
_zeros = b""
_scratch = threading.local()


def shake256(data: bytes, outlen: int) -> bytes:
    """SHAKE256(data) truncated to ``outlen`` bytes."""
    return hashlib.shake_256(data).digest(outlen)


def _zero_bytes(n: int) -> memoryview:
    # one shared all-zero plaintext, grown on demand (immutable, so safe to share across threads)
    global _zeros
    if len(_zeros) < n:
        _zeros = bytes(n)
    return memoryview(_zeros)[:n]


def aes128_ctr(key: bytes, outlen: int) -> bytes:
    """AES-128 in counter mode from an all-zero 128-bit counter block: the keystream of ``outlen`` bytes."""
    enc = Cipher(algorithms.AES(key), _COUNTER_FROM_ZERO).encryptor()
    return enc.update(_zero_bytes(outlen)) + enc.finalize()


def aes128_ctr_scratch(key: bytes, outlen: int) -> memoryview:
    """The same keystream written into a per-thread buffer that is reused by the next call.

    For keystreams that are decoded at once (the public matrices): large fresh allocations
    cost page faults on every call, a reused buffer does not.
    """
    buf = getattr(_scratch, "buf", None)
    if buf is None or len(buf) < outlen + 15:
        buf = _scratch.buf = bytearray(outlen + 15)
    aes128_ctr_into(key, outlen, buf)
    return memoryview(buf)[:outlen]


def aes128_ctr_into(key: bytes, outlen: int, buf) -> None:
    """The keystream of ``outlen`` bytes written to the start of the writable buffer ``buf``,
    which must have 15 more bytes after them (the cipher's rule for writing into a buffer).
    The cipher keeps the GIL while it runs (about 20 us per 100 KB here)."""
    enc = Cipher(algorithms.AES(key), _COUNTER_FROM_ZERO).encryptor()
    enc.update_into(_zero_bytes(outlen), buf)
