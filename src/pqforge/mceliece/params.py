"""Classic McEliece parameter sets (Round 4 submission).

Every size follows from m, n, t: the public key is the (mt) x (n - mt) matrix T of the
systematic form [I | T], each row padded to whole bytes; the ciphertext is the syndrome
of mt bits; the private key is delta (32) | c (8, pivot bits) | g (2t) | control bits
of the Benes network ((2m - 1) 2^(m-4)) | s (n/8).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np


@dataclass(frozen=True)
class Params:
    name: str
    m: int
    n: int
    t: int
    semi_systematic: bool          # the 'f' sets: 32 pivots may move within 64 columns
    field_taps: tuple              # z^m = sum z^tap in GF(2^m)
    poly_taps: tuple               # y^t = sum y^tap in GF(2^m)[y]/F(y); tap 0 carries the factor z for t=64
    poly_const_z: bool = False     # F(y) = y^t + ... + z  (348864 only); else the constant term is 1

    # derived sizes, computed once per set (encapsulation reads five of them per attempt)
    @cached_property
    def q(self) -> int:
        return 1 << self.m

    @cached_property
    def mt(self) -> int:
        return self.m * self.t

    @cached_property
    def k(self) -> int:
        return self.n - self.mt

    @cached_property
    def pk_row_bytes(self) -> int:
        return (self.k + 7) // 8

    @cached_property
    def public_key_size(self) -> int:
        return self.mt * self.pk_row_bytes

    @cached_property
    def syndrome_bytes(self) -> int:
        return (self.mt + 7) // 8

    @cached_property
    def ciphertext_size(self) -> int:
        return self.syndrome_bytes

    @cached_property
    def irr_bytes(self) -> int:
        return 2 * self.t

    @cached_property
    def cond_bytes(self) -> int:
        return (1 << (self.m - 4)) * (2 * self.m - 1)

    @cached_property
    def private_key_size(self) -> int:
        return 40 + self.irr_bytes + self.cond_bytes + self.n // 8

    shared_secret_size: int = 32

    @cached_property
    def field_taps_array(self) -> np.ndarray:
        return _taps_array(self.field_taps)


@lru_cache(maxsize=None)
def _taps_array(taps: tuple) -> np.ndarray:
    # read-only and shared, the same array type as the module constants the FFT kernels use,
    # so that a kernel taking taps compiles once for both kinds of caller
    out = np.array(taps, dtype=np.int64)
    out.setflags(write=False)
    return out


_F12 = (3, 0)           # z^12 + z^3 + 1
_F13 = (4, 3, 1, 0)     # z^13 + z^4 + z^3 + z + 1


def _sets() -> dict[str, Params]:
    base = [
        ("348864", 12, 3488, 64, _F12, (3, 1, 0), True),     # y^64 + y^3 + y + z
        ("460896", 13, 4608, 96, _F13, (10, 9, 6, 0), False),
        ("6688128", 13, 6688, 128, _F13, (7, 2, 1, 0), False),
        ("6960119", 13, 6960, 119, _F13, (8, 0), False),
        ("8192128", 13, 8192, 128, _F13, (7, 2, 1, 0), False),
    ]
    out: dict[str, Params] = {}
    for suffix, m, n, t, ft, pt, cz in base:
        for f in (False, True):
            name = "Classic-McEliece-" + suffix + ("f" if f else "")
            out[name] = Params(name, m, n, t, f, ft, pt, cz)
    return out


PARAMS = _sets()
