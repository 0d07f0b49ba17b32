"""One attempt of the signing loop on bit planes (the portable set), the whipped system solved
through the whip and solver units, and the signature's assembly. Secret: all inputs and
outputs but the rank bit."""

import numba as nb
import numpy as np

from ...gf16.kernels import gf16_mul
from ...jit.cache import JIT_CACHE
from ...jit.units import addresses
from .layout import bitslice_into
from .products import mul_transposed, quadratic_pairs
from .solve import SOLVE, solve_unit
from .whipping import WHIP, whip_unit

_JIT = dict(cache=JIT_CACHE, nogil=True)  # nogil: batches run kernels on several threads


@nb.njit(**_JIT)
def assemble_signature(V, O, x, n, s):
    """s_i = (v_i + O x_i, x_i) for i < k, as k*n elements. Secret: V, O, x (the output is public)."""
    k, v = V.shape
    o = O.shape[1]
    for i in range(k):
        for a in range(v):
            acc = np.int64(V[i, a])
            for c in range(o):
                acc ^= gf16_mul(O[a, c], x[i * o + c])
            s[i * n + a] = acc
        for c in range(o):
            s[i * n + v + c] = x[i * o + c]


def units() -> tuple[int, int]:
    """The addresses of the whip and solver units in this process, the ``units`` argument of
    ``sign_attempt`` and the signing loops (compiled, or loaded from the cache, on first use)."""
    return addresses((WHIP, SOLVE))


@nb.njit(inline="always", **_JIT)     # one compiled level fewer: each level re-optimises its callees
def whip_and_solve(U, M, t, r, f_tail, x, units):
    """The whipped system A x = t - sum_ell z^ell u of the pair products U (k, k, W) and
    M (k, o, W), solved by SampleSolution with randomness r: writes x (k*o elements) and
    returns the (public) rank bit. ``units``: ``units()``. Secret: all inputs and x."""
    k, o, W = M.shape
    m = t.shape[0]
    y = np.zeros(W, np.uint64)
    bitslice_into(t, m, y)
    A = np.zeros((W, k * o), np.uint64)
    whip_unit(units[0], U, M, m, f_tail, y, A)
    return solve_unit(units[1], A, y, m, r, x)


@nb.njit(**_JIT)
def sign_attempt(V, r, P1, L, t, f_tail, x, units):
    """One attempt of the signing loop for vinegar vectors V (k, v) and randomness r (ko):
    M_i = v_i^T L, U = [v_i^T P1 v_j], then ``whip_and_solve``. Writes x and returns the
    (public) rank bit. ``units``: ``units()``. Secret: all inputs and x."""
    k = V.shape[0]
    o = L.shape[1]
    W = L.shape[2]
    M = np.zeros((k, o, W), np.uint64)
    mul_transposed(np.ascontiguousarray(V.T), L, False, M)
    U = np.zeros((k, k, W), np.uint64)
    quadratic_pairs(V, P1, U)
    return whip_and_solve(U, M, t, r, f_tail, x, units)
