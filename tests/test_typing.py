"""The public API's type hints pass mypy in strict mode (the configuration is in pyproject.toml)."""

import importlib.util
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT


def test_public_modules_pass_mypy_strict(tmp_path):
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install -e '.[test]')")
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(REPO_ROOT / "pyproject.toml"),
                        "--cache-dir", str(tmp_path / "mypy-cache")],
                       cwd=REPO_ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("Success: no issues found"), r.stdout


def test_the_package_is_marked_typed():
    import pqforge
    from pathlib import Path
    assert (Path(pqforge.__file__).parent / "py.typed").is_file()
