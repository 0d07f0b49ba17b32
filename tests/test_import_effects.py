"""Importing pqforge leaves the host process alone: glibc's malloc keeps its settings until the
command line, the service or the user asks for the tuning (``pqforge.retain_freed_heap``), and no
cache folder is made. Every case runs a fresh interpreter."""

import ctypes
import os
import subprocess
import sys

import pytest

PROBE = """
import ctypes


class MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                     "fsmblks", "uordblks", "fordblks", "keepcost")]


def mapped():
    # whether malloc serves 31 MiB from a fresh mapping: glibc's threshold (adaptive, at most
    # 32 MiB) is below that, the tuned one (32 MiB) above. The answer holds for the first call
    # only, since freeing the mapping raises the adaptive threshold.
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = MallInfo2
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    before = libc.mallinfo2().hblks
    block = libc.malloc(31 << 20)
    after = libc.mallinfo2().hblks
    libc.free(block)
    return after > before
"""


def run(code: str, **env: str) -> str:
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "PQFORGE_MALLOC_TUNING")}
    proc = subprocess.run([sys.executable, "-c", code], env={**base, **env}, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def _glibc_with_mallinfo2() -> bool:
    try:
        return hasattr(ctypes.CDLL(None), "mallinfo2")
    except OSError:
        return False


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="needs glibc 2.33 or later (mallinfo2)")
@pytest.mark.parametrize("code, tuned", [
    ("import pqforge, pqforge.mayo, pqforge.mceliece", False),
    ("import pqforge\npqforge.retain_freed_heap()", True),
    ("from pqforge import cli\ntry:\n    cli.main(['--version'])\nexcept SystemExit:\n    pass", True),
], ids=["import", "explicit call", "command line"])
def test_only_an_explicit_call_tunes_malloc(code, tuned):
    out = run(PROBE + code + "\nprint('mapped', mapped())\n")
    assert out.splitlines()[-1] == f"mapped {not tuned}"


def test_import_creates_no_cache_folder(tmp_path):
    cache = tmp_path / "fresh" / "numba"
    out = run("import pqforge\n"
              "from pqforge import algorithms\nfrom pqforge.jit import cache\n"
              "from pqforge.cli import build_parser\n"
              "algorithms.names()\n"
              "build_parser().format_help()\n"
              "print(cache.CACHE_SOURCE, cache.CACHE_DIR)\n", NUMBA_CACHE_DIR=str(cache))
    assert out.split() == ["NUMBA_CACHE_DIR", str(cache)]     # chosen, since it can be made ...
    assert list(tmp_path.iterdir()) == []                    # ... but not made


@pytest.mark.skipif(not _glibc_with_mallinfo2(), reason="needs glibc 2.33 or later (mallinfo2)")
def test_the_service_tunes_malloc_when_it_starts(tmp_path):
    pytest.importorskip("fastapi", reason="the service needs the serve extra: pip install 'pqforge[serve]'")
    store = f"sqlite:///{tmp_path / 'pqforge.db'}"
    out = run(PROBE + "from pqforge.service import Settings, create_app\n"
              f"create_app(Settings(store={store!r}))\n"
              "print('mapped', mapped())\n")
    assert out.splitlines()[-1] == "mapped False"
