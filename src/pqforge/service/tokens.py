"""API tokens: ``pqf_<id>_<secret>``; the store keeps the id, the scopes and SHA-256 of the secret.

Scopes: ``admin`` (everything), ``sign:<key id>`` or ``sign:*``, ``verify``, ``kem``.
A 32-byte random secret needs no slow hash: SHA-256 of it is not reversible and not guessable.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from ..errors import InvalidInput

_TOKEN = re.compile(r"pqf_([0-9a-f]{16})_([A-Za-z0-9_-]{43})")
_SCOPE = re.compile(r"admin|verify|kem|sign:(\*|[A-Za-z0-9_-]{1,64})")
SCOPE_HELP = "admin, verify, kem, sign:* or sign:<key id>"


def check_scopes(scopes) -> list[str]:
    scopes = list(scopes)
    if not scopes:
        raise InvalidInput(f"a token needs at least one scope: {SCOPE_HELP}")
    for scope in scopes:
        if not isinstance(scope, str) or not _SCOPE.fullmatch(scope):
            raise InvalidInput(f"unknown scope {scope!r}; expected {SCOPE_HELP}")
    return scopes


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def create(store, scopes, name: str | None = None) -> tuple[str, str]:
    """A new token: (token id, the full token to hand out once)."""
    scopes = check_scopes(scopes)
    token_id = secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    store.add_token(token_id, _hash(secret), name, scopes)
    return token_id, f"pqf_{token_id}_{secret}"


def parse(token: str) -> tuple[str, str] | None:
    match = _TOKEN.fullmatch(token)
    return (match.group(1), match.group(2)) if match else None


def matches(stored_hash: str, secret: str) -> bool:
    return hmac.compare_digest(stored_hash, _hash(secret))


def allows(scopes, scope: str) -> bool:
    """Whether a token with ``scopes`` may do ``scope`` ("sign:<key id>", "verify", "kem", "admin")."""
    if "admin" in scopes or scope in scopes:
        return True
    return scope.startswith("sign:") and "sign:*" in scopes
