"""Key files: pqforge's own armour, and reading a key file in any format pqforge reads.

pqforge's own key file is the raw key bytes in a text armour that names the algorithm and the
key type; sets with no object identifier in use (Classic McEliece) have only this and raw bytes.

    -----BEGIN PQFORGE MAYO-2 PRIVATE KEY-----
    Checksum: 3f1c0a9e5b7d2468
    <base64, 64 columns>
    -----END PQFORGE MAYO-2 PRIVATE KEY-----

The armour lets ``pqforge sign --key alice.sk`` find the algorithm, and makes a truncated or
foreign file a clear error rather than a wrong key. The checksum (the first 8 bytes of SHA-256
over the algorithm name, the key type and the raw key) makes any changed character an error too:
a corrupted base64 character, or an algorithm name changed to another set with keys of the same
size, is reported, never used. The base64 body must also be the canonical encoding of the key,
since a changed last character can decode to the same bytes.

Files without the checksum line (pqforge 0.1.0) are still read, with a warning: refusing them
would lock their owners out of private keys that cannot be made again, and the length and
armour checks still apply. Writing a key file again (``write``) adds the checksum.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import warnings
from pathlib import Path
from typing import Any, Callable

from . import algorithms
from . import pkix, serialization
from .errors import InvalidInput, InvalidKey, PQForgeError
from .files import Output, check_outputs, write_outputs

KINDS = ("PUBLIC", "PRIVATE")

_ARMOUR = re.compile(
    r"-----BEGIN PQFORGE (?P<alg>[A-Za-z0-9-]+) (?P<kind>PUBLIC|PRIVATE) KEY-----\n"
    r"(?:Checksum: (?P<checksum>[0-9a-f]{16})\n)?"
    r"(?P<body>[A-Za-z0-9+/=\n]*)"
    r"-----END PQFORGE (?P=alg) (?P=kind) KEY-----\n?\Z"
)


class MissingChecksum(UserWarning):
    """A key file without the integrity check line (written by pqforge 0.1.0)."""


def checksum(alg_name: str, kind: str, raw: bytes) -> str:
    """16 hex digits: SHA-256 over the algorithm name, the key type and the raw key, truncated."""
    return hashlib.sha256(f"pqforge key\0{alg_name}\0{kind.upper()}\0".encode() + raw).hexdigest()[:16]


def encode(alg_name: str, kind: str, raw: bytes) -> str:
    head = f"PQFORGE {alg_name} {kind.upper()} KEY"
    return (f"-----BEGIN {head}-----\nChecksum: {checksum(alg_name, kind, raw)}\n"
            + pkix.base64_lines(raw) + f"-----END {head}-----\n")


def decode(text: str, source: str = "key file") -> tuple[Any, str, bytes]:
    """(algorithm object, "PUBLIC"/"PRIVATE", raw bytes); InvalidKey on anything malformed or changed,
    UnknownAlgorithm for an algorithm name that pqforge does not implement."""
    match = _ARMOUR.match(text.replace("\r\n", "\n"))
    if not match:
        raise InvalidKey(f"{source} is not a pqforge key file (truncated or corrupt armour)")
    alg = algorithms.get(match["alg"])
    kind = match["kind"]
    body = match["body"].replace("\n", "")
    try:
        raw = base64.b64decode(body, validate=True)
    except binascii.Error as exc:
        raise InvalidKey(f"{source}: corrupt base64 body ({exc})") from None
    if base64.b64encode(raw).decode() != body:
        raise InvalidKey(f"{source}: corrupt base64 body (not the canonical encoding of its bytes)")
    if match["checksum"] is None:
        warnings.warn(f"{source} has no checksum line (an older pqforge key file), so a changed character "
                      "cannot be detected; write it again to add one", MissingChecksum, stacklevel=2)
    elif match["checksum"] != checksum(match["alg"], kind, raw):
        raise InvalidKey(f"{source}: checksum mismatch; the key file has been changed or corrupted "
                         "and is not used")
    size = alg.public_key_size if kind == "PUBLIC" else alg.private_key_size
    if len(raw) != size:
        raise InvalidKey(f"{source}: {alg.name} {kind.lower()} key must be {size} bytes, got {len(raw)}")
    return alg, kind, raw


FORMATS = ("pem", "der", "pqforge")
"""The key file formats: PEM and DER (SubjectPublicKeyInfo, PKCS#8) and pqforge's own."""


def default_format(alg: Any) -> str:
    """PEM for a set with an object identifier in use, else pqforge's own key file."""
    return "pem" if alg.name in serialization.OIDS else "pqforge"


def raw_bytes(key: Any) -> bytes:
    """A key object's encoding as the specification gives it, private or public."""
    return bytes(key.private_bytes_raw() if hasattr(key, "private_bytes_raw") else key.public_bytes_raw())


def dump(key: Any, format: str, passphrase: bytes | None = None) -> bytes:
    """A key object (public or private) as a key file in ``format`` (one of ``FORMATS``); a
    private key in PEM or DER is encrypted under ``passphrase`` when one is given."""
    private = hasattr(key, "private_bytes_raw")
    if format == "pqforge":
        if passphrase is not None:
            raise InvalidInput("pqforge key files are not encrypted; write PEM or DER to encrypt a private key")
        return encode(key.algorithm.name, "PRIVATE" if private else "PUBLIC", raw_bytes(key)).encode("ascii")
    encoding = {"pem": serialization.Encoding.PEM, "der": serialization.Encoding.DER}.get(format)
    if encoding is None:
        raise InvalidInput(f"unknown key file format {format!r}; expected one of: {', '.join(FORMATS)}")
    if not private:
        return bytes(key.public_bytes(encoding, serialization.PublicFormat.SubjectPublicKeyInfo))
    encryption = (serialization.NoEncryption() if passphrase is None else
                  serialization.BestAvailableEncryption(passphrase))
    return bytes(key.private_bytes(encoding, serialization.PrivateFormat.PKCS8, encryption))


def load(data: bytes, source: str, expect_kind: str | None = None,
         passphrase: Callable[[], bytes] | None = None) -> Any:
    """The key object (public or private, or of type ``expect_kind``) in ``data``, in any format
    pqforge reads: its own key file, or SubjectPublicKeyInfo / PKCS#8 in PEM or DER
    (``pqforge.serialization``). ``passphrase`` is called only for an encrypted private key."""
    if data.lstrip().startswith(b"-----BEGIN PQFORGE "):
        try:
            text = data.decode("ascii")
        except UnicodeDecodeError:
            raise InvalidKey(f"{source} is not a pqforge key file (binary content)") from None
        alg, kind, raw = decode(text, source)
        _expect(source, kind, expect_kind)
        return alg.public_key_from_bytes(raw) if kind == "PUBLIC" else alg.private_key_from_bytes(raw)
    found, encrypted = serialization.kind_of(data)
    if found is None:
        raise InvalidKey(f"{source} holds no key pqforge reads: expected a pqforge key file, or a PEM or DER "
                         "SubjectPublicKeyInfo or PKCS#8 key")
    _expect(source, found, expect_kind)
    if encrypted and passphrase is None:
        raise InvalidKey(f"{source} is an encrypted private key and no passphrase was given")
    try:
        if found == "PUBLIC":
            return serialization.load_public_key(data)
        return serialization.load_private_key(data, passphrase() if encrypted and passphrase else None)
    except PQForgeError as exc:
        raise type(exc)(f"{source}: {exc}") from None


def read(path: str | Path, expect_kind: str,
         passphrase: Callable[[], bytes] | None = None) -> tuple[Any, bytes]:
    """(algorithm object, raw key) from a file holding a key of type ``expect_kind``, in any
    format ``load`` reads."""
    key = load(Path(path).read_bytes(), str(path), expect_kind, passphrase)
    return key.algorithm, raw_bytes(key)


def _expect(source: str, kind: str, expect_kind: str | None) -> None:
    if expect_kind is not None and kind != expect_kind.upper():
        raise InvalidKey(f"{source} holds a {kind.lower()} key; a {expect_kind.lower()} key is expected here")


def write(path: str | Path, alg_name: str, kind: str, raw: bytes, force: bool = False) -> None:
    """Write an armoured key, whole or not at all; private keys get mode 0600 (also when
    replacing a file). Refuses to overwrite unless ``force`` (InvalidInput)."""
    out = [Output(str(path), secret=kind.upper() == "PRIVATE")]
    check_outputs(out, force)
    write_outputs(out, [encode(alg_name, kind, raw).encode("ascii")], force)
