import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def kat_dir() -> Path:
    """The official KAT files: $PQFORGE_KAT_DIR, else shared/kat beside the repository."""
    path = Path(os.environ.get("PQFORGE_KAT_DIR", REPO_ROOT.parent / "shared" / "kat"))
    if not path.is_dir():
        raise RuntimeError(f"official KAT files not found at {path}; set PQFORGE_KAT_DIR")
    return path


@pytest.fixture(scope="session")
def kat_root() -> Path:
    return kat_dir()
