"""What each Classic McEliece operation compiles on first use: the kernels that Python code calls,
with the argument types of those calls (``Ahead``) and the units of decoding; the order in which
a first use shares them with helper processes; and the notice each operation gives, with its
estimate. The operations in ``mceliece.scheme`` carry ``@compiling(path)`` and nothing else of
this.
"""

from __future__ import annotations

from typing import Callable

from numba import types

from ..jit.cache import Operation, compiled
from ..jit.cache import compiling as notice
from ..jit.units import Ahead, obtain, prefetch
from . import decode
from .benes import bitrev_planes, control_bits, sort_network
from .decode import decapsulation
from .gf import genpoly, vec_from_scalars, vec_mul, vec_square
from .matrix import encapsulation, eliminate_rows, move_pivot_columns, pack_public_key, parity_check_matrix
from .params import Params

COMPILE_SECONDS = {"keygen": 6, "public key": 6, "encapsulation": 2, "decapsulation": 7}
"""Rough first-compile time of each path on a 2-core x86-64 machine, for the notice."""
SECOND_FIELD_SECONDS = 3
"""The same for decapsulation in a field after another one's: only its units are left (1/g^2 and
the error locator, ``decode.PER_FIELD``; 2.4 s measured at 460896f after 348864)."""


# The kernels that key generation and encapsulation call, with the argument types of those calls:
# a first use compiles them in other processes, side by side (``pqforge.jit.units``).
_i64 = {d: types.Array(types.int64, d, "C") for d in (1, 2, 3)}
_i64_ro, _u8 = types.Array(types.int64, 1, "C", readonly=True), types.Array(types.uint8, 1, "C")
_int = types.int64
KEYGEN = (
    Ahead(parity_check_matrix, (_i64[1], _i64[2], _int, _int, _int, _i64_ro)),
    Ahead(control_bits, (_i64[1], _int)),
    Ahead(genpoly, (_i64[1], _int, _int, _i64[1], types.boolean)),
    Ahead(move_pivot_columns, (_i64[2], _i64[1], _int)),
    Ahead(sort_network, (_i64[1],)),
    Ahead(eliminate_rows, (_i64[2], _int, _int, _int)),
    Ahead(vec_from_scalars, (_i64[1], _int, _int)),
    Ahead(pack_public_key, (_i64[2], _int, _int, _int, _u8)),
)
"""Key generation's kernels, the longest to compile first (so that the processes sharing them
finish together)."""
_bytes = types.Bytes(types.uint8, 1, "C", readonly=True)
ENCAPSULATION = (Ahead(encapsulation, (_bytes, _bytes, _int, _int, _int, _int, _int, _u8)),)
DECODING = (decode.POWER_SUMS, decode.MONIC, *decode.LOCATOR.values(),
            Ahead(decapsulation, (_bytes, _bytes, _int, _int, _int, types.boolean, _int, _i64_ro, *[_i64[3]] * 3, _i64[2],
                                  *[_i64[3]] * 3, types.UniTuple(_int, len(decode.units_of(12))), _u8)),
            decode.BENES, *decode.INVERSE_SQUARE.values(),
            Ahead(vec_square, (_i64[2], _i64[2], _int, _i64_ro)), Ahead(bitrev_planes, (_int,)),
            Ahead(vec_mul, (_i64[2], _i64[2], _i64[2], _int, _i64_ro)))
"""Decapsulation's kernels, the longest to compile first (``vec_mul`` serves the sets whose t is
not a power of two; 1/g^2 and the error locator have a unit per field)."""


def _called(p: Params, items: tuple) -> tuple:
    """The entries of ``items`` that parameter set p's operations call (moving pivot columns is
    for the 'f' sets only, each field's units for its own sets)."""
    other_fields = {unit for m, units in decode.PER_FIELD.items() if m != p.m for unit in units}
    return tuple(item for item in items if (p.semi_systematic or item.kernel is not move_pivot_columns)
                 and item not in other_fields)


def _prepare(path: str) -> Callable[[Params], None]:
    """With a first notice: this process and a helper share the path's kernels; the helper goes
    on, at low priority, with those of the operations that usually follow (after key generation
    decapsulation's, then encapsulation's, which is short: the next operation compiles it here
    while the helper works on decapsulation's)."""
    def prepare(p: Params) -> None:
        keygen, decoding = _called(p, KEYGEN), _called(p, DECODING)
        if path == "keygen":
            prefetch(keygen, later=decoding + ENCAPSULATION)
            obtain(keygen)
        elif path == "encapsulation":
            prefetch(ENCAPSULATION, later=decoding)
            obtain(ENCAPSULATION)
        elif path == "decapsulation":
            prefetch(decoding)
            obtain(decoding)
    return prepare


def marker(path: str, p: Params, m: int | None = None) -> str:
    """What names ``path``'s compiled kernels in the cache: one marker per path, and for
    decapsulation one per field m (p's unless given)."""
    return f"mceliece {path}" + (f" GF(2^{m or p.m})" if path == "decapsulation" else "")


def estimate(path: str, p: Params) -> float:
    """The notice's seconds for ``path`` at p: ``COMPILE_SECONDS``, or ``SECOND_FIELD_SECONDS``
    for a decapsulation after another field's."""
    if path == "decapsulation" and any(compiled(marker(path, p, m)) for m in decode.PER_FIELD if m != p.m):
        return SECOND_FIELD_SECONDS
    return COMPILE_SECONDS[path]


def compiling(path: str) -> Callable[[Operation], Operation]:
    """The first-compile notice for ``path``, whose kernels serve every parameter set, except
    decapsulation's per-field units (``decode.PER_FIELD``)."""
    return notice(path, lambda p: estimate(path, p), lambda p: marker(path, p), prefetch=_prepare(path))
