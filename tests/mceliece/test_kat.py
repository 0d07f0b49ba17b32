"""Classic McEliece against the official known-answer data (Round 4 submission)."""

import pytest

from pqforge import kat
from pqforge.drbg import NistCtrDrbg
from pqforge.mceliece import ALGORITHMS

from ..known_answers import hashes, kem_entry0, kem_file

NAMES = list(ALGORITHMS)


@pytest.mark.parametrize("name", [n for n in NAMES if kem_file(n) is not None])
def test_entry0_matches_official_file(name):
    alg = ALGORITHMS[name]
    official = kat.read_rsp(kem_file(name))[0]
    assert official["count"] == 0
    rng = NistCtrDrbg(official["seed"])
    pk, sk = alg.keypair(rng=rng)
    assert pk == official["pk"]
    assert sk == official["sk"]
    ct, ss = alg.encapsulate(pk, rng=rng)
    assert ct == official["ct"]
    assert ss == official["ss"]
    assert alg.decapsulate(official["sk"], official["ct"]) == official["ss"]


@pytest.mark.parametrize("name", NAMES)
def test_first_ten_entries_hash_to_official_value(name):
    official = hashes("mceliece")[name]
    entries = list(kat.kem_kat_entries(ALGORITHMS[name], 10))
    assert kat.sha256_text(kat.entries_text(entries[:1])) == official["single"]
    assert kat.sha256_text(kat.entries_text(entries)) == official["all"]


@pytest.mark.parametrize("name", NAMES)
def test_public_key_recomputed_from_official_private_key(name):
    alg = ALGORITHMS[name]
    official = kem_entry0(name)
    sk = alg.private_key_from_bytes(official["sk"])
    assert sk.public_key().public_bytes_raw() == official["pk"]
    assert sk.decapsulate(official["ct"]) == official["ss"]
