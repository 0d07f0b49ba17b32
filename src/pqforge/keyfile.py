"""Key files: the raw key bytes in a text armour that names the algorithm and the key type.

    -----BEGIN PQFORGE MAYO-2 PRIVATE KEY-----
    <base64, 64 columns>
    -----END PQFORGE MAYO-2 PRIVATE KEY-----

The armour lets ``pqforge sign --key alice.sk`` find the algorithm, and makes a truncated or
foreign file a clear error rather than a wrong key.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from pathlib import Path

from . import algorithms
from .errors import InvalidKey

_ARMOUR = re.compile(
    r"-----BEGIN PQFORGE (?P<alg>[A-Za-z0-9-]+) (?P<kind>PUBLIC|PRIVATE) KEY-----\n"
    r"(?P<body>[A-Za-z0-9+/=\n]*)"
    r"-----END PQFORGE (?P=alg) (?P=kind) KEY-----\n?\Z"
)


def encode(alg_name: str, kind: str, raw: bytes) -> str:
    body = base64.b64encode(raw).decode()
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    head = f"PQFORGE {alg_name} {kind.upper()} KEY"
    return f"-----BEGIN {head}-----\n" + "".join(line + "\n" for line in lines) + f"-----END {head}-----\n"


def decode(text: str, source: str = "key file"):
    """(algorithm object, "PUBLIC"/"PRIVATE", raw bytes); InvalidKey on anything malformed."""
    match = _ARMOUR.match(text.replace("\r\n", "\n"))
    if not match:
        raise InvalidKey(f"{source} is not a pqforge key file (truncated or corrupt armour)")
    alg = algorithms.get(match["alg"])
    try:
        raw = base64.b64decode(match["body"].replace("\n", ""), validate=True)
    except binascii.Error as exc:
        raise InvalidKey(f"{source}: corrupt base64 body ({exc})") from None
    size = alg.public_key_size if match["kind"] == "PUBLIC" else alg.private_key_size
    if len(raw) != size:
        raise InvalidKey(f"{source}: {alg.name} {match['kind'].lower()} key must be {size} bytes, got {len(raw)}")
    return alg, match["kind"], raw


def read(path: str | Path, expect_kind: str):
    try:
        text = Path(path).read_text(encoding="ascii")
    except UnicodeDecodeError:
        raise InvalidKey(f"{path} is not a pqforge key file (binary content)") from None
    alg, kind, raw = decode(text, str(path))
    if kind != expect_kind:
        raise InvalidKey(f"{path} holds a {kind.lower()} key; a {expect_kind.lower()} key is expected here")
    return alg, raw


def write(path: str | Path, alg_name: str, kind: str, raw: bytes, force: bool = False) -> None:
    """Write an armoured key; private keys get mode 0600. Refuses to overwrite unless ``force``."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if force else os.O_EXCL)
    mode = 0o600 if kind.upper() == "PRIVATE" else 0o644
    fd = os.open(path, flags, mode)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(encode(alg_name, kind, raw))
    if kind.upper() == "PRIVATE":
        os.chmod(path, 0o600)
