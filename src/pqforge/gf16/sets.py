"""The kernel set: which GF(16) products MAYO runs, chosen once, here.

- ``gfni``: products on the specification's nibble encoding with the GFNI affine instruction
  (``gf16.gfni``), on x86-64 CPUs with GFNI and AVX (Intel Ice Lake and later, AMD Zen 4 and later);
- ``avx2``: products on the same encoding with AVX2 byte shuffles (``gf16.shuffle``), on every
  x86-64 CPU with AVX2;
- ``neon``: the same byte shuffles with NEON's 16-byte table look-up (``tbl``), on every aarch64
  CPU;
- ``portable``: bit-plane kernels (``gf16.kernels``), on any CPU.

The encoded sets share every MAYO kernel (``mayo.kernels.encoded``): they differ only in a
scalar's *form* (a bit matrix for gfni, a pair of shuffle tables for avx2 and neon), and a kernel
learns which from the type of the forms array it is given (``FORMS``), so numba compiles and
caches each set's code apart. avx2 and neon share their forms too: the shuffle is the
architecture's own instruction, and numba compiles for one architecture only. Callers ask
``ENCODED`` and pass ``FORMS``; nothing else asks which set runs.

Beside an encoded set, MAYO's public matrices come from AES-128-CTR compiled with the CPU's AES
instructions (``AES_WIDTH``, ``pqforge.aes``); with the portable set, from OpenSSL.

The choice is the first of gfni, avx2, neon, portable that the CPU numba compiles for can run
(``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES`` when set, else the host), or ``PQFORGE_KERNELS``
(gfni, avx2, neon, portable or auto). Asking for a set this CPU cannot run, or for an unknown
one, is an error naming what is available.
"""

from __future__ import annotations

import os

import numpy as np

from ..errors import KernelSetUnavailable
from ..jit.target import cpu_features

ENV = "PQFORGE_KERNELS"
NAMES = ("gfni", "avx2", "neon", "portable")
"""Fastest first (neon and the x86 sets never run on one CPU)."""

_NEEDS = {"gfni": {"gfni", "avx"}, "avx2": {"avx2"}, "neon": {"neon"}, "portable": set()}


def needs(name: str) -> set[str]:
    """The CPU features set ``name`` runs on."""
    return set(_NEEDS[name])


def runnable() -> tuple[str, ...]:
    """The sets this CPU can run, fastest first."""
    features = cpu_features()
    return tuple(name for name in NAMES if _NEEDS[name] <= features)


def choose(wanted: str | None = None) -> str:
    """The set for ``wanted`` (a name, "auto" or None: the fastest this CPU runs)."""
    wanted = (wanted or "auto").strip().lower()
    can = runnable()
    if wanted == "auto":
        return can[0]
    if wanted not in NAMES:
        raise KernelSetUnavailable(f"{ENV}={wanted!r} names no kernel set; expected one of auto, "
                                   f"{', '.join(NAMES)} (this CPU runs {', '.join(can)})")
    if wanted not in can:
        raise KernelSetUnavailable(f"{ENV}={wanted}: this CPU lacks {', '.join(sorted(_NEEDS[wanted]))}; "
                                   f"it runs {', '.join(can)}")
    return wanted


def forms_of(name: str) -> np.ndarray | None:
    """An empty array of the scalar forms of set ``name`` (None for the portable set)."""
    tables = np.zeros((0, 4), np.uint64)
    return {"gfni": np.zeros(0, np.uint64), "avx2": tables, "neon": tables}.get(name)


NAME = choose(os.environ.get(ENV))
"""The set in use (printed by ``pqforge bench``)."""
ENCODED = NAME != "portable"
"""Whether MAYO keys stay in their byte encoding (every set but portable)."""
FORMS = forms_of(NAME)
"""What the encoded kernels take as their ``like`` argument: the type says which products run."""


def aes_width(name: str, features: set[str]) -> int:
    """AES blocks per instruction for the compiled AES-128-CTR (``pqforge.aes``) beside set
    ``name``: 4 with VAES and AVX-512, 2 with VAES, 1 with AES-NI or the ARMv8 AES
    instructions (both named ``aes``); 0 (OpenSSL through the ``cryptography`` package) with
    the portable set or without AES instructions."""
    if name == "portable" or "aes" not in features:
        return 0
    if "vaes" not in features:
        return 1
    return 4 if "avx512f" in features else 2


AES_WIDTH = aes_width(NAME, cpu_features())
"""How MAYO's public matrices are expanded: see ``aes_width``."""

