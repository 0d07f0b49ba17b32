"""Key generation's P3 and the expansion of a secret key (L = (P1 + P1^T) O + P2) from the
keystream of P1 || P2, on bit planes (the portable set). Secret: O, P1, P2 (in the secret key's
expansion) and L."""

import numba as nb
import numpy as np

from ...gf16.kernels import bitslice_stream
from ...jit.cache import JIT_CACHE
from .layout import encode_upper_into
from .products import mul_packed_rows, mul_transposed, mul_transposed_packed

_JIT = dict(cache=JIT_CACHE, nogil=True)  # nogil: batches run kernels on several threads


@nb.njit(**_JIT)
def public_key_from_stream(stream, O, m, out):
    """out = Encode(Upper(O^T (P1 O + P2))), the public part of key generation after hashing:
    P1 || P2 decoded from their keystream ``stream`` (uint64 words, zero-padded, as
    ``bitslice_stream`` reads them), then the two products with the oil matrix O (v, o).

    Secret: O and everything computed from it (masks and XORs at public positions only); the
    keystream is public."""
    v, o = O.shape
    W = 4 * ((m + 63) // 64)
    e1 = v * (v + 1) // 2
    P12 = np.empty((e1 + v * o, W), np.uint64)
    bitslice_stream(stream, 2 * ((m + 1) // 2), P12)   # entries of P1 (packed), then of P2
    P1, Q = P12[:e1], P12[e1:].reshape(v, o, W)
    mul_packed_rows(P1, O, Q)                         # Q = P1 O + P2
    P3 = np.zeros((o, o, W), np.uint64)
    mul_transposed(O, Q, False, P3)                   # O^T Q
    encode_upper_into(P3, m, out)                     # -O^T P1 O - O^T P2: no signs in GF(16)


@nb.njit(**_JIT)
def expand_secret_from_stream(stream, O, m, P1L):
    """P1 || L of the expanded secret key in ``P1L`` ((v(v+1)/2 + v o, W): the packed upper
    triangle P1, then L = (P1 + P1^T) O + P2 row by row), from the keystream of P1 || P2 (as
    ``public_key_from_stream`` reads it) and the oil matrix O. P1 || P2 decode into the same
    places, so L starts as P2.

    Secret: O, L and the products (masks and XORs at public positions only); the keystream and
    P1 are public in themselves (P1 is kept with the secret key)."""
    v, o = O.shape
    W = P1L.shape[1]
    e1 = v * (v + 1) // 2
    bitslice_stream(stream, 2 * ((m + 1) // 2), P1L)
    P1, L = P1L[:e1], P1L[e1:].reshape(v, o, W)       # L = P2 for now
    OtP1 = np.zeros((o, v, W), np.uint64)
    mul_transposed_packed(O, P1, OtP1)                # O^T P1 = (P1^T O)^T
    for i in range(v):
        for c in range(o):
            for w in range(W):
                L[i, c, w] ^= OtP1[c, i, w]
    mul_packed_rows(P1, O, L)                         # + P1 O
