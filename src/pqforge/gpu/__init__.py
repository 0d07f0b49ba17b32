"""GPU backend for batched MAYO (numba-cuda; optional: ``pip install pqforge[gpu]``).

Importing this package needs nothing beyond numpy: the CUDA modules (``aes``, ``keccak``,
``verify``, ``batch``) import ``numba.cuda`` themselves and are imported only when a GPU
backend is asked for. ``tensor`` (the GEMM formulation) runs on numpy or CuPy arrays alike.

Without a GPU every kernel also runs under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``,
set before numba is first imported), which is how the test suite exercises them.
"""

from __future__ import annotations

import os


def simulator_enabled() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def stack_installed() -> bool:
    """True when numba-cuda can be imported (says nothing about a device)."""
    try:
        from numba import cuda  # noqa: F401
    except ImportError:
        return False
    return True


def available(allow_simulator: bool = False) -> bool:
    """True when numba-cuda is installed and a CUDA device answers (or, if allowed, the simulator is on)."""
    try:
        from numba import cuda
    except ImportError:
        return False
    if simulator_enabled():
        return allow_simulator
    try:
        return bool(cuda.is_available())
    except Exception:  # a broken driver installation is "no GPU", not a crash
        return False
