"""The CPU numba compiles for (``pqforge.jit.target``): its features from a configured target,
and the baseline of each architecture (NEON is part of AArch64, so every aarch64 target has it)."""

import numba
import pytest

from pqforge.gf16 import sets
from pqforge.jit import target


@pytest.fixture
def configured(monkeypatch):
    """Configure numba's target as NUMBA_CPU_NAME / NUMBA_CPU_FEATURES would, on an architecture."""
    def configure(arch, name, features):
        monkeypatch.setattr(target, "architecture", lambda: arch)
        monkeypatch.setattr(numba.config, "CPU_NAME", name)
        monkeypatch.setattr(numba.config, "CPU_FEATURES", features)
    return configure


def test_a_configured_feature_list_is_read_with_its_removals(configured):
    configured("x86_64", "haswell", "+64bit,+avx,+avx2,-gfni")
    assert target.cpu_features() == {"64bit", "avx", "avx2"}
    assert sets.runnable() == ("avx2", "portable")


def test_every_aarch64_target_has_neon_unless_it_is_taken_away(configured):
    configured("aarch64", "neoverse-n1", "+aes,+sha2")
    assert target.cpu_features() == {"neon", "aes", "sha2"}
    assert sets.runnable() == ("neon", "portable")
    assert sets.aes_width("neon", target.cpu_features()) == 1
    configured("aarch64", "generic", None)            # a named CPU without a list: the baseline
    assert target.cpu_features() == {"neon"}
    configured("aarch64", "generic", "-neon")
    assert sets.runnable() == ("portable",)


def test_the_architecture_is_the_one_numba_compiles_for():
    import platform
    assert target.architecture() == {"arm64": "aarch64", "AMD64": "x86_64"}.get(platform.machine(), platform.machine())
