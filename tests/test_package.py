"""The package as installed: typed (mypy strict on the public modules, configured in
pyproject.toml), licensed, and with a CPU-only test extra."""

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


def _project():
    tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")
    return tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]


def test_the_test_extra_needs_no_cuda_packages():
    extras = _project()["optional-dependencies"]
    assert not [d for d in extras["test"] if "cuda" in d.lower() or "cupy" in d.lower()], extras["test"]
    assert any(d.startswith("numba-cuda") for d in extras["gpu-sim"])
    assert any(d.startswith("mypy") for d in extras["test"])


def test_license_file_matches_the_metadata():
    project = _project()
    assert project["license"] == "Apache-2.0" and project["license-files"] == ["LICENSE"]
    text = (REPO_ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
