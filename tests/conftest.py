import sys
from pathlib import Path

import pytest

from . import background, known_answers

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def kat_root() -> Path:
    """The folder of official KAT files (``tests/vectors``, or ``$PQFORGE_KAT_DIR``)."""
    return known_answers.root()


@pytest.fixture(scope="session", autouse=True)
def _reap_compile_helpers():
    """Compile helpers that operations of this process started (``pqforge.jit.units``) are ended
    and reaped when the session ends: none outlives pytest or warns that it is still running."""
    yield
    units = sys.modules.get("pqforge.jit.units")
    if units is not None:
        units.stop_helpers()


_JOBS = pytest.StashKey[list]()


def pytest_collection_modifyitems(config, items):
    """Tests that wait for a background job run last; their jobs start now (``background``)."""
    waiting = [item for item in items if item.get_closest_marker("background")]
    items[:] = [item for item in items if not item.get_closest_marker("background")] + waiting
    if not config.option.collectonly:
        config.stash[_JOBS] = background.jobs_of(waiting)
        for job in config.stash[_JOBS]:
            job.start()


def pytest_unconfigure(config):
    for job in config.stash.get(_JOBS, []):
        job.stop()
