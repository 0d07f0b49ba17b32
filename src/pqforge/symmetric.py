"""Symmetric primitives used by the schemes: SHAKE256 (hashlib) and AES-128-CTR (OpenSSL via cryptography)."""

import hashlib

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

_ZERO_IV = bytes(16)


def shake256(data: bytes, outlen: int) -> bytes:
    """SHAKE256(data) truncated to ``outlen`` bytes."""
    return hashlib.shake_256(data).digest(outlen)


def aes128_ctr(key: bytes, outlen: int) -> bytes:
    """AES-128 in counter mode from an all-zero 128-bit counter block: the keystream of ``outlen`` bytes."""
    enc = Cipher(algorithms.AES(key), modes.CTR(_ZERO_IV)).encryptor()
    return enc.update(bytes(outlen)) + enc.finalize()
