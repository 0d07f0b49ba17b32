"""What each MAYO operation compiles on first use: the kernels that Python code calls, with the
argument types of those calls (``Ahead``), per kernel set and vector size; the order in which a
first use shares them with a helper process; and the notice each operation gives, with its
estimate. The operations in ``mayo.scheme`` carry ``@compiling(path)`` and nothing else of this.
"""

from __future__ import annotations

from typing import Callable, TypeVar

from numba import typeof, types

from ...gf16 import sets
from ...jit.cache import Operation
from ...jit.cache import compiling as notice
from ...jit.units import Ahead, obtain, prefetch
from ..params import ROUND2, MayoParams
from . import batch, encoded, sign, solve, verify, whipping

T = TypeVar("T")

COMPILE_SECONDS = {
    "portable": {"keygen": 7, "secret-key expansion": 2, "sign": 8, "verify": 8, "verify (bit planes)": 8},
    "gfni": {"keygen": 4, "secret-key expansion": 1, "sign": 9, "verify": 5, "verify (bit planes)": 5},
    "avx2": {"keygen": 4, "secret-key expansion": 1, "sign": 9, "verify": 5, "verify (bit planes)": 5},
    "neon": {"keygen": 4, "secret-key expansion": 1, "sign": 9, "verify": 5, "verify (bit planes)": 5},
}
"""Rough first-compile time of each path with each kernel set on a 2-core machine (neon: taken to
be avx2's, whose code it is but for the shuffle; under qemu-user emulation compiles take 10-20x
longer than any notice says), for the notice (a helper process compiles signing's and verification's kernels from the first notice on)."""


# The kernels that signing and verification call from here, with the argument types of those
# calls, for each kernel set and vector size (``_size``): a first use has them compiled in a
# helper process beside this one (``pqforge.jit.units``).
_u8 = {d: types.Array(types.uint8, d, "C") for d in (1, 2, 3)}
_ro = {d: types.Array(types.uint8, d, "C", readonly=True) for d in (1, 2)}     # views of bytes
_verdicts = types.Array(types.boolean, 1, "C")
_u64 = {d: types.Array(types.uint64, d, "C") for d in (1, 2, 3)}
_int, _tail = types.int64, types.Array(types.int64, 1, "C")
_bytes = types.Bytes(types.uint8, 1, "C", readonly=True)
_addresses = types.UniTuple(types.int64, 2)
_LIMBS = sorted({p.limbs for p in ROUND2})                  # the portable kernels' sizes
_CHUNKS = sorted({len(p.zero_chunks) for p in ROUND2})      # the encoded kernels' sizes
_FORMS = {name: typeof(sets.forms_of(name)) for name in sets.NAMES if name != "portable"}   # of ``sets.FORMS``
_aes = {name: typeof((0,) * sets.aes_width(name, sets.cpu_features())) for name in _FORMS}   # of ``aes_width()``
SIGN = {
    **{name: {chunks: Ahead(encoded.sign, (_bytes, _bytes, _bytes, _u64[1], _u8[2], _int, _int, _int, _int, _tail,
                                           types.UniTuple(_int, chunks), forms, _aes[name], _addresses, _u8[1]))
              for chunks in _CHUNKS} for name, forms in _FORMS.items()},
    "portable": dict.fromkeys(_LIMBS, Ahead(sign.sign_from_hashes, (_bytes, _bytes, _u64[2], _u64[3], _u8[2], _int,
                                                                     _tail, _addresses, _u8[1]))),
}
"""Signing's compiled call: with an encoded set all of it after drawing R (``encoded.sign``),
with the portable set one attempt from its hash outputs to the encoded signature
(``sign_from_hashes``)."""
VERIFY = {
    **{name: {chunks: Ahead(encoded.verify, (_bytes, _bytes, _u8[1], _bytes, _int, _int, _int, _int, _int,
                                             types.UniTuple(_int, chunks), forms, _tail, _aes[name], _addresses))
              for chunks in _CHUNKS} for name, forms in _FORMS.items()},
    "portable": {limbs: Ahead(verify.verify_sized, (_bytes, _bytes, _u64[2], _int, _int, types.UniTuple(_int, limbs),
                                                    types.UniTuple(_int, 1), _tail, _addresses)) for limbs in _LIMBS},
}
"""Verification's kernel for a key's encoding (the bit-plane form comes after ``BITSLICED_AFTER``
verifications with one key, with its own notice)."""
SIGN_CHUNK = {
    **{name: {chunks: Ahead(batch.sign_chunk_encoded, (_u8[2], _u64[1], _u8[3], _u8[2], _u8[2], _tail, _int,
                                                       types.UniTuple(_int, chunks), forms, _u8[2], _verdicts,
                                                       _addresses))
              for chunks in _CHUNKS} for name, forms in _FORMS.items()},
    "portable": dict.fromkeys(_LIMBS, Ahead(batch.sign_chunk, (_u8[2], _u64[2], _u64[3], _u8[3], _u8[2], _u8[2], _tail,
                                                                _int, _u8[2], _verdicts, _addresses))),
}
VERIFY_CHUNK = {
    **{name: {chunks: (Ahead(batch.verify_chunk_encoded, (_u8[1], _int, types.UniTuple(_int, chunks), forms, _ro[1],
                                                          _tail, _ro[2], _tail, _int, _int, _int, _int, _verdicts,
                                                          _addresses)),)
              for chunks in _CHUNKS} for name, forms in _FORMS.items()},
    # the portable loop per size and per form of the key: its encoding (a key's first
    # ``BITSLICED_AFTER`` verifications), then its bit planes
    "portable": {limbs: tuple(Ahead(batch.verify_chunk, (_u64[2], types.UniTuple(_int, limbs), nibbles, _ro[1], _tail,
                                                         _ro[2], _tail, _int, _int, _int, _int, _verdicts, _addresses))
                              for nibbles in (types.UniTuple(_int, 1), types.Tuple(())))
                 for limbs in _LIMBS},
}
SIGNING_HASHES = Ahead(batch.signing_hashes, (_ro[1], _tail, _ro[2], _ro[2], _tail, _int, _u8[2], _u8[2], _u8[3], _u8[2]))
"""The one-key batch loops (``batch_cpu.sign_loop``, ``verify_loop``) and the batch's hashing."""


def _size(p: MayoParams) -> int:
    """The vector size that the kernels of the set in use are compiled for: p's 16-byte chunks
    (``MayoParams.zero_chunks``) for an encoded set, its limbs for the portable one."""
    return len(p.zero_chunks) if sets.ENCODED else p.limbs


def signing(p: MayoParams) -> tuple:
    """Signing's kernels for p, the largest first (the solver, the whip: ``sign.units()``)."""
    return solve.SOLVE, whipping.WHIP, SIGN[sets.NAME][_size(p)]


def verifying(p: MayoParams) -> tuple:
    return whipping.WHIP, VERIFY[sets.NAME][_size(p)]


def serving(p: MayoParams) -> tuple:
    """What ``pqforge serve`` batches its sign and verify requests into, for p: the one-key
    batch loops, the batch's hashing and the units they call. The largest first (with the gfni
    set: about 6, 5, 4, 3 and 1 s of compile), for the helper that starts on them while this
    process generates a key and expands it (``compile_serving``: the expansion shares most of its
    callees with key generation): the last to finish is then a small one."""
    size = _size(p)
    return *VERIFY_CHUNK[sets.NAME][size], solve.SOLVE, whipping.WHIP, SIGN_CHUNK[sets.NAME][size], SIGNING_HASHES


def compile_serving(p: MayoParams, meanwhile: Callable[[], T]) -> T:
    """Compile ``serving(p)`` side by side: a helper process starts on the list, this process
    runs ``meanwhile`` (key generation, with its own notice), then takes the entries the helper
    has not claimed and waits for those it has; returns what ``meanwhile`` returned."""
    prefetch(serving(p))
    result = meanwhile()
    obtain(serving(p))
    return result


def _prepare(path: str) -> Callable[[MayoParams], None]:
    """With a first notice: signing and verification share their kernels with a helper process
    (signing, while it waits for the helper, compiles verification's); after key generation or
    expansion the helper compiles theirs at low priority (signing and verification usually
    follow, and the helper goes on after a command has returned)."""
    def prepare(p: MayoParams) -> None:
        if path == "sign":
            prefetch(signing(p), later=verifying(p))
            obtain(signing(p), meanwhile=verifying(p))
        elif path == "verify":
            prefetch(verifying(p), later=signing(p))
            obtain(verifying(p))
        elif path in ("keygen", "secret-key expansion"):
            # the solver, verification's kernel, then the rest of signing: this process compiles
            # the whip when signing starts, so both cores stay busy to the end of a first
            # keygen, sign and verify (with verification's kernel last, one core compiled it alone)
            sign_list = signing(p)
            prefetch(later=(sign_list[0], verifying(p)[-1]) + sign_list[1:])
    return prepare


def compiling(path: str) -> Callable[[Operation], Operation]:
    """The first-compile notice for ``path``: its kernels serve every parameter set, except
    verification's, which are compiled per vector size (``verify.evaluate_public_sized``), and
    all encoded kernels, also compiled per size."""
    def marker(p: MayoParams) -> str:
        sized = path.startswith("verify") or (sets.ENCODED and path in ("keygen", "secret-key expansion", "sign"))
        return f"mayo {path} {sets.NAME}" + (f" {_size(p)} {'chunks' if sets.ENCODED else 'limbs'}" if sized else "")
    return notice(path, COMPILE_SECONDS[sets.NAME][path], marker, prefetch=_prepare(path))
