import pytest


@pytest.fixture
def portable_kernels(monkeypatch):
    """The portable (bit-plane) GF(16) kernels, also on a CPU with GFNI."""
    from pqforge.gf16 import gfni
    monkeypatch.setattr(gfni, "ACTIVE", False)
    monkeypatch.setattr(gfni, "KERNELS", "portable")
