"""MAYO parameter sets as data.

A parameter set fixes (n, m, o, k) over GF(16), the reduction polynomial f(z) = z^m + f_tail(z)
of the extension field used to combine the k(k+1)/2 quadratic evaluations, and the byte lengths
of seeds, salt and digest. Everything else (encoded sizes, word counts) is derived here, so a new
round's sets are new rows, not new code.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from math import ceil

import numpy as np


@dataclass(frozen=True)
class MayoParams:
    name: str
    n: int
    m: int
    o: int
    k: int
    f_tail: tuple[int, int, int, int]  # coefficients of z^0..z^3 in f(z) - z^m, as GF(16) integers
    salt_bytes: int
    digest_bytes: int
    pk_seed_bytes: int
    sk_seed_bytes: int
    round: int = 2

    def __post_init__(self):
        # m-vectors are decoded and encoded as whole bytes (two elements each); an odd m would
        # leave a padding nibble inside the bitsliced vector
        if self.m % 2:
            raise ValueError(f"{self.name}: m must be even, got {self.m}")

    # -- derived sizes (all in the specification's nibble encoding; computed once, since every
    # operation reads several of them) --
    @cached_property
    def v(self) -> int:
        """Number of vinegar variables, n - o."""
        return self.n - self.o

    @cached_property
    def m_bytes(self) -> int:
        return ceil(self.m / 2)

    @cached_property
    def O_bytes(self) -> int:
        return ceil(self.v * self.o / 2)

    @cached_property
    def v_bytes(self) -> int:
        return ceil(self.v / 2)

    @cached_property
    def r_bytes(self) -> int:
        return ceil(self.k * self.o / 2)

    @cached_property
    def P1_bytes(self) -> int:
        return self.m_bytes * self.v * (self.v + 1) // 2

    @cached_property
    def P2_bytes(self) -> int:
        return self.m_bytes * self.v * self.o

    @cached_property
    def P3_bytes(self) -> int:
        return self.m_bytes * self.o * (self.o + 1) // 2

    @cached_property
    def L_bytes(self) -> int:
        return self.P2_bytes

    @cached_property
    def sig_bytes(self) -> int:
        return ceil(self.k * self.n / 2) + self.salt_bytes

    @cached_property
    def cpk_bytes(self) -> int:
        return self.pk_seed_bytes + self.P3_bytes

    @cached_property
    def csk_bytes(self) -> int:
        return self.sk_seed_bytes

    @cached_property
    def epk_bytes(self) -> int:
        return self.P1_bytes + self.P2_bytes + self.P3_bytes

    @cached_property
    def esk_bytes(self) -> int:
        return self.sk_seed_bytes + self.O_bytes + self.P1_bytes + self.L_bytes

    # -- bitsliced layout --
    @cached_property
    def limbs(self) -> int:
        """64-bit words per bit plane of an m-vector."""
        return ceil(self.m / 64)

    @cached_property
    def zero_limbs(self) -> tuple[int, ...]:
        """``limbs`` zeros: the argument by which kernels compiled per vector size know it."""
        return (0,) * self.limbs

    @cached_property
    def zero_chunks(self) -> tuple[int, ...]:
        """ceil(m / 32) zeros, one per 16-byte chunk of an m-vector's encoding: the argument by
        which the encoded kernels (``mayo.kernels.encoded``) know the vector size."""
        return (0,) * ceil(self.m / 32)

    @cached_property
    def f_tail_array(self) -> np.ndarray:
        """``f_tail`` as the int64 array the kernels take (shared: not to be written)."""
        return np.array(self.f_tail, np.int64)

    @cached_property
    def words(self) -> int:
        """64-bit words of one bitsliced m-vector (four bit planes)."""
        return 4 * self.limbs

    @cached_property
    def pairs(self) -> int:
        """k(k+1)/2: the number of z^ell terms in the whipped map."""
        return self.k * (self.k + 1) // 2


# NIST Round 2 (February 2025). f_tail from f(z): MAYO-1 z^78 + z^2 + z + x^3,
# MAYO-2 z^64 + x^3 z^3 + x z^2 + x^3, MAYO-3 z^108 + (x^2+x+1) z^3 + z^2 + x^3,
# MAYO-5 z^142 + z^3 + x^3 z^2 + x^2, with x the generator of GF(16) = GF(2)[x]/(x^4+x+1).
MAYO_1 = MayoParams("MAYO-1", n=86, m=78, o=8, k=10, f_tail=(8, 1, 1, 0),
                    salt_bytes=24, digest_bytes=32, pk_seed_bytes=16, sk_seed_bytes=24)
MAYO_2 = MayoParams("MAYO-2", n=81, m=64, o=17, k=4, f_tail=(8, 0, 2, 8),
                    salt_bytes=24, digest_bytes=32, pk_seed_bytes=16, sk_seed_bytes=24)
MAYO_3 = MayoParams("MAYO-3", n=118, m=108, o=10, k=11, f_tail=(8, 0, 1, 7),
                    salt_bytes=32, digest_bytes=48, pk_seed_bytes=16, sk_seed_bytes=32)
MAYO_5 = MayoParams("MAYO-5", n=154, m=142, o=12, k=12, f_tail=(4, 0, 8, 1),
                    salt_bytes=40, digest_bytes=64, pk_seed_bytes=16, sk_seed_bytes=40)

ROUND2 = (MAYO_1, MAYO_2, MAYO_3, MAYO_5)
