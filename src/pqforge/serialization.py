"""Keys in the formats the rest of the world reads: SubjectPublicKeyInfo and PKCS#8, DER and PEM.

    from pqforge.serialization import Encoding, PrivateFormat, PublicFormat, BestAvailableEncryption
    pem = sk.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, BestAvailableEncryption(b"passphrase"))
    sk = pqforge.load_pem_private_key(pem, password=b"passphrase")
    pub = sk.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)

The enums and encryption choices are pyca/cryptography's own, so code written for its Ed25519
keys reads the same. The encodings are those of OpenSSL 3 with the Open Quantum Safe provider,
for the sets in ``OIDS`` (``pqforge.pkix`` has the structures and the encryption). A key with
only the seed inside its PKCS#8 is read too; a public key inside must be the one the seed makes.

Classic McEliece has no object identifier in use (the provider does not carry it), so its keys
stay in pqforge's own key files (``pqforge.keyfile``) or raw bytes; asking for PKCS#8 or
SubjectPublicKeyInfo says so.
"""

from __future__ import annotations

import hmac
from typing import Any

from cryptography.hazmat.primitives.serialization import (BestAvailableEncryption, Encoding, NoEncryption,
                                                          PrivateFormat, PublicFormat)

from . import algorithms, pkix
from .errors import BytesLike, InvalidKey, require_bytes
from .pkix import OIDS, kind_of

__all__ = ["Encoding", "PrivateFormat", "PublicFormat", "NoEncryption", "BestAvailableEncryption", "OIDS",
           "load_pem_private_key", "load_der_private_key", "load_pem_public_key", "load_der_public_key",
           "load_private_key", "load_public_key", "kind_of"]


def load_der_public_key(data: BytesLike, backend: Any = None) -> Any:
    """The public key in a DER SubjectPublicKeyInfo; its algorithm comes from the identifier."""
    name, raw = pkix.decode_public(require_bytes(data, "public key data"))
    return algorithms.get(name).public_key_from_bytes(raw)


def load_pem_public_key(data: BytesLike, backend: Any = None) -> Any:
    """The public key in a PEM "PUBLIC KEY" block."""
    return load_der_public_key(pkix.pem_decode(require_bytes(data, "public key data"), ("PUBLIC KEY",),
                                               "the public key data")[1])


def load_der_private_key(data: BytesLike, password: BytesLike | None = None, backend: Any = None) -> Any:
    """The private key in a DER PKCS#8 PrivateKeyInfo or, with ``password``, EncryptedPrivateKeyInfo.

    As in pyca: a password for a key that is not encrypted, or none for one that is, is a
    TypeError (InvalidType); a wrong password is a ValueError (InvalidKey)."""
    der = require_bytes(data, "private key data")
    name, inner = pkix.decode_private(der, None if password is None else require_bytes(password, "password"))
    alg = algorithms.get(name)
    if len(inner) not in (alg.private_key_size, alg.private_key_size + alg.public_key_size):
        raise InvalidKey(f"{alg.name} PKCS#8 private key must hold {alg.private_key_size} bytes (the seed) or "
                         f"{alg.private_key_size + alg.public_key_size} (seed and public key), got {len(inner)}")
    key = alg.private_key_from_bytes(inner[:alg.private_key_size])
    public = inner[alg.private_key_size:]
    if public and not hmac.compare_digest(key.public_key().public_bytes_raw(), public):
        raise InvalidKey(f"{alg.name} PKCS#8 private key: the public key inside is not the one its seed makes "
                         "(the file is corrupt or was put together from two keys)")
    return key


def load_pem_private_key(data: BytesLike, password: BytesLike | None = None, backend: Any = None) -> Any:
    """The private key in a PEM "PRIVATE KEY" or "ENCRYPTED PRIVATE KEY" block."""
    label, der = pkix.pem_decode(require_bytes(data, "private key data"), ("PRIVATE KEY", "ENCRYPTED PRIVATE KEY"),
                                 "the private key data")
    if (label == "ENCRYPTED PRIVATE KEY") != pkix.is_encrypted(der):
        raise InvalidKey(f"the {label} block does not hold {'an encrypted' if 'ENC' in label else 'a plain'} PKCS#8 key")
    return load_der_private_key(der, password)


def load_public_key(data: BytesLike) -> Any:
    """The public key in ``data``, PEM or DER."""
    data = require_bytes(data, "public key data")
    return load_pem_public_key(data) if pkix.is_pem(data) else load_der_public_key(data)


def load_private_key(data: BytesLike, password: BytesLike | None = None) -> Any:
    """The private key in ``data``, PEM or DER, plain or encrypted."""
    data = require_bytes(data, "private key data")
    return load_pem_private_key(data, password) if pkix.is_pem(data) else load_der_private_key(data, password)
