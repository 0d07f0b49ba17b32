"""The CPU numba compiles for: its architecture and features, and what kernels choose by them
(MAYO's kernel set in ``gf16.sets``, Classic McEliece's product schedule in ``mceliece.gf``, the
AES instructions in ``pqforge.aes``).

numba's configured target (``NUMBA_CPU_NAME`` / ``NUMBA_CPU_FEATURES``) when set, else the host;
its compiled kernels are cached per target, so a choice made here is made again, consistently,
wherever the cache is used. numba compiles for the architecture it runs on (x86-64 or aarch64),
never across.

Feature names are LLVM's: ``avx2``, ``gfni``, ``aes`` (AES-NI) on x86-64; ``neon``, ``aes`` (the
ARMv8 cryptographic extension) on aarch64.
"""

from __future__ import annotations

import functools

import numba as nb

BASELINE = {"x86_64": set(), "aarch64": {"neon"}}
"""Features every CPU of an architecture has: Advanced SIMD (NEON) is part of AArch64 itself."""


@functools.lru_cache(maxsize=None)
def architecture() -> str:
    """The architecture numba compiles for: "x86_64", "aarch64" or another LLVM triple's first part."""
    import llvmlite.binding as llvm
    arch = llvm.get_process_triple().split("-", 1)[0]
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(arch, arch)


def cpu_features() -> set[str]:
    """The features of the CPU numba compiles for (its configured target, else the host)."""
    config = nb.config
    baseline = BASELINE.get(architecture(), set())
    if config.CPU_FEATURES is not None:
        named = [f for f in config.CPU_FEATURES.split(",") if f]
        return ({f[1:] for f in named if f.startswith("+")} | baseline) - {f[1:] for f in named if f.startswith("-")}
    if config.CPU_NAME is not None and config.CPU_NAME != "host":
        return set(baseline)        # a named target without a feature list: assume the baseline
    if architecture() not in BASELINE:
        return set()
    import llvmlite.binding as llvm
    try:
        host = llvm.get_host_cpu_features()
    except RuntimeError:        # LLVM cannot list them here (as numba, which then compiles without)
        return set(baseline)
    return {name for name, on in host.items() if on} | baseline


def vector_registers(features: set[str]) -> int:
    """Vector registers of a CPU with ``features``: 32 with AVX-512, else 16 (AVX2, SSE; NEON
    has 32, of 128 bits, which counts as 16 of the 256 bits kernels lay out for)."""
    return 32 if "avx512f" in features else 16
