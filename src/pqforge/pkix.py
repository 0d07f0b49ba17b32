"""The PKIX key structures at the byte level: SubjectPublicKeyInfo and PKCS#8, DER and PEM, and
PBES2 encryption. ``pqforge.serialization`` builds the key objects on them; the key objects'
``public_bytes`` and ``private_bytes`` write through them.

The encodings are those of OpenSSL 3 with the Open Quantum Safe provider:

- the object identifiers in ``OIDS`` (an experimental arc; other MAYO libraries use it too);
- SubjectPublicKeyInfo: the algorithm identifier without parameters, the BIT STRING holding the
  public key as the specification encodes it;
- PKCS#8 (version 0, no attributes): the privateKey OCTET STRING holds the DER of an inner
  OCTET STRING, the private key (the seed) followed by the public key.

Encrypted private keys are PKCS#8 EncryptedPrivateKeyInfo with PBES2, which OpenSSL reads and
writes. ``BestAvailableEncryption`` writes scrypt (``SCRYPT_COST``: N = 2**14, r = 8, p = 1, the
largest cost OpenSSL 3 opens with its default memory limit of 32 MiB) and AES-256-CBC. Read:
PBES2 with scrypt or PBKDF2 (HMAC-SHA-1/224/256/384/512) and AES-128/192/256-CBC, within
``MAX_KDF_MEMORY`` and ``MAX_PBKDF2_ITERATIONS``, so that a hostile file cannot make a load take
minutes or gigabytes.

The ASN.1 is pyca's declarative ``cryptography.hazmat.asn1``: strict DER (a non-minimal length,
trailing bytes or a BER form is refused), in Rust, fuzzed with the rest of pyca, and from a
package pqforge already depends on; the structures below read like the RFCs' definitions. pyca
marks that module as outside its compatibility policy for now: the tests build and parse every
structure here, so a change in it shows at once. The key derivations and the cipher are pyca's
primitives too.
Secret here: the passphrase, the derived key, the decrypted PKCS#8 and the seed inside. Their
lengths are public (fixed per set); decoding them branches on their DER structure only, which
is the same for every key of a set.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
import typing
from typing import Any

from cryptography.hazmat import asn1
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms as ciphers, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from cryptography.hazmat.primitives.serialization import (BestAvailableEncryption, Encoding,
                                                          KeySerializationEncryption, NoEncryption,
                                                          PrivateFormat, PublicFormat)
from cryptography.x509 import ObjectIdentifier

from .errors import InvalidInput, InvalidKey, InvalidType, UnknownAlgorithm


OIDS = {
    "MAYO-1": "1.3.9999.8.1.3",
    "MAYO-2": "1.3.9999.8.2.3",
    "MAYO-3": "1.3.9999.8.3.3",
    "MAYO-5": "1.3.9999.8.5.3",
}
"""The algorithm identifier of each set that has one in use: those of OpenSSL's OQS provider."""

_NAMES = {oid: name for name, oid in OIDS.items()}

SCRYPT_COST = (2**14, 8, 1)
"""(N, r, p) written by ``BestAvailableEncryption``: 16 MiB, OpenSSL 3's limit is 32 MiB."""

MAX_KDF_MEMORY = 1 << 30
"""The most memory (128 * N * r * p bytes) an encrypted key may ask scrypt for when it is read."""

MAX_PBKDF2_ITERATIONS = 10_000_000
"""The most PBKDF2 iterations an encrypted key may ask for when it is read."""


# -- the structures (RFC 5280, RFC 5958, RFC 8018, RFC 7914) ----------------------------------------

@asn1.sequence
class AlgorithmIdentifier:
    algorithm: ObjectIdentifier                 # no parameters, as for every pqforge set


@asn1.sequence
class SubjectPublicKeyInfo:
    algorithm: AlgorithmIdentifier
    subject_public_key: asn1.BitString


@asn1.sequence
class PrivateKeyInfo:
    version: int
    private_key_algorithm: AlgorithmIdentifier
    private_key: bytes


@asn1.sequence
class AnyAlgorithm:                             # an AlgorithmIdentifier whose parameters are read later
    algorithm: ObjectIdentifier
    parameters: asn1.TLV


@asn1.sequence
class EncryptedPrivateKeyInfo:
    encryption_algorithm: AnyAlgorithm
    encrypted_data: bytes


@asn1.sequence
class CipherAlgorithm:
    algorithm: ObjectIdentifier
    iv: bytes


@asn1.sequence
class PBES2Parameters:
    key_derivation_func: AnyAlgorithm
    encryption_scheme: CipherAlgorithm


@asn1.sequence
class HmacAlgorithm:
    algorithm: ObjectIdentifier
    parameters: asn1.Null | None


@asn1.sequence
class PBKDF2Parameters:
    salt: bytes
    iteration_count: int
    key_length: int | None
    prf: HmacAlgorithm | None                   # absent: HMAC-SHA-1


@asn1.sequence
class ScryptParameters:
    salt: bytes
    cost_parameter: int
    block_size: int
    parallelization_parameter: int
    key_length: int | None


# what ``BestAvailableEncryption`` writes, typed all the way down
@asn1.sequence
class ScryptAlgorithm:
    algorithm: ObjectIdentifier
    parameters: ScryptParameters


@asn1.sequence
class PBES2ScryptParameters:
    key_derivation_func: ScryptAlgorithm
    encryption_scheme: CipherAlgorithm


@asn1.sequence
class PBES2ScryptAlgorithm:
    algorithm: ObjectIdentifier
    parameters: PBES2ScryptParameters


@asn1.sequence
class EncryptedWithScrypt:
    encryption_algorithm: PBES2ScryptAlgorithm
    encrypted_data: bytes


_PBES2 = ObjectIdentifier("1.2.840.113549.1.5.13")
_PBKDF2 = ObjectIdentifier("1.2.840.113549.1.5.12")
_SCRYPT = ObjectIdentifier("1.3.6.1.4.1.11591.4.11")
_AES_CBC = {ObjectIdentifier("2.16.840.1.101.3.4.1.2"): 16, ObjectIdentifier("2.16.840.1.101.3.4.1.22"): 24,
            ObjectIdentifier("2.16.840.1.101.3.4.1.42"): 32}
_AES256_CBC = ObjectIdentifier("2.16.840.1.101.3.4.1.42")
_HMACS: dict[ObjectIdentifier, type[hashes.HashAlgorithm]] = {
    ObjectIdentifier("1.2.840.113549.2.7"): hashes.SHA1, ObjectIdentifier("1.2.840.113549.2.8"): hashes.SHA224,
    ObjectIdentifier("1.2.840.113549.2.9"): hashes.SHA256, ObjectIdentifier("1.2.840.113549.2.10"): hashes.SHA384,
    ObjectIdentifier("1.2.840.113549.2.11"): hashes.SHA512}

T = typing.TypeVar("T")


def _decode(cls: type[T], der: bytes, what: str) -> T:
    try:
        return asn1.decode_der(cls, der)
    except ValueError as exc:
        raise InvalidKey(f"{what} is not valid DER ({_reason(exc)})") from None


def _reason(exc: ValueError) -> str:
    text = str(exc)
    kind = re.search(r"kind: (\w+)", text)
    return {"ExtraData": "trailing bytes", "ShortData": "truncated", "InvalidLength": "bad length",
            "UnexpectedTag": "unexpected field"}.get(kind[1], kind[1]) if kind else text


# -- PEM (RFC 7468) ---------------------------------------------------------------------------------

_PEM = re.compile(r"-----BEGIN (?P<label>[A-Z0-9 -]+)-----\r?\n(?P<body>[A-Za-z0-9+/=\r\n\t ]*?)"
                  r"-----END (?P=label)-----")


def pem_encode(label: str, der: bytes) -> bytes:
    """``der`` in a PEM block: base64 in 64-column lines between BEGIN and END lines."""
    return (f"-----BEGIN {label}-----\n" + base64_lines(der) + f"-----END {label}-----\n").encode("ascii")


def base64_lines(data: bytes) -> str:
    """``data`` in base64, 64 columns a line, each line ending in a newline."""
    body = base64.b64encode(data).decode("ascii")
    return "".join(body[i:i + 64] + "\n" for i in range(0, len(body), 64))


def pem_decode(data: bytes, labels: tuple[str, ...], what: str) -> tuple[str, bytes]:
    """(label, DER) of the first PEM block in ``data`` with one of ``labels``."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError:
        raise InvalidKey(f"{what} is not PEM (binary content; DER is read by the load_der_ functions)") from None
    found = list(_PEM.finditer(text))
    for match in found:
        if match["label"] in labels:
            try:
                der = base64.b64decode(re.sub(r"\s", "", match["body"]), validate=True)
            except binascii.Error as exc:
                raise InvalidKey(f"{what}: corrupt base64 in the PEM block ({exc})") from None
            return match["label"], der
    for label in labels:
        if f"-----BEGIN {label}-----" in text:
            raise InvalidKey(f"{what}: the {label} PEM block is truncated or corrupt (no matching END line, "
                             "or characters other than base64 inside)")
    seen = f"its blocks are {', '.join(sorted({m['label'] for m in found}))}" if found else "no PEM block found"
    raise InvalidKey(f"{what} holds no {' or '.join(labels)} block ({seen})")


# -- public keys -------------------------------------------------------------------------------------

def _oid_of(algorithm: Any) -> ObjectIdentifier:
    oid = OIDS.get(algorithm.name)
    if oid is None:
        raise InvalidInput(f"{algorithm.name} has no object identifier in use for SubjectPublicKeyInfo or "
                           "PKCS#8; keep its keys in pqforge's own key files (--format pqforge, pqforge.keyfile) or "
                           "as raw bytes")
    return ObjectIdentifier(oid)


def public_bytes(key: Any, encoding: Encoding, format: PublicFormat) -> bytes:
    """``key.public_bytes(encoding, format)`` of a key object: SubjectPublicKeyInfo in DER or PEM, or Raw/Raw."""
    if format is PublicFormat.Raw and encoding is Encoding.Raw:
        return bytes(key.public_bytes_raw())
    if format is PublicFormat.SubjectPublicKeyInfo and encoding in (Encoding.DER, Encoding.PEM):
        der = asn1.encode_der(SubjectPublicKeyInfo(
            algorithm=AlgorithmIdentifier(algorithm=_oid_of(key.algorithm)),
            subject_public_key=asn1.BitString(key.public_bytes_raw(), 0)))
        return pem_encode("PUBLIC KEY", der) if encoding is Encoding.PEM else der
    raise InvalidInput(f"public keys are written as Encoding.PEM or Encoding.DER with "
                       f"PublicFormat.SubjectPublicKeyInfo, or Encoding.Raw with PublicFormat.Raw; got {encoding}, {format}")


# -- private keys ------------------------------------------------------------------------------------

def private_bytes(key: Any, encoding: Encoding, format: PrivateFormat,
                  encryption_algorithm: KeySerializationEncryption) -> bytes:
    """``key.private_bytes(encoding, format, encryption_algorithm)``: PKCS#8 in DER or PEM,
    plain or encrypted, or Raw/Raw with NoEncryption."""
    if not isinstance(encryption_algorithm, (NoEncryption, BestAvailableEncryption)):
        raise InvalidType("encryption_algorithm must be NoEncryption() or BestAvailableEncryption(password), "
                          f"not {type(encryption_algorithm).__name__}")
    if format is PrivateFormat.Raw and encoding is Encoding.Raw:
        if not isinstance(encryption_algorithm, NoEncryption):
            raise InvalidInput("a raw private key cannot be encrypted; use PrivateFormat.PKCS8 to encrypt")
        return bytes(key.private_bytes_raw())
    if format is not PrivateFormat.PKCS8 or encoding not in (Encoding.DER, Encoding.PEM):
        raise InvalidInput(f"private keys are written as Encoding.PEM or Encoding.DER with PrivateFormat.PKCS8, "
                           f"or Encoding.Raw with PrivateFormat.Raw; got {encoding}, {format}")
    oid = _oid_of(key.algorithm)
    inner = asn1.encode_der(key.private_bytes_raw() + key.public_key().public_bytes_raw())
    der = asn1.encode_der(PrivateKeyInfo(version=0, private_key_algorithm=AlgorithmIdentifier(algorithm=oid),
                                         private_key=inner))
    label = "PRIVATE KEY"
    if isinstance(encryption_algorithm, BestAvailableEncryption):
        der, label = _encrypt(der, encryption_algorithm.password), "ENCRYPTED PRIVATE KEY"
    return pem_encode(label, der) if encoding is Encoding.PEM else der


def decode_public(der: bytes) -> tuple[str, bytes]:
    """(set name, public key bytes) from a DER SubjectPublicKeyInfo."""
    info = _decode(SubjectPublicKeyInfo, der, "the SubjectPublicKeyInfo")
    name = _name_of(info.algorithm, "the public key")
    if info.subject_public_key.padding_bits() != 0:
        raise InvalidKey(f"{name} public key: the BIT STRING must hold whole bytes")
    return name, info.subject_public_key.as_bytes()


def decode_private(der: bytes, password: bytes | None) -> tuple[str, bytes]:
    """(set name, the content of the inner OCTET STRING) from a DER PrivateKeyInfo or, with
    ``password``, EncryptedPrivateKeyInfo. As in pyca: a password for a key that is not
    encrypted, or none for one that is, is InvalidType; a wrong password InvalidKey."""
    if is_encrypted(der):
        if password is None:
            raise InvalidType("the private key is encrypted: a password is needed")
        der = _decrypt(der, password)
    elif password is not None:
        raise InvalidType("a password was given but the private key is not encrypted")
    info = _decode(PrivateKeyInfo, der, "the PKCS#8 private key")
    if info.version != 0:
        raise InvalidKey(f"PKCS#8 version {info.version} is not read; version 0 (v1) is expected")
    name = _name_of(info.private_key_algorithm, "the private key")
    return name, _decode(bytes, info.private_key, f"the {name} private key inside the PKCS#8")


def _name_of(identifier: AlgorithmIdentifier, what: str) -> str:
    name = _NAMES.get(identifier.algorithm.dotted_string)
    if name is None:
        raise UnknownAlgorithm(f"{what} is for algorithm {identifier.algorithm.dotted_string}, which pqforge does "
                               f"not implement; expected one of: {', '.join(f'{n} ({o})' for n, o in OIDS.items())}")
    return name


def is_pem(data: bytes) -> bool:
    return data.lstrip().startswith(b"-----BEGIN ")


def kind_of(data: bytes) -> tuple[str | None, bool]:
    """("PUBLIC" or "PRIVATE", encrypted) for a PEM or DER SubjectPublicKeyInfo or PKCS#8 key;
    (None, False) for anything else. Only the outer structure is looked at."""
    if is_pem(data):
        label = re.match(rb"\s*-----BEGIN ([A-Z0-9 -]+)-----", data)
        return {b"PUBLIC KEY": ("PUBLIC", False), b"PRIVATE KEY": ("PRIVATE", False),
                b"ENCRYPTED PRIVATE KEY": ("PRIVATE", True)}.get(label[1] if label else b"", (None, False))
    for cls, found in ((SubjectPublicKeyInfo, ("PUBLIC", False)), (EncryptedPrivateKeyInfo, ("PRIVATE", True)),
                       (PrivateKeyInfo, ("PRIVATE", False))):
        try:
            asn1.decode_der(cls, data)
        except ValueError:
            continue
        return found
    return None, False


# -- PBES2 -------------------------------------------------------------------------------------------

def is_encrypted(der: bytes) -> bool:
    """Whether ``der`` is an EncryptedPrivateKeyInfo (a PrivateKeyInfo never decodes as one: it
    opens with an INTEGER where the former has a SEQUENCE)."""
    try:
        asn1.decode_der(EncryptedPrivateKeyInfo, der)
    except ValueError:
        return False
    return True


def _encrypt(der: bytes, password: bytes) -> bytes:
    n, r, p = SCRYPT_COST
    salt, iv = os.urandom(16), os.urandom(16)
    key = Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(password)
    padder = padding.PKCS7(128).padder()
    encryptor = Cipher(ciphers.AES(key), modes.CBC(iv)).encryptor()
    data = encryptor.update(padder.update(der) + padder.finalize()) + encryptor.finalize()
    params = ScryptParameters(salt=salt, cost_parameter=n, block_size=r, parallelization_parameter=p, key_length=None)
    return asn1.encode_der(EncryptedWithScrypt(
        encryption_algorithm=PBES2ScryptAlgorithm(algorithm=_PBES2, parameters=PBES2ScryptParameters(
            key_derivation_func=ScryptAlgorithm(algorithm=_SCRYPT, parameters=params),
            encryption_scheme=CipherAlgorithm(algorithm=_AES256_CBC, iv=iv))),
        encrypted_data=data))


def _decrypt(der: bytes, password: bytes) -> bytes:
    info = _decode(EncryptedPrivateKeyInfo, der, "the encrypted private key")
    if info.encryption_algorithm.algorithm != _PBES2:
        raise InvalidKey(f"the private key is encrypted with {info.encryption_algorithm.algorithm.dotted_string}; "
                         "only PBES2 (1.2.840.113549.1.5.13) is read")
    params = _parse(info.encryption_algorithm.parameters, PBES2Parameters, "the PBES2 parameters")
    cipher = params.encryption_scheme
    length = _AES_CBC.get(cipher.algorithm)
    if length is None:
        raise InvalidKey(f"the private key is encrypted with cipher {cipher.algorithm.dotted_string}; "
                         "AES-128-CBC, AES-192-CBC or AES-256-CBC is expected")
    if len(cipher.iv) != 16:
        raise InvalidKey(f"the AES-CBC IV must be 16 bytes, got {len(cipher.iv)}")
    key = _key_derivation(params.key_derivation_func, length, password)
    decryptor = Cipher(ciphers.AES(key), modes.CBC(cipher.iv)).decryptor()
    if not info.encrypted_data or len(info.encrypted_data) % 16:
        raise InvalidKey("the encrypted private key's data is not a whole number of AES blocks")
    padded = decryptor.update(info.encrypted_data) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    try:
        plain = unpadder.update(padded) + unpadder.finalize()
        asn1.decode_der(PrivateKeyInfo, plain)
    except ValueError:
        raise InvalidKey("cannot decrypt the private key: wrong password, or the file is corrupt") from None
    return plain


def _key_derivation(algorithm: AnyAlgorithm, length: int, password: bytes) -> bytes:
    if algorithm.algorithm == _SCRYPT:
        s = _parse(algorithm.parameters, ScryptParameters, "the scrypt parameters")
        n, r, p = s.cost_parameter, s.block_size, s.parallelization_parameter
        if n < 2 or n & (n - 1) or r < 1 or p < 1:
            raise InvalidKey(f"scrypt parameters N={n}, r={r}, p={p}: N must be a power of 2 above 1, r and p positive")
        if 128 * n * r * p > MAX_KDF_MEMORY:
            raise InvalidKey(f"scrypt parameters N={n}, r={r}, p={p} ask for {128 * n * r * p >> 20} MiB; "
                             f"at most {MAX_KDF_MEMORY >> 20} MiB is allowed")
        _check_length(s.key_length, length)
        return Scrypt(salt=s.salt, length=length, n=n, r=r, p=p).derive(password)
    if algorithm.algorithm == _PBKDF2:
        k = _parse(algorithm.parameters, PBKDF2Parameters, "the PBKDF2 parameters")
        if not 1 <= k.iteration_count <= MAX_PBKDF2_ITERATIONS:
            raise InvalidKey(f"PBKDF2 iteration count {k.iteration_count}: expected 1 to {MAX_PBKDF2_ITERATIONS}")
        _check_length(k.key_length, length)
        prf = k.prf.algorithm if k.prf is not None else ObjectIdentifier("1.2.840.113549.2.7")
        if prf not in _HMACS:
            raise InvalidKey(f"PBKDF2 with pseudo-random function {prf.dotted_string}; HMAC with SHA-1 or SHA-2 is expected")
        return PBKDF2HMAC(algorithm=_HMACS[prf](), length=length, salt=k.salt,
                          iterations=k.iteration_count).derive(password)
    raise InvalidKey(f"the private key's key derivation {algorithm.algorithm.dotted_string} is not read; "
                     "scrypt or PBKDF2 is expected")


def _check_length(given: int | None, length: int) -> None:
    if given is not None and given != length:
        raise InvalidKey(f"the key derivation's key length is {given} bytes; the cipher takes {length}")


def _parse(tlv: Any, cls: type[T], what: str) -> T:
    try:
        parsed: T = tlv.parse(cls)
    except ValueError as exc:
        raise InvalidKey(f"{what} are not valid DER ({_reason(exc)})") from None
    return parsed


