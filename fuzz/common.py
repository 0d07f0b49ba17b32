"""What every harness shares: instrumenting pqforge, the exceptions a parser may raise, and
starting libFuzzer.

A harness is ``fuzz/fuzz_<target>.py`` with a ``test_one_input(data: bytes)`` that returns, or
raises only what its docstring allows, and ends with ``common.main(test_one_input)``; its seeds
are the files of ``fuzz/corpus/<target>/``. ``fuzz/run.py`` finds both by name.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import tempfile
from pathlib import Path

import atheris

CORPUS = Path(__file__).resolve().parent / "corpus"

_USES_NUMBA = re.compile(r"^\s*(?:import numba|from numba)", re.MULTILINE)


def _compiled_modules() -> list[str]:
    """The pqforge modules that use numba. They are not instrumented: numba compiles (and keys its
    cache on) a function's bytecode, and instrumented bytecode calls back into atheris."""
    spec = importlib.util.find_spec("pqforge")
    root = Path(next(iter(spec.submodule_search_locations)))
    names = []
    for path in root.rglob("*.py"):
        if _USES_NUMBA.search(path.read_text(encoding="utf-8")):
            parts = path.relative_to(root.parent).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


@contextlib.contextmanager
def instrumented():
    """Import pqforge's Python modules inside this block to give the fuzzer their coverage (and
    nothing else's: not numpy, pydantic or the standard library)."""
    with atheris.instrument_imports(include=["pqforge"], exclude=_compiled_modules()):
        yield


SCRATCH_ENV = "PQFORGE_FUZZ_SCRATCH"
"""Where a harness makes its scratch folder (``run.py`` sets it to a folder it removes at the end)."""


def memory_folder() -> str | None:
    """/dev/shm where there is one: opening a file on disk can cost more than the parser under test."""
    memory = "/dev/shm"
    return memory if os.path.isdir(memory) and os.access(memory, os.W_OK) else None


def scratch(target: str) -> str:
    """A fresh folder for the files a harness writes per input."""
    return tempfile.mkdtemp(prefix=f"pqforge-fuzz-{target}-", dir=os.environ.get(SCRATCH_ENV) or memory_folder())


def main(test_one_input) -> None:
    """Run libFuzzer with this process's arguments (a corpus folder, ``-runs=``, ...)."""
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


def patched(base: bytes, fdp: atheris.FuzzedDataProvider, max_patches: int = 4) -> bytes:
    """``base`` with a few fuzzer-chosen changes: bytes overwritten at chosen offsets, then
    possibly cut or extended. A harness whose valid inputs are far larger than a fuzzer input
    (keys, ciphertexts, signatures) mutates a valid one this way."""
    out = bytearray(base)
    for _ in range(fdp.ConsumeIntInRange(0, max_patches)):
        chunk = fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 8))
        if not chunk or not out:
            break
        at = fdp.ConsumeIntInRange(0, len(out) - 1)
        chunk = chunk[:len(out) - at]
        out[at:at + len(chunk)] = chunk
    cut = fdp.ConsumeIntInRange(0, 3)
    if cut == 1:
        del out[fdp.ConsumeIntInRange(0, len(out)):]
    elif cut == 2:
        out += fdp.ConsumeBytes(fdp.ConsumeIntInRange(1, 16))
    return bytes(out)
