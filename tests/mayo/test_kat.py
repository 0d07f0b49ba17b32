"""All 400 official MAYO vectors: regenerated from the DRBG, and the official signatures verified."""

import json

import pytest

from pqforge import kat
from pqforge.mayo import ALGORITHMS

FILES = {"MAYO-1": "PQCsignKAT_24_MAYO_1.rsp", "MAYO-2": "PQCsignKAT_24_MAYO_2.rsp",
         "MAYO-3": "PQCsignKAT_32_MAYO_3.rsp", "MAYO-5": "PQCsignKAT_40_MAYO_5.rsp"}


@pytest.mark.parametrize("name", FILES)
def test_regenerated_kat_equals_official(name, kat_root):
    alg = ALGORITHMS[name]
    official = kat.read_rsp(kat_root / "mayo" / FILES[name])
    assert len(official) == 100
    regenerated = list(kat.signature_kat_entries(alg, 100))
    for mine, theirs in zip(regenerated, official):
        assert mine == theirs, f"{name} count {theirs['count']} differs"
    hashes = json.loads((kat_root / "mayo" / "kat-sha256.json").read_text())[name]
    assert kat.sha256_text(kat.entries_text(regenerated)) == hashes["all"]
    assert kat.sha256_text(kat.entries_text(regenerated[:1])) == hashes["single"]


@pytest.mark.parametrize("name", FILES)
def test_official_signed_messages_open(name, kat_root):
    alg = ALGORITHMS[name]
    for entry in kat.read_rsp(kat_root / "mayo" / FILES[name]):
        assert alg.open_nist(entry["pk"], entry["sm"]) == entry["msg"]
