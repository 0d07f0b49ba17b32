"""Classic McEliece against the official known-answer files (Round 4 submission)."""

import json

import pytest

from pqforge import kat
from pqforge.drbg import NistCtrDrbg
from pqforge.mceliece import ALGORITHMS

NAMES = list(ALGORITHMS)


def _entry0(kat_root, name):
    return kat.read_rsp(kat_root / "mceliece" / f"{name}.count0.rsp.gz")[0]


@pytest.mark.parametrize("name", NAMES)
def test_entry0_matches_official_file(kat_root, name):
    alg = ALGORITHMS[name]
    official = _entry0(kat_root, name)
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
def test_first_ten_entries_hash_to_official_value(kat_root, name):
    hashes = json.loads((kat_root / "mceliece" / "kat-sha256.json").read_text())[name]
    entries = list(kat.kem_kat_entries(ALGORITHMS[name], 10))
    assert kat.sha256_text(kat.entries_text(entries[:1])) == hashes["single"]
    assert kat.sha256_text(kat.entries_text(entries)) == hashes["all"]


@pytest.mark.parametrize("name", NAMES)
def test_public_key_recomputed_from_official_private_key(kat_root, name):
    alg = ALGORITHMS[name]
    official = _entry0(kat_root, name)
    sk = alg.private_key_from_bytes(official["sk"])
    assert sk.public_key().public_bytes_raw() == official["pk"]
    assert sk.decapsulate(official["ct"]) == official["ss"]
