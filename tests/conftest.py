from pathlib import Path

import pytest

from . import known_answers

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def kat_root() -> Path:
    """The folder of official KAT files (``tests/vectors``, or ``$PQFORGE_KAT_DIR``)."""
    return known_answers.root()
