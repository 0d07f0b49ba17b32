"""One error model: the same mistake raises the same class in the key objects, the functional
layer and the batch calls of both schemes."""

import cryptography.exceptions
import pytest

import pqforge.mceliece as mc
from pqforge import mayo
from pqforge.errors import InvalidInput, InvalidKey, InvalidSignature, InvalidType, PQForgeError, UnknownAlgorithm

SHORT = b"\0" * 5


def _mayo_short_key_calls():
    alg = mayo.MAYO2
    return {
        "MAYO public_key_from_bytes": lambda: alg.public_key_from_bytes(SHORT),
        "MAYO private_key_from_bytes": lambda: alg.private_key_from_bytes(SHORT),
        "mayo.verify (public key)": lambda: mayo.verify(alg, SHORT, b"m", bytes(alg.signature_size)),
        "mayo.sign (secret key)": lambda: mayo.sign(alg, SHORT, b"m"),
        "mayo.expand_pk": lambda: mayo.expand_pk(alg, SHORT),
        "mayo.expand_sk": lambda: mayo.expand_sk(alg, SHORT),
        "mayo.open_nist (public key)": lambda: mayo.open_nist(alg, SHORT, bytes(alg.signature_size)),
        "mayo.sign_many (batch, secret key)": lambda: mayo.sign_many(alg, [SHORT], [b"m"], backend="cpu"),
    }


def _mceliece_short_key_calls():
    alg = mc.McEliece348864
    return {
        "McEliece public_key_from_bytes": lambda: alg.public_key_from_bytes(SHORT),
        "McEliece private_key_from_bytes": lambda: alg.private_key_from_bytes(SHORT),
        "mceliece.encapsulate": lambda: mc.encapsulate(alg, SHORT),
        "mceliece.decapsulate": lambda: mc.decapsulate(alg, SHORT, bytes(alg.ciphertext_size)),
        "McElieceAlgorithm.encapsulate": lambda: alg.encapsulate(SHORT),
    }


@pytest.mark.parametrize("name,call", list(_mayo_short_key_calls().items()) + list(_mceliece_short_key_calls().items()))
def test_a_short_key_is_invalid_key_everywhere(name, call):
    with pytest.raises(InvalidKey, match="bytes"):
        call()


def test_a_key_of_the_wrong_type_is_invalid_type_everywhere():
    for call in (lambda: mayo.MAYO2.public_key_from_bytes("00"), lambda: mayo.verify(mayo.MAYO2, "00", b"m", b"s"),
                 lambda: mc.McEliece348864.public_key_from_bytes("00"), lambda: mc.encapsulate(mc.McEliece348864, "00")):
        with pytest.raises(InvalidType):
            call()


def test_unknown_names_and_wrong_parameter_types():
    for call in (lambda: mayo.get("MAYO-4"), lambda: mayo.keypair("MAYO-4"), lambda: mc.get("mceliece1"),
                 lambda: mc.keypair("Classic-McEliece-1")):
        with pytest.raises(UnknownAlgorithm):
            call()
    for call in (lambda: mayo.keypair(2), lambda: mc.keypair(348864)):
        with pytest.raises(InvalidType):
            call()


def test_verify_returns_false_for_any_malformed_signature_of_the_right_type():
    sk = mayo.MAYO2.generate_private_key()
    pk = sk.public_key().public_bytes_raw()
    sig = sk.sign(b"m")
    for bad in (b"", sig[:-1], sig + b"\0", bytearray(sig[1:]), memoryview(sig)[:100], bytes(186), b"\xff" * 186):
        assert mayo.verify(mayo.MAYO2, pk, b"m", bad) is False
    assert mayo.verify(mayo.MAYO2, pk, b"m", sig) is True
    assert mayo.verify_many(mayo.MAYO2, [pk, pk], [b"m", b"m"], [sig, sig[:-1]], backend="cpu").tolist() == [True, False]


def test_a_failed_verification_is_also_pyca_s_invalid_signature():
    # code written for pyca's keys catches ours unchanged; ours stays a PQForgeError
    assert issubclass(InvalidSignature, cryptography.exceptions.InvalidSignature)
    assert issubclass(InvalidSignature, PQForgeError)
    sk = mayo.MAYO2.generate_private_key()
    sig = sk.sign(b"m")
    for data, signature in ((b"other", sig), (b"m", sig[:-1])):
        with pytest.raises(cryptography.exceptions.InvalidSignature) as caught:
            sk.public_key().verify(signature, data)
        assert isinstance(caught.value, InvalidSignature)
    assert sk.public_key().verify(sig, b"m") is None


def test_a_short_ciphertext_is_invalid_input_in_both_layers():
    sk = mc.McEliece348864.generate_private_key()
    for call in (lambda: sk.decapsulate(SHORT), lambda: mc.decapsulate(mc.McEliece348864, sk.private_bytes_raw(), SHORT)):
        with pytest.raises(InvalidInput, match="ciphertext must be 96 bytes"):
            call()
