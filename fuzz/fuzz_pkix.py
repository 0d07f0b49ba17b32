"""PKCS#8 and SubjectPublicKeyInfo keys, DER and PEM, plain and encrypted: the loaders of
``pqforge.serialization`` and ``keyfile.load`` (what every command reads keys with) on the input.

The first input byte chooses the password (none, the seeds' passphrase, another); the rest is
the key data. The key derivations' bounds are lowered for the run (``pkix.MAX_KDF_MEMORY`` to 4
MiB, ``MAX_PBKDF2_ITERATIONS`` to 4096), so that an input asking for a costly derivation is
refused in microseconds, through the same checks that bound it in use.

What must hold:
- Only ``PQForgeError`` and its subclasses are raised (``InvalidKey``, ``InvalidType``,
  ``UnknownAlgorithm``, ``InvalidInput``); nothing else, no hang.
- The DER and PEM loaders agree: the PEM "PUBLIC KEY" / "PRIVATE KEY" block of the input's DER
  loads exactly when the DER does, to the same key; ``keyfile.load`` loads the same key.
- An accepted key is whole: a private key's public key is the one its seed makes.
- Round trip: an accepted SubjectPublicKeyInfo is written back byte for byte (DER is canonical,
  the loader strict); an accepted plain PKCS#8 is written back byte for byte when it holds the
  seed and the public key (the form written), and to a key that loads the same otherwise.
"""

import common

with common.instrumented():
    from pqforge import PQForgeError, keyfile, pkix, serialization
    from pqforge.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

pkix.MAX_KDF_MEMORY = 4 << 20
pkix.MAX_PBKDF2_ITERATIONS = 4096

PASSWORDS = (None, b"pqforge test", b"another")


def _load(loader, *args):
    try:
        return loader(*args)
    except PQForgeError:
        return None


def test_one_input(data: bytes) -> None:
    if not data:
        return
    password, der = PASSWORDS[data[0] % len(PASSWORDS)], data[1:]

    public = _load(serialization.load_der_public_key, der)
    if public is not None:
        assert public.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo) == der
        pem = pkix.pem_encode("PUBLIC KEY", der)
        assert serialization.load_pem_public_key(pem) == public
        assert keyfile.load(der, "fuzz", "PUBLIC") == public

    private = _load(serialization.load_der_private_key, der, password)
    if private is not None:
        raw = private.private_bytes_raw()
        encrypted = pkix.is_encrypted(der)
        label = "ENCRYPTED PRIVATE KEY" if encrypted else "PRIVATE KEY"
        again = serialization.load_pem_private_key(pkix.pem_encode(label, der), password)
        assert again.private_bytes_raw() == raw
        assert keyfile.load(der, "fuzz", "PRIVATE", lambda: password).private_bytes_raw() == raw
        written = private.private_bytes(Encoding.DER, PrivateFormat.PKCS8, NoEncryption())
        reloaded = serialization.load_der_private_key(written)
        assert reloaded.private_bytes_raw() == raw and reloaded.public_key() == private.public_key()
        if not encrypted and len(written) == len(der):
            assert written == der, "a plain PKCS#8 with seed and public key was not written back as read"
    assert public is None or private is None, "one input loaded as both a public and a private key"

    # the PEM loaders on the input as text, however malformed
    for loader, args in ((serialization.load_pem_public_key, ()), (serialization.load_pem_private_key, (password,))):
        _load(loader, der, *args)
    kind, _ = serialization.kind_of(der)
    loaded = _load(keyfile.load, der, "fuzz", kind, lambda: password or b"x")
    if loaded is not None and kind == "PUBLIC" and not pkix.is_pem(der):
        assert loaded == public


if __name__ == "__main__":
    common.main(test_one_input)
