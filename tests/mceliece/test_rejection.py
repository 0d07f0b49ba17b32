"""Implicit rejection: a ciphertext that does not decode yields SHAKE256(0 | s | C), computed
here straight from the specification's formula and the private-key layout."""

import hashlib

import pytest

from pqforge.mceliece import ALGORITHMS

from ..known_answers import kem_entry0


def _rejection_value(name, sk, ct):
    p = ALGORITHMS[name].params
    s = sk[len(sk) - p.n // 8:]          # s is the last n/8 bytes of the private key
    return hashlib.shake_256(b"\x00" + s + ct).digest(32)


@pytest.mark.parametrize("name", ["Classic-McEliece-348864", "Classic-McEliece-460896f",
                                  "Classic-McEliece-6960119", "Classic-McEliece-8192128"])
def test_flipped_bits_give_the_rejection_key(name):
    official = kem_entry0(name)
    alg = ALGORITHMS[name]
    sk, ct = official["sk"], official["ct"]
    mt = alg.params.m * alg.params.t
    for bits in ([0], [5, 77], [mt - 1], list(range(0, mt, 37))):
        bad = bytearray(ct)
        for b in bits:
            bad[b // 8] ^= 1 << (b % 8)
        bad = bytes(bad)
        ss = alg.decapsulate(sk, bad)
        assert ss != official["ss"]
        assert ss == _rejection_value(name, sk, bad)


def test_zero_and_random_ciphertexts():
    name = "Classic-McEliece-348864f"
    official = kem_entry0(name)
    alg = ALGORITHMS[name]
    for ct in (bytes(alg.ciphertext_size), hashlib.sha512(b"x").digest()[:alg.ciphertext_size]
               + bytes(alg.ciphertext_size - 64)):
        assert alg.decapsulate(official["sk"], ct) == _rejection_value(name, official["sk"], ct)
