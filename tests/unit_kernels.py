"""Two tiny kernels as units, for the tests of ``pqforge.jit.units``. With ``UNIT_COMPILE_LOG`` set
in the environment, every process that imports this module (a test's, or a helper looking for
the units) appends "pid key" to that file for each unit it compiles (not for those it loads
from the cache)."""

import os

import numba as nb
import numpy as np
from numba import types

from pqforge.jit.units import Unit

_i64 = types.Array(types.int64, 1, "C")


@nb.njit(cache=True)
def weighted_sum(a, w):
    total = 0
    for i in range(a.shape[0]):
        total += w * a[i]
    return total


@nb.njit(cache=True)
def scale_into(a, w, out):
    for i in range(a.shape[0]):
        out[i] = w * a[i]


if os.environ.get("UNIT_COMPILE_LOG"):
    _compile_here = Unit._compile_here

    def _logged(self):
        _compile_here(self)
        if self._cfunc.cache_hits == 0:
            with open(os.environ["UNIT_COMPILE_LOG"], "a") as log:
                log.write(f"{os.getpid()} {self.key}\n")
    Unit._compile_here = _logged


SUM = Unit(weighted_sum, types.int64(_i64, types.int64))
SCALE = Unit(scale_into, types.void(_i64, types.int64, _i64))
sum_unit, scale_unit = SUM.call, SCALE.call


@nb.njit(cache=True)
def twice_the_sum(address, a, w):
    return sum_unit(address, a, w) + sum_unit(address, a, w)


@nb.njit(cache=True)
def scaled_sum(addresses, a, w):
    out = np.zeros_like(a)
    scale_unit(addresses[1], a, w, out)
    return sum_unit(addresses[0], out, 1)
