"""Importing pqforge leaves the host process alone: no cache folder is made. Every case runs a
fresh interpreter."""

import os
import subprocess
import sys


def run(code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR",)}
    proc = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_import_creates_no_cache_folder(tmp_path):
    cache = tmp_path / "fresh" / "numba"
    out = run("import pqforge\n"
              "from pqforge import _compile_cache, algorithms\n"
              "from pqforge.cli import build_parser\n"
              "algorithms.names()\n"
              "build_parser().format_help()\n"
              "print(_compile_cache.CACHE_SOURCE, _compile_cache.CACHE_DIR)\n", NUMBA_CACHE_DIR=str(cache))
    assert out.split() == ["NUMBA_CACHE_DIR", str(cache)]     # chosen, since it can be made ...
    assert list(tmp_path.iterdir()) == []                    # ... but not made
