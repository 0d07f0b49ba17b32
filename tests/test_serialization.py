"""PKCS#8 and SubjectPublicKeyInfo: OpenSSL's keys load here and are written back byte for byte,
pqforge's keys round-trip, and every malformed, foreign or hostile input is a clear error.

The keys and signatures in tests/vectors/openssl/ were made by OpenSSL 3 with the Open Quantum
Safe provider (their README says how); they are the independent source here."""

import hashlib
import os

import pytest
from cryptography.hazmat import asn1
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.x509 import ObjectIdentifier

import pqforge
from pqforge import pkix as s
from pqforge.errors import InvalidInput, InvalidKey, InvalidType, UnknownAlgorithm
from pqforge.mayo import ALGORITHMS as MAYO
from pqforge.serialization import (BestAvailableEncryption, Encoding, NoEncryption, PrivateFormat,
                                   PublicFormat)

from .known_answers import VECTORS

OPENSSL = VECTORS / "openssl"
SETS = {"MAYO-1": "mayo1", "MAYO-2": "mayo2", "MAYO-3": "mayo3", "MAYO-5": "mayo5"}
PASSPHRASE = b"pqforge test"


def vector(name: str) -> bytes:
    return (OPENSSL / name).read_bytes()


def test_the_openssl_vectors_are_the_files_their_checksums_name():
    for line in vector("SHA256SUMS").decode().splitlines():
        digest, name = line.split()
        assert hashlib.sha256(vector(name)).hexdigest() == digest, name


@pytest.mark.parametrize("name", SETS)
def test_openssl_keys_load_and_are_written_back_byte_for_byte(name):
    v = SETS[name]
    sk = pqforge.load_pem_private_key(vector(f"{v}.key.pem"))
    pk = pqforge.load_pem_public_key(vector(f"{v}.pub.pem"))
    assert sk.algorithm is MAYO[name] and pk.algorithm is MAYO[name]
    assert sk.public_key() == pk
    assert pqforge.load_der_private_key(vector(f"{v}.key.der")).private_bytes_raw() == sk.private_bytes_raw()
    assert pqforge.load_der_public_key(vector(f"{v}.pub.der")) == pk
    assert sk.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()) == vector(f"{v}.key.pem")
    assert sk.private_bytes(Encoding.DER, PrivateFormat.PKCS8, NoEncryption()) == vector(f"{v}.key.der")
    assert pk.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo) == vector(f"{v}.pub.pem")
    assert pk.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo) == vector(f"{v}.pub.der")
    pk.verify(vector(f"{v}.sig"), vector("message.txt"))           # OpenSSL's signature
    pk.verify(sk.sign(b"signed by pqforge with OpenSSL's key"), b"signed by pqforge with OpenSSL's key")


@pytest.mark.parametrize("name", SETS)
@pytest.mark.parametrize("kdf", ["pbkdf2", "scrypt"])
def test_keys_openssl_encrypted_open_with_their_passphrase_only(name, kdf):
    v = SETS[name]
    data = vector(f"{v}.{kdf}.pem")
    assert data.startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n")
    sk = pqforge.load_pem_private_key(data, PASSPHRASE)
    assert sk.private_bytes_raw() == pqforge.load_pem_private_key(vector(f"{v}.key.pem")).private_bytes_raw()
    with pytest.raises(InvalidKey, match="wrong password"):
        pqforge.load_pem_private_key(data, b"pqforge tes")
    with pytest.raises(InvalidType, match="encrypted: a password is needed"):
        pqforge.load_pem_private_key(data)


@pytest.mark.parametrize("name", SETS)
def test_every_mayo_key_round_trips_in_every_form(name):
    alg = MAYO[name]
    sk = alg.generate_private_key()
    pk = sk.public_key()
    for encoding, load_private, load_public in ((Encoding.PEM, pqforge.load_pem_private_key, pqforge.load_pem_public_key),
                                                (Encoding.DER, pqforge.load_der_private_key, pqforge.load_der_public_key)):
        plain = sk.private_bytes(encoding, PrivateFormat.PKCS8, NoEncryption())
        assert load_private(plain).private_bytes_raw() == sk.private_bytes_raw()
        sealed = sk.private_bytes(encoding, PrivateFormat.PKCS8, BestAvailableEncryption(b"correct horse"))
        assert load_private(sealed, b"correct horse").private_bytes_raw() == sk.private_bytes_raw()
        assert load_public(pk.public_bytes(encoding, PublicFormat.SubjectPublicKeyInfo)) == pk
    assert sk.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()) == sk.private_bytes_raw()
    assert pk.public_bytes(Encoding.Raw, PublicFormat.Raw) == pk.public_bytes_raw()


def test_encrypted_keys_are_pbes2_with_scrypt_and_aes_256_cbc_that_openssl_opens():
    """What is written: PBES2, scrypt at the largest cost OpenSSL 3 opens by default (N = 2**14,
    r = 8: 16 MiB, under its 32 MiB limit), AES-256-CBC; a fresh salt and IV each time."""
    sk = MAYO["MAYO-1"].generate_private_key()
    first, second = (sk.private_bytes(Encoding.DER, PrivateFormat.PKCS8, BestAvailableEncryption(b"pw"))
                     for _ in range(2))
    info = asn1.decode_der(s.EncryptedWithScrypt, first)
    assert info.encryption_algorithm.algorithm == ObjectIdentifier("1.2.840.113549.1.5.13")
    pbes2 = info.encryption_algorithm.parameters
    assert pbes2.key_derivation_func.algorithm == ObjectIdentifier("1.3.6.1.4.1.11591.4.11")
    params = pbes2.key_derivation_func.parameters
    assert (params.cost_parameter, params.block_size, params.parallelization_parameter) == (2**14, 8, 1)
    assert 128 * params.cost_parameter * params.block_size <= 32 << 20
    assert pbes2.encryption_scheme.algorithm == ObjectIdentifier("2.16.840.1.101.3.4.1.42")
    assert len(pbes2.encryption_scheme.iv) == 16 and len(params.salt) == 16
    assert first != second


def test_a_pkcs8_key_with_the_seed_only_is_read():
    sk = MAYO["MAYO-2"].generate_private_key()
    der = _pkcs8("1.3.9999.8.2.3", asn1.encode_der(sk.private_bytes_raw()))
    loaded = pqforge.load_der_private_key(der)
    assert loaded.private_bytes_raw() == sk.private_bytes_raw() and loaded.public_key() == sk.public_key()


def test_a_public_key_inside_that_the_seed_does_not_make_is_refused():
    one, other = MAYO["MAYO-1"].generate_private_key(), MAYO["MAYO-1"].generate_private_key()
    der = _pkcs8("1.3.9999.8.1.3", asn1.encode_der(one.private_bytes_raw() + other.public_key().public_bytes_raw()))
    with pytest.raises(InvalidKey, match="not the one its seed makes"):
        pqforge.load_der_private_key(der)


def test_malformed_der_is_refused_with_what_was_wrong():
    der = vector("mayo1.key.der")
    with pytest.raises(InvalidKey, match="truncated"):
        pqforge.load_der_private_key(der[:-1])
    with pytest.raises(InvalidKey, match="trailing bytes"):
        pqforge.load_der_private_key(der + b"\0")
    with pytest.raises(InvalidKey, match="not valid DER"):            # a BER (non-minimal) length
        pqforge.load_der_public_key(b"\x30\x84" + (len(vector("mayo1.pub.der")) - 4).to_bytes(4, "big")
                                    + vector("mayo1.pub.der")[4:])
    with pytest.raises(InvalidKey, match="must hold 24 bytes .* or 1444"):
        pqforge.load_der_private_key(_pkcs8("1.3.9999.8.1.3", asn1.encode_der(b"\1" * 25)))
    with pytest.raises(InvalidKey, match="version 1 is not read"):
        pqforge.load_der_private_key(_pkcs8("1.3.9999.8.1.3", asn1.encode_der(b"\1" * 24), version=1))
    with pytest.raises(InvalidKey, match="whole bytes"):
        pqforge.load_der_public_key(asn1.encode_der(s.SubjectPublicKeyInfo(
            algorithm=s.AlgorithmIdentifier(algorithm=ObjectIdentifier("1.3.9999.8.1.3")),
            subject_public_key=asn1.BitString(b"\0" * 1420, 4))))
    with pytest.raises(InvalidKey, match="MAYO-1 public key must be 1420 bytes"):
        pqforge.load_der_public_key(asn1.encode_der(s.SubjectPublicKeyInfo(
            algorithm=s.AlgorithmIdentifier(algorithm=ObjectIdentifier("1.3.9999.8.1.3")),
            subject_public_key=asn1.BitString(b"\0" * 1419, 0))))


def test_a_foreign_key_names_its_algorithm_and_those_expected():
    ed = Ed25519PrivateKey.generate()
    with pytest.raises(UnknownAlgorithm, match=r"1\.3\.101\.112.*MAYO-1 \(1\.3\.9999\.8\.1\.3\)"):
        pqforge.load_der_private_key(ed.private_bytes(Encoding.DER, PrivateFormat.PKCS8, NoEncryption()))
    with pytest.raises(UnknownAlgorithm, match=r"1\.3\.101\.112"):
        pqforge.load_pem_public_key(ed.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo))


def test_pem_mistakes_are_named():
    with pytest.raises(InvalidKey, match="no PRIVATE KEY or ENCRYPTED PRIVATE KEY block .*PUBLIC KEY"):
        pqforge.load_pem_private_key(vector("mayo1.pub.pem"))
    with pytest.raises(InvalidKey, match="not PEM"):
        pqforge.load_pem_private_key(vector("mayo1.key.der"))
    with pytest.raises(InvalidKey, match="no PEM block"):
        pqforge.load_pem_public_key(b"hello")
    with pytest.raises(InvalidKey, match="PRIVATE KEY PEM block is truncated"):
        pqforge.load_pem_private_key(vector("mayo2.key.pem")[:3000])
    body = vector("mayo1.pub.pem").replace(b"M", b"*", 1)
    with pytest.raises(InvalidKey):
        pqforge.load_pem_public_key(body)
    relabelled = vector("mayo1.key.pem").replace(b"PRIVATE KEY", b"ENCRYPTED PRIVATE KEY")
    with pytest.raises(InvalidKey, match="does not hold an encrypted"):
        pqforge.load_pem_private_key(relabelled, b"pw")


def test_passwords_follow_pyca():
    with pytest.raises(InvalidType, match="not encrypted"):
        pqforge.load_pem_private_key(vector("mayo1.key.pem"), b"pw")
    with pytest.raises(InvalidType, match="password must be bytes"):
        pqforge.load_pem_private_key(vector("mayo1.scrypt.pem"), "pqforge test")
    assert isinstance(InvalidKey("x"), ValueError) and isinstance(InvalidType("x"), TypeError)


def test_hostile_key_derivation_parameters_are_refused_before_any_work():
    sk = MAYO["MAYO-1"].generate_private_key()
    der = sk.private_bytes(Encoding.DER, PrivateFormat.PKCS8, BestAvailableEncryption(b"pw"))
    info = asn1.decode_der(s.EncryptedWithScrypt, der)
    params = info.encryption_algorithm.parameters.key_derivation_func.parameters
    for (n, r, p), match in (((2**30, 8, 1), "at most 1024 MiB"), ((3, 8, 1), "power of 2"),
                             ((2**14, 0, 1), "r and p positive")):
        changed = s.ScryptParameters(salt=params.salt, cost_parameter=n, block_size=r, parallelization_parameter=p,
                                     key_length=None)
        hostile = asn1.encode_der(s.EncryptedWithScrypt(
            encryption_algorithm=s.PBES2ScryptAlgorithm(
                algorithm=info.encryption_algorithm.algorithm,
                parameters=s.PBES2ScryptParameters(
                    key_derivation_func=s.ScryptAlgorithm(algorithm=info.encryption_algorithm.parameters.key_derivation_func.algorithm,
                                                          parameters=changed),
                    encryption_scheme=info.encryption_algorithm.parameters.encryption_scheme)),
            encrypted_data=info.encrypted_data))
        with pytest.raises(InvalidKey, match=match):
            pqforge.load_der_private_key(hostile, b"pw")
    for params, cipher, match in (
            (s.PBKDF2Parameters(salt=b"s" * 8, iteration_count=10**9, key_length=None, prf=None), AES256, "iteration count"),
            (s.PBKDF2Parameters(salt=b"s" * 8, iteration_count=0, key_length=None, prf=None), AES256, "iteration count 0"),
            (s.PBKDF2Parameters(salt=b"s" * 8, iteration_count=1, key_length=16, prf=None), AES256, "key length is 16"),
            (s.PBKDF2Parameters(salt=b"s" * 8, iteration_count=1, key_length=None, prf=s.HmacAlgorithm(
                algorithm=ObjectIdentifier("1.2.840.113549.2.5"), parameters=None)), AES256, "pseudo-random function"),
            (s.PBKDF2Parameters(salt=b"s" * 8, iteration_count=1, key_length=None, prf=None),
             ObjectIdentifier("1.2.840.113549.3.7"), "AES-128-CBC, AES-192-CBC or AES-256-CBC")):
        hostile = asn1.encode_der(_EncryptedWithPbkdf2(
            encryption_algorithm=_Pbes2Pbkdf2Algorithm(algorithm=PBES2, parameters=_Pbes2Pbkdf2Parameters(
                key_derivation_func=_Pbkdf2Algorithm(algorithm=PBKDF2, parameters=params),
                encryption_scheme=s.CipherAlgorithm(algorithm=cipher, iv=b"i" * 16))),
            encrypted_data=b"\0" * 32))
        with pytest.raises(InvalidKey, match=match):
            pqforge.load_der_private_key(hostile, b"pw")


PBES2, PBKDF2 = ObjectIdentifier("1.2.840.113549.1.5.13"), ObjectIdentifier("1.2.840.113549.1.5.12")
AES256 = ObjectIdentifier("2.16.840.1.101.3.4.1.42")


# an encrypted key with PBKDF2, as OpenSSL writes them, with any parameters a hostile file may hold
@asn1.sequence
class _Pbkdf2Algorithm:
    algorithm: ObjectIdentifier
    parameters: s.PBKDF2Parameters


@asn1.sequence
class _Pbes2Pbkdf2Parameters:
    key_derivation_func: _Pbkdf2Algorithm
    encryption_scheme: s.CipherAlgorithm


@asn1.sequence
class _Pbes2Pbkdf2Algorithm:
    algorithm: ObjectIdentifier
    parameters: _Pbes2Pbkdf2Parameters


@asn1.sequence
class _EncryptedWithPbkdf2:
    encryption_algorithm: _Pbes2Pbkdf2Algorithm
    encrypted_data: bytes


def test_mceliece_keys_have_no_pkcs8_form_and_say_so():
    alg = pqforge.algorithms.get("Classic-McEliece-348864")
    sk = alg.generate_private_key(rng=lambda n: bytes(n))
    with pytest.raises(InvalidInput, match="no object identifier in use"):
        sk.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    with pytest.raises(InvalidInput, match="no object identifier in use"):
        sk.public_key().public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)
    assert sk.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption()) == sk.private_bytes_raw()


def test_unsupported_choices_are_named():
    sk = MAYO["MAYO-1"].generate_private_key()
    with pytest.raises(InvalidInput, match="cannot be encrypted"):
        sk.private_bytes(Encoding.Raw, PrivateFormat.Raw, BestAvailableEncryption(b"pw"))
    with pytest.raises(InvalidInput, match="PrivateFormat.PKCS8"):
        sk.private_bytes(Encoding.PEM, PrivateFormat.TraditionalOpenSSL, NoEncryption())
    with pytest.raises(InvalidInput, match="SubjectPublicKeyInfo"):
        sk.public_key().public_bytes(Encoding.PEM, PublicFormat.Raw)
    with pytest.raises(InvalidType, match="encryption_algorithm"):
        sk.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, b"pw")
    sk.close()
    with pytest.raises(InvalidKey, match="closed"):
        sk.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())


def test_every_format_loads_through_the_key_file_loader():
    from pqforge import keyfile
    sk = MAYO["MAYO-2"].generate_private_key()
    for format in keyfile.FORMATS:
        for key, kind in ((sk, "PRIVATE"), (sk.public_key(), "PUBLIC")):
            data = keyfile.dump(key, format)
            loaded = keyfile.load(data, "k", kind)
            assert (loaded.private_bytes_raw() == sk.private_bytes_raw() if kind == "PRIVATE" else loaded == key)
            other = "PUBLIC" if kind == "PRIVATE" else "PRIVATE"
            with pytest.raises(InvalidKey, match=f"holds a {kind.lower()} key; a {other.lower()} key is expected"):
                keyfile.load(data, "k", other)
    sealed = keyfile.dump(sk, "der", b"pw")
    assert keyfile.load(sealed, "k", "PRIVATE", lambda: b"pw").private_bytes_raw() == sk.private_bytes_raw()
    with pytest.raises(InvalidKey, match="no passphrase was given"):
        keyfile.load(sealed, "k", "PRIVATE")
    with pytest.raises(InvalidInput, match="not encrypted"):
        keyfile.dump(sk, "pqforge", b"pw")


def _pkcs8(oid: str, inner: bytes, version: int = 0) -> bytes:
    return asn1.encode_der(s.PrivateKeyInfo(
        version=version, private_key_algorithm=s.AlgorithmIdentifier(algorithm=ObjectIdentifier(oid)),
        private_key=inner))


def test_random_bytes_are_never_a_key():
    for size in (0, 1, 2, 50, 1500):
        for _ in range(20):
            data = os.urandom(size)
            for load in (pqforge.load_der_private_key, pqforge.load_der_public_key):
                with pytest.raises(pqforge.PQForgeError):
                    load(data)
