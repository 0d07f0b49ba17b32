"""Kernels for testing the constant-time tooling: some constant-time, some deliberately leaky.

These live with the tests, never in the package.
"""

import numba as nb
import numpy as np

from pqforge.ct.registry import Target

TABLE = np.arange(16, dtype=np.uint8)[::-1].copy()


@nb.njit(cache=False)
def ct_select(secret, a, b, out):
    """out = a where the secret bit is 1, else b, by masking. ``secret`` is secret."""
    for i in range(out.size):
        m = np.uint8(0) - (secret[i] & np.uint8(1))
        out[i] = (a[i] & m) | (b[i] & ~m)


@nb.njit(cache=False)
def leaky_select(secret, a, b, out):
    """The same result through a branch on the secret bit."""
    for i in range(out.size):
        if secret[i] & 1:
            out[i] = a[i]
        else:
            out[i] = b[i]


@nb.njit(cache=False)
def leaky_ternary(secret, a, b, out):
    """A branch hidden in a one-line conditional expression: line-identical, opcode-different."""
    for i in range(out.size):
        out[i] = a[i] if secret[i] & 1 else b[i]


@nb.njit(cache=False)
def leaky_lookup(secret, out):
    """Branch-free but indexes a table with the secret: same lines, different addresses."""
    for i in range(out.size):
        out[i] = TABLE[secret[i] & 15]


@nb.njit(cache=False)
def _branchy_callee(v):
    if v & 1:
        return v ^ 3
    return v


@nb.njit(cache=False)
def leaky_nested(secret, out):
    """Branch-free itself; the branch is in a compiled function it calls."""
    for i in range(out.size):
        out[i] = _branchy_callee(secret[i])


@nb.njit(cache=False)
def _masked_callee(v):
    return v ^ ((np.uint8(0) - (v & np.uint8(1))) & np.uint8(3))


@nb.njit(cache=False)
def ct_nested(secret, out):
    """Constant-time counterpart of leaky_nested."""
    for i in range(out.size):
        out[i] = _masked_callee(secret[i])


# -- timing targets: the leak is tens of microseconds, far above this machine's noise ------------

SPIN = 20000


@nb.njit(cache=False)
def spin_if_odd(secret, out):
    """Works SPIN extra steps when the secret's low bit is set."""
    acc = np.uint64(secret[1]) | np.uint64(1)
    n = SPIN if secret[0] & 1 else 0
    for i in range(n):
        acc ^= acc >> np.uint64(29)
        acc *= np.uint64(0xBF58476D1CE4E5B9)
    out[0] = acc


@nb.njit(cache=False)
def spin_always(secret, out):
    """Works SPIN steps whatever the secret."""
    acc = np.uint64(secret[1]) | np.uint64(1)
    for i in range(SPIN):
        acc ^= acc >> np.uint64(29)
        acc *= np.uint64(0xBF58476D1CE4E5B9)
    out[0] = acc


def _bytes_inputs(params, rng, fixed_class):
    return (rng.integers(0, 256, 32, dtype=np.uint8), np.zeros(1, np.uint64))


def _odd_vs_random(params, rng, fixed_class):
    # fixed class: a secret whose low bit is 1 (re-seeded generator, so always the same value)
    s = rng.integers(0, 256, 32, dtype=np.uint8)
    if fixed_class:
        s[0] |= 1
    return (s, np.zeros(1, np.uint64))


def _select_inputs(params, rng, fixed_class):
    return (rng.integers(0, 256, 16, dtype=np.uint8), rng.integers(0, 256, 16, dtype=np.uint8),
            rng.integers(0, 256, 16, dtype=np.uint8), np.zeros(16, np.uint8))


def _secret_only_inputs(params, rng, fixed_class):
    return (rng.integers(0, 256, 16, dtype=np.uint8), np.zeros(16, np.uint8))


LEAKY_TIMING = Target("test-spin-if-odd", "spins 20k steps on odd secrets", spin_if_odd, _odd_vs_random,
                      secret_args=("secret",), classes=("odd", "random"))
CT_TIMING = Target("test-spin-always", "spins 20k steps always", spin_always, _odd_vs_random,
                   secret_args=("secret",), classes=("odd", "random"))

CT_SELECT = Target("test-ct-select", "masked select", ct_select, _select_inputs, secret_args=(0,))
LEAKY_SELECT = Target("test-leaky-select", "branching select", leaky_select, _select_inputs,
                      secret_args=("secret",))
LEAKY_TERNARY = Target("test-leaky-ternary", "conditional-expression select", leaky_ternary,
                       _select_inputs, secret_args=("secret",))
LEAKY_LOOKUP = Target("test-leaky-lookup", "secret table index", leaky_lookup, _secret_only_inputs,
                      secret_args=("secret",))
LEAKY_NESTED = Target("test-leaky-nested", "branch in a callee", leaky_nested, _secret_only_inputs,
                      secret_args=("secret",))
CT_NESTED = Target("test-ct-nested", "masked callee", ct_nested, _secret_only_inputs,
                   secret_args=("secret",))


@nb.njit(cache=False)
def leaky_scratch(secret, out):
    """Writes a scratch array it allocates itself at a secret position."""
    tmp = np.zeros(16, np.uint8)
    tmp[secret[0] & 15] = 1
    out[0] = tmp[3]


LEAKY_SCRATCH = Target("test-leaky-scratch", "secret index into a local array", leaky_scratch,
                       _secret_only_inputs, secret_args=("secret",))
