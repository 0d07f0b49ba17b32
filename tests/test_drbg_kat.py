"""The DRBG and the KAT text format, checked against the official files."""

import json

from pqforge import kat
from pqforge.drbg import NistCtrDrbg
from pqforge.errors import InvalidInput, InvalidType
import pytest


def test_drbg_reproduces_official_seeds_and_messages(kat_root):
    entries = kat.read_rsp(kat_root / "mayo" / "PQCsignKAT_24_MAYO_2.rsp")
    drbg = NistCtrDrbg(bytes(range(48)))
    for e in entries[:5]:
        assert drbg(48) == e["seed"]
        assert drbg(e["mlen"]) == e["msg"]


def test_kem_seed_list_matches_official_entry0(kat_root):
    entry = kat.read_rsp(kat_root / "mceliece" / "Classic-McEliece-348864.count0.rsp.gz")[0]
    assert kat.kat_seeds(1)[0] == entry["seed"]


def test_entries_text_hash_matches_official(kat_root):
    hashes = json.loads((kat_root / "mayo" / "kat-sha256.json").read_text())
    entries = kat.read_rsp(kat_root / "mayo" / "PQCsignKAT_24_MAYO_1.rsp")
    assert kat.sha256_text(kat.entries_text(entries[:1])) == hashes["MAYO-1"]["single"]
    assert kat.sha256_text(kat.entries_text(entries)) == hashes["MAYO-1"]["all"]


def test_drbg_rejects_bad_entropy():
    with pytest.raises(InvalidInput, match="48 bytes"):
        NistCtrDrbg(bytes(47))
    with pytest.raises(InvalidType, match="bytes"):
        NistCtrDrbg("0" * 48)
