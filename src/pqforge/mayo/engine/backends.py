"""Which backend a batch call runs on, and the interface every backend implements.

``"cpu"`` runs compiled chunks on the shared thread pool (``pool``); ``"cuda"`` runs the device
kernels of ``pqforge.mayo.cuda`` (an optional extra, imported only when asked for); ``"auto"`` (the
default, see ``set_default_backend``) takes the GPU when one is usable and the batch has at least
``AUTO_GPU_MIN_BATCH`` elements, the CPU otherwise. Single-key calls also choose a path:
``"bitsliced"`` (the compiled kernels) or ``"tensor"`` (the big products as GEMMs, numpy on the
CPU, CuPy on the GPU).
"""

from __future__ import annotations

import abc
import contextlib
from typing import Any, Iterator

import numpy as np
import numpy.typing as npt

from ...errors import BackendUnavailable, InvalidInput

BACKENDS = ("auto", "cpu", "cuda")
PATHS = ("bitsliced", "tensor")
AUTO_GPU_MIN_BATCH = 256
"""Smallest batch that ``backend="auto"`` sends to a GPU (below it, launch and transfer dominate)."""

_default_backend = "auto"

Verdicts = npt.NDArray[np.bool_]
Groups = dict[Any, list[tuple[int, Any]]]
"""The elements of a batch call by key: a key's bytes (or identity) -> [(index, key)]."""


def set_default_backend(backend: str) -> None:
    """Process-wide default for batch calls made with ``backend=None``: "auto", "cpu" or "cuda"."""
    global _default_backend
    _default_backend = check_backend(backend)


def get_default_backend() -> str:
    return _default_backend


def check_backend(backend: Any) -> str:
    if backend not in BACKENDS:
        raise InvalidInput(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def check_path(path: Any) -> str:
    if path not in PATHS:
        raise InvalidInput(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    return path


def gpu_usable() -> bool:
    """True when the optional GPU stack is installed and a CUDA device (not the simulator) answers."""
    from .. import cuda
    return cuda.available()


def cupy_installed() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


def choose_backend(backend: str | None, size: int, path: str = "bitsliced") -> str:
    """The backend ("cpu" or "cuda") a call of ``size`` elements on ``path`` runs on ("auto" takes
    the GPU for the tensor path only where CuPy is installed too)."""
    backend = check_backend(_default_backend if backend is None else backend)
    if backend == "cuda":
        from .. import cuda
        if not cuda.stack_installed():
            raise BackendUnavailable("backend='cuda' needs the GPU extra (numba-cuda): pip install pqforge[gpu]")
        if not cuda.available(allow_simulator=True):
            raise BackendUnavailable("backend='cuda' requested but no CUDA device is usable; "
                                     "use backend='cpu' or 'auto'")
        return "cuda"
    if backend == "auto" and size >= AUTO_GPU_MIN_BATCH and gpu_usable():
        if path != "tensor" or cupy_installed():
            return "cuda"
    return "cpu"


@contextlib.contextmanager
def device_memory(backend: str, size: int) -> Iterator[None]:
    """On the GPU backend, the device running out of memory inside becomes DeviceOutOfMemory."""
    if backend != "cuda":
        yield
        return
    from ..cuda import out_of_memory_as_error
    with out_of_memory_as_error(size):
        yield


def array_module(backend: str) -> tuple[Any, Any]:
    """(xp, GEMM dtype) for the tensor path: CuPy with fp16 on the GPU, numpy with fp32 on the CPU."""
    if backend == "cuda":
        try:
            import cupy
        except ImportError:
            raise BackendUnavailable("the tensor path on the GPU needs CuPy: pip install pqforge[gpu]") from None
        return cupy, np.float16
    return np, np.float32


class OneKeyBackend(abc.ABC):
    """What a backend (or a path of one, such as the tensor path) does for a signature scheme's
    single-key batch calls, on checked arguments.

    ``p`` is the parameter set, ``key`` the key object. ``messages``, ``sigs``, ``randomness``
    are lists of bytes of the whole call, indexed by element; each method writes its results
    into ``out`` (a list of signatures, or a bool array of verdicts) and never draws randomness
    itself (the caller has drawn it in element order). ``threads`` is a checked thread count.
    """

    name: str

    @abc.abstractmethod
    def verify_one_key(self, p: Any, key: Any, messages: list[bytes], sigs: list[bytes],
                       good: npt.NDArray[np.int64], out: Verdicts, threads: int) -> None:
        """out[good] = the verdicts of the well-formed elements ``good`` under one public key object."""

    @abc.abstractmethod
    def sign_one_key(self, p: Any, key: Any, messages: list[bytes], randomness: list[bytes], out: list[Any],
                     threads: int) -> None:
        """out[i] = the signature of every element under one secret key object."""


class SignatureBackend(OneKeyBackend):
    """A whole backend: single-key calls, calls with a key per element, key generation.

    ``groups`` maps a key's bytes (or identity) to its elements ``[(index, key)]``; a backend
    returns the groups it leaves to the CPU (keys it cannot take, such as expanded ones on the
    GPU).
    """

    @abc.abstractmethod
    def verify_groups(self, p: Any, groups: Groups, messages: list[bytes], sigs: list[bytes], out: Verdicts,
                      threads: int) -> Groups:
        """Verdicts of every element of ``groups``; returns the groups left undone."""

    @abc.abstractmethod
    def sign_groups(self, p: Any, groups: Groups, messages: list[bytes], randomness: list[bytes], out: list[Any],
                    threads: int) -> Groups:
        """Signatures of every element of ``groups``; returns the groups left undone."""

    @abc.abstractmethod
    def public_keys(self, p: Any, seeds: list[bytes], threads: int) -> list[bytes]:
        """The compact public key of each secret seed (the heavy half of key generation)."""
