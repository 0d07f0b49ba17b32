"""The official known-answer data the tests compare against.

The repository carries it in ``tests/vectors`` (origin and checksums in its README);
``$PQFORGE_KAT_DIR`` points the tests at another copy of the official files instead (plain
``.rsp`` or gzipped ``.rsp.gz``, with the same ``mayo/`` and ``mceliece/`` folders).

MAYO: all 100 entries of each official file. Classic McEliece: the SHA-256 of the official
entries (``kat-sha256.json``) for every set, and the first official entry itself for the sets
whose file is present; for the others, :func:`kem_entry0` regenerates the first entry and proves
it official by that hash before any test uses it.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from pqforge import kat

VECTORS = Path(__file__).resolve().parent / "vectors"

MAYO_FILES = {"MAYO-1": "PQCsignKAT_24_MAYO_1.rsp", "MAYO-2": "PQCsignKAT_24_MAYO_2.rsp",
              "MAYO-3": "PQCsignKAT_32_MAYO_3.rsp", "MAYO-5": "PQCsignKAT_40_MAYO_5.rsp"}


def root() -> Path:
    """``$PQFORGE_KAT_DIR`` when set, else the vectors shipped with the repository."""
    path = Path(os.environ.get("PQFORGE_KAT_DIR") or VECTORS)
    if not path.is_dir():
        raise RuntimeError(f"PQFORGE_KAT_DIR={path} is not a folder of official KAT files "
                           "(expected mayo/ and mceliece/ inside; unset it to use tests/vectors)")
    return path


def find(relative: str) -> Path | None:
    """The official file ``relative`` under :func:`root`, plain or gzipped; None if absent."""
    for candidate in (root() / relative, root() / (relative + ".gz")):
        if candidate.is_file():
            return candidate
    return None


def require(relative: str) -> Path:
    path = find(relative)
    if path is None:
        raise RuntimeError(f"official KAT file {relative}(.gz) not found under {root()}")
    return path


@lru_cache(maxsize=None)
def hashes(scheme: str) -> dict:
    """SHA-256 of the official entries ("single": the first, "all") per set of ``scheme``."""
    return json.loads(require(f"{scheme}/kat-sha256.json").read_text())


@lru_cache(maxsize=None)
def mayo_entries(name: str) -> tuple[dict, ...]:
    """The 100 official entries of a MAYO set."""
    return tuple(kat.read_rsp(require(f"mayo/{MAYO_FILES[name]}")))


def kem_file(name: str) -> Path | None:
    return find(f"mceliece/{name}.count0.rsp")


@lru_cache(maxsize=None)
def kem_entry0(name: str) -> dict:
    """The first official entry of a Classic McEliece set: read from its file where present,
    else regenerated from the DRBG and accepted only if it hashes to the official value."""
    path = kem_file(name)
    if path is not None:
        return kat.read_rsp(path)[0]
    from pqforge.mceliece import ALGORITHMS

    entry = next(kat.kem_kat_entries(ALGORITHMS[name], 1))
    digest = kat.sha256_text(kat.entries_text([entry]))
    if digest != hashes("mceliece")[name]["single"]:
        raise AssertionError(f"{name}: regenerated entry 0 does not hash to the official value")
    return entry
