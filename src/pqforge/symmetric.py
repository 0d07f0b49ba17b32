"""Symmetric primitives used by the schemes: SHAKE256 (hashlib) and AES-128-CTR (the CPU's AES
instructions in compiled code beside an encoded kernel set, else OpenSSL via cryptography)."""

import hashlib
import threading

import numpy as np
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from . import aes

_COUNTER_FROM_ZERO = modes.CTR(bytes(16))     # immutable: one object for every keystream
_zeros = b""
_scratch = threading.local()
_width: tuple | None = None


def aes_width() -> tuple:
    """The compiled AES's width as the type it is compiled for (empty: OpenSSL), asked of the
    kernel set on first use only, so that an unknown ``PQFORGE_KERNELS`` fails MAYO, not McEliece."""
    global _width
    if _width is None:
        from .gf16.sets import AES_WIDTH
        _width = (0,) * AES_WIDTH
    return _width


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
    out = bytearray(outlen + 15)
    aes128_ctr_into(key, outlen, out)
    return bytes(memoryview(out)[:outlen])


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
    which must have 15 more bytes after them (OpenSSL's rule for writing into a buffer).
    The compiled cipher (``pqforge.aes``) lets go of the GIL while it runs; OpenSSL keeps it."""
    if len(key) != 16:
        raise ValueError(f"AES-128 takes a 16-byte key, not {len(key)} bytes")
    width = _width or aes_width()
    if width:           # one type for every key (read-only bytes): one compiled version serves all
        aes.keystream_into(np.frombuffer(key if type(key) is bytes else bytes(key), np.uint8),
                           np.frombuffer(buf, np.uint8, outlen), width)
        return
    enc = Cipher(algorithms.AES(key), _COUNTER_FROM_ZERO).encryptor()
    enc.update_into(_zero_bytes(outlen), buf)

