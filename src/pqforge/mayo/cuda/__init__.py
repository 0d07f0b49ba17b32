"""GPU backend for batched MAYO (numba-cuda; optional: ``pip install pqforge[gpu]``).

Importing this package needs nothing beyond numpy: the CUDA modules (``aes``, ``keccak``,
``verify``, ``batch``) import ``numba.cuda`` themselves and are imported only when a GPU
backend is asked for. The tensor path (``mayo.tensor``, the GEMM formulation) runs on numpy or
CuPy arrays alike.

Without a GPU every kernel also runs under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``,
set before numba is first imported), which is how the test suite exercises them.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import os

from ...errors import DeviceOutOfMemory


def simulator_enabled() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def stack_installed() -> bool:
    """True when numba-cuda can be imported (says nothing about a device)."""
    try:
        from numba import cuda  # noqa: F401
    except ImportError:
        return False
    return True


DRIVER_LIBRARY = "nvcuda.dll" if os.name == "nt" else "libcuda.so.1"


@functools.lru_cache(maxsize=None)
def driver_present() -> bool:
    """Whether the NVIDIA driver library can be loaded: without it no device can answer, and
    asking numba-cuda would cost its import (about 0.3 s) on the first large batch call."""
    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError:
        return False
    return True


def available(allow_simulator: bool = False) -> bool:
    """True when numba-cuda is installed and a CUDA device answers (or, if allowed, the simulator is on)."""
    if not simulator_enabled() and not driver_present():
        return False
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


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is the device (numba-cuda, CuPy) running out of memory. Under the
    simulator device arrays live in host memory, so a host MemoryError counts there too."""
    text = f"{type(exc).__name__} {exc}".upper()
    return ("OUT_OF_MEMORY" in text or "OUT OF MEMORY" in text
            or (simulator_enabled() and isinstance(exc, MemoryError)))


@contextlib.contextmanager
def out_of_memory_as_error(size: int):
    """The device running out of memory inside becomes DeviceOutOfMemory, which suggests a
    smaller batch; every other error passes unchanged."""
    try:
        yield
    except DeviceOutOfMemory:
        raise
    except Exception as exc:
        if is_out_of_memory(exc):
            raise DeviceOutOfMemory(f"the GPU ran out of memory for a batch of {size}; use a smaller batch "
                                    f"or backend='cpu' (the CPU backend is unaffected)") from exc
        raise
