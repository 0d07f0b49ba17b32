"""The CPU numba compiles for: its features, and what kernels choose by them (MAYO's kernel set
in ``gf16.sets``, Classic McEliece's product schedule in ``mceliece.gf``).

numba's configured target (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``) when set, else the host;
its compiled kernels are cached per target, so a choice made here is made again, consistently,
wherever the cache is used.
"""

from __future__ import annotations

import numba as nb


def cpu_features() -> set[str]:
    """The features of the CPU numba compiles for (its configured target, else the host)."""
    config = nb.config
    if config.CPU_FEATURES is not None:
        return {f[1:] for f in config.CPU_FEATURES.split(",") if f.startswith("+")}
    if config.CPU_NAME is not None and config.CPU_NAME != "host":
        return set()        # a named target without a feature list: assume the baseline
    import llvmlite.binding as llvm
    if not llvm.get_process_triple().startswith("x86_64"):
        return set()        # the features below are x86 ones
    return {name for name, on in llvm.get_host_cpu_features().items() if on}


def vector_registers(features: set[str]) -> int:
    """Vector registers of a CPU with ``features``: 32 with AVX-512, else 16 (AVX2, SSE; NEON
    has 32, of 128 bits, which counts as 16 of the 256 bits kernels lay out for)."""
    return 32 if "avx512f" in features else 16
