"""Secret keys at rest: AES-256-GCM under a master key, the key id and algorithm bound as
associated data (a sealed secret copied onto another key's row does not open)."""

from __future__ import annotations

import base64
import binascii
import os
import stat
from pathlib import Path

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..errors import PQForgeError

MASTER_KEY_ENV = "PQFORGE_MASTER_KEY"
_NONCE = 12


class MasterKeyError(PQForgeError):
    """The master key is missing, malformed or readable by others."""


def _decode(text: str, where: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except binascii.Error:
        raise MasterKeyError(f"{where} must hold 32 bytes in base64") from None
    if len(key) != 32:
        raise MasterKeyError(f"{where} must hold 32 bytes in base64, got {len(key)} bytes")
    return key


def load_master_key(path: Path, create: bool = True) -> tuple[bytes, str]:
    """The master key and where it came from: the environment variable PQFORGE_MASTER_KEY, else the
    file ``path`` (which must not be readable by group or others), created when absent."""
    if os.environ.get(MASTER_KEY_ENV):
        return _decode(os.environ[MASTER_KEY_ENV], f"environment variable {MASTER_KEY_ENV}"), \
            f"environment variable {MASTER_KEY_ENV}"
    path = Path(path)
    if not path.exists():
        if not create:
            raise MasterKeyError(f"master key file {path} does not exist")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(base64.b64encode(os.urandom(32)).decode() + "\n")
            f.flush()
            os.fsync(f.fileno())
        return load_master_key(path, create=False)[0], f"{path} (created now)"
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise MasterKeyError(f"master key file {path} has mode {mode:04o}; expected 0600 (chmod 600 {path})")
    return _decode(path.read_text(), f"master key file {path}"), str(path)


class Sealer:
    def __init__(self, master_key: bytes):
        self._aead = AESGCM(master_key)

    @staticmethod
    def _aad(key_id: str, alg: str) -> bytes:
        return f"pqforge-key\x00{key_id}\x00{alg}".encode()

    def seal(self, key_id: str, alg: str, secret: bytes) -> bytes:
        nonce = os.urandom(_NONCE)
        return nonce + self._aead.encrypt(nonce, secret, self._aad(key_id, alg))

    def open(self, key_id: str, alg: str, sealed: bytes) -> bytes:
        from cryptography.exceptions import InvalidTag
        try:
            return self._aead.decrypt(sealed[:_NONCE], sealed[_NONCE:], self._aad(key_id, alg))
        except InvalidTag:
            raise MasterKeyError(f"the secret key of {key_id} does not open under this master key "
                                 "(wrong master key, or the stored row was altered)") from None
