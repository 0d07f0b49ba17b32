"""Run a compiled kernel's plain-Python twin all the way down.

``kernel.py_func`` alone still calls the *compiled* helpers it references; ``pure(kernel)``
returns a callable that runs the twin with every numba dispatcher in the kernel modules'
namespaces temporarily replaced by its own ``py_func``, so no compiled code is involved.
"""

import contextlib
import importlib
import pkgutil

from numba.core.registry import CPUDispatcher

from pqforge.gf16 import gfni, shuffle
from pqforge.gf16 import kernels as gf16_kernels
from pqforge.mayo import kernels as mayo_kernels

MODULES = (gf16_kernels, gfni, shuffle, mayo_kernels,
           *(importlib.import_module(f"{mayo_kernels.__name__}.{m.name}") for m in pkgutil.iter_modules(mayo_kernels.__path__)
             if m.name != "batch"))


@contextlib.contextmanager
def _python_globals():
    saved = []
    for module in MODULES:
        for name, value in list(vars(module).items()):
            if isinstance(value, CPUDispatcher):
                saved.append((module, name, value))
                setattr(module, name, value.py_func)
            elif getattr(value, "unit", None) is not None:     # a call through a unit: the kernel's twin
                saved.append((module, name, value))
                setattr(module, name, lambda address, *args, kernel=value.unit.kernel: kernel.py_func(*args))
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


def pure(kernel):
    def run(*args):
        with _python_globals():
            return kernel.py_func(*args)
    return run
