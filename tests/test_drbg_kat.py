"""The DRBG and the KAT text format, checked against the official files."""

import pytest

from pqforge import kat
from pqforge.drbg import NistCtrDrbg
from pqforge.errors import InvalidInput, InvalidType

from .known_answers import hashes, kem_entry0, mayo_entries


def test_drbg_reproduces_official_seeds_and_messages():
    entries = mayo_entries("MAYO-2")
    drbg = NistCtrDrbg(bytes(range(48)))
    for e in entries[:5]:
        assert drbg(48) == e["seed"]
        assert drbg(e["mlen"]) == e["msg"]


def test_kem_seed_list_matches_official_entry0():
    assert kat.kat_seeds(1)[0] == kem_entry0("Classic-McEliece-348864")["seed"]


def test_entries_text_hash_matches_official():
    entries = mayo_entries("MAYO-1")
    assert kat.sha256_text(kat.entries_text(entries[:1])) == hashes("mayo")["MAYO-1"]["single"]
    assert kat.sha256_text(kat.entries_text(entries)) == hashes("mayo")["MAYO-1"]["all"]


def test_drbg_rejects_bad_entropy():
    with pytest.raises(InvalidInput, match="48 bytes"):
        NistCtrDrbg(bytes(47))
    with pytest.raises(InvalidType, match="bytes"):
        NistCtrDrbg("0" * 48)
