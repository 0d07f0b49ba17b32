"""All 400 official MAYO vectors: regenerated from the DRBG, and the official signatures verified."""

import pytest

from pqforge import kat
from pqforge.mayo import ALGORITHMS

from ..known_answers import MAYO_FILES, hashes, mayo_entries


@pytest.mark.parametrize("name", MAYO_FILES)
def test_regenerated_kat_equals_official(name):
    alg = ALGORITHMS[name]
    official = mayo_entries(name)
    assert len(official) == 100
    regenerated = list(kat.signature_kat_entries(alg, 100))
    for mine, theirs in zip(regenerated, official):
        assert mine == theirs, f"{name} count {theirs['count']} differs"
    official_hashes = hashes("mayo")[name]
    assert kat.sha256_text(kat.entries_text(regenerated)) == official_hashes["all"]
    assert kat.sha256_text(kat.entries_text(regenerated[:1])) == official_hashes["single"]


@pytest.mark.parametrize("name", MAYO_FILES)
def test_official_signed_messages_open(name):
    alg = ALGORITHMS[name]
    for entry in mayo_entries(name):
        assert alg.open_nist(entry["pk"], entry["sm"]) == entry["msg"]
