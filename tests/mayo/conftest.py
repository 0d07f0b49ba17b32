import pytest

from pqforge.gf16 import sets
from pqforge.mayo import scheme

RUNNABLE = sets.runnable()
"""The kernel sets this CPU runs, fastest first: tests that compare them take each."""


def use_kernel_set(monkeypatch, name):
    """This test runs MAYO with kernel set ``name`` (the override ``PQFORGE_KERNELS`` sets at import)."""
    monkeypatch.setattr(sets, "NAME", sets.choose(name))
    monkeypatch.setattr(sets, "ENCODED", name != "portable")
    monkeypatch.setattr(sets, "FORMS", sets.forms_of(name))
    # and what the scheme derived from the set at import (else the portable set would be handed
    # to the encoded kernels, which then compile for the default forms: GFNI, on any CPU)
    monkeypatch.setattr(scheme, "FROM_SEED", name != "portable" and sets.AES_WIDTH > 0)


@pytest.fixture
def portable_kernels(monkeypatch):
    """The portable (bit-plane) GF(16) kernels, also on a CPU with a faster set."""
    use_kernel_set(monkeypatch, "portable")
