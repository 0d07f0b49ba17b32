"""The official KAT hashes exist twice: in the package (``pqforge/data/kat-sha256.json``, which
the wheel ships for ``pqforge kat`` and the list of algorithm names) and beside the official
files in ``tests/vectors`` (one file per scheme, with its checksum in the folder's README), which
the tests read. The two must say the same."""

import hashlib
import json
import re

import pytest

from pqforge import algorithms

from .known_answers import VECTORS

ENTRIES = {"mayo": 100, "mceliece": 10}
"""How many official entries "all" hashes, per scheme (tests/vectors/README.md)."""


def _vectors(scheme: str) -> dict:
    return json.loads((VECTORS / scheme / "kat-sha256.json").read_text())


def test_the_package_and_the_test_vectors_hold_the_same_sets():
    in_vectors = {name for scheme in ENTRIES for name in _vectors(scheme)}
    assert set(algorithms.names()) == in_vectors


@pytest.mark.parametrize("scheme", sorted(ENTRIES))
def test_the_package_and_the_test_vectors_hold_the_same_hashes(scheme):
    for name, official in _vectors(scheme).items():
        shipped = algorithms.official_kat_hashes(name)
        assert shipped == {**official, "all_count": ENTRIES[scheme]}, name


@pytest.mark.parametrize("scheme", sorted(ENTRIES))
def test_the_test_vectors_hashes_are_the_files_their_readme_names(scheme):
    readme = (VECTORS / "README.md").read_text()
    recorded = re.search(rf"`{scheme}/kat-sha256\.json` \(SHA-256 ([0-9a-f]{{64}})\)", readme)
    assert recorded, f"tests/vectors/README.md records no checksum for {scheme}/kat-sha256.json"
    assert hashlib.sha256((VECTORS / scheme / "kat-sha256.json").read_bytes()).hexdigest() == recorded[1]
