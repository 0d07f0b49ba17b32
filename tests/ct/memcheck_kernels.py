"""Kernels for testing the memcheck check: constant-time ones and deliberately leaky ones.

Cached (unlike ``ct_kernels``), because the check compiles natively and then loads them from the
cache in the process under valgrind. These live with the tests, never in the package.
"""

import numba as nb
import numpy as np

from pqforge._barrier import declassify, opaque
from pqforge.ct.registry import Target

TABLE = np.arange(256, dtype=np.uint8)[::-1].copy()


@nb.njit(cache=True)
def masked_select(secret, a, b, out):
    """out = a where the secret byte is odd, else b, through a mask the optimiser cannot see
    (the barrier). ``secret`` is secret."""
    for i in range(out.size):
        m = np.uint8(-(np.int64(secret[i]) & 1) & opaque(np.int64(-1)))
        out[i] = (a[i] & m) | (b[i] & ~m)


@nb.njit(cache=True)
def branching_select(secret, a, b, out):
    """The same result through a branch on the secret."""
    for i in range(out.size):
        if secret[i] & 1:
            out[i] = a[i]
        else:
            out[i] = b[i] ^ np.uint8(secret[i] >> 1)


@nb.njit(cache=True)
def table_lookup(secret, out):
    """Branch-free, but the secret is an address: a table look-up."""
    for i in range(out.size):
        out[i] = TABLE[secret[i]]


@nb.njit(cache=True)
def declassified_branch(secret, out):
    """Branches on a value derived from the secret after declaring it public."""
    total = 0
    for i in range(secret.size):
        total += secret[i]
    if declassify(np.int64(total & 1)):
        out[0] = 1


def _select_inputs(params, rng, fixed_class):
    return (rng.integers(0, 256, 64, dtype=np.uint8), rng.integers(0, 256, 64, dtype=np.uint8),
            rng.integers(0, 256, 64, dtype=np.uint8), np.zeros(64, np.uint8))


def _secret_only_inputs(params, rng, fixed_class):
    return (rng.integers(0, 256, 64, dtype=np.uint8), np.zeros(64, np.uint8))


MASKED_SELECT = Target("test-masked-select", "masked select", masked_select, _select_inputs, secret_args=("secret",))
BRANCHING_SELECT = Target("test-branching-select", "branching select", branching_select, _select_inputs,
                          secret_args=("secret",))
TABLE_LOOKUP = Target("test-table-lookup", "secret table index", table_lookup, _secret_only_inputs,
                      secret_args=("secret",))
DECLASSIFIED_BRANCH = Target("test-declassified-branch", "branch on a declassified parity", declassified_branch,
                             _secret_only_inputs, secret_args=("secret",),
                             declassified=("the parity of the secret bytes, declared public for this test",))
