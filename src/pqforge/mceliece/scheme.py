"""Classic McEliece at the level of the specification: key generation, encapsulation,
decapsulation, with the byte encodings of the Round 4 submission.

    private key = delta (32) | c (8) | g_0..g_{t-1} (2 bytes each) | Benes control bits | s (n/8)
    public key  = T, row by row, of the systematic parity-check matrix [I_mt | T]
    ciphertext  = C = H e (mt bits)
    shared secret = SHAKE256(1 | e | C) on success, SHAKE256(0 | s | C) otherwise (32 bytes)
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache

import numpy as np

from ..errors import InvalidInput, InvalidKey, require_bytes
from ..symmetric import shake256
from .benes import bitrev_planes, control_bits, sort_network, support_from_control_bits
from . import decode
from .ahead import compiling
from .decode import decapsulation, goppa_encoding_ok, pivot_field_ok
from .fft import fft_constants, fft_size
from .gf import field_poly, genpoly, vec_from_scalars, vec_mul, vec_square
from .matrix import (encapsulation, eliminate_rows, fixed_weight_indices, move_pivot_columns, pack_public_key,
                     padding_ok, parity_check_matrix)
from .params import Params

_ALL_PIVOTS = 0xFFFFFFFF     # c for the plain sets: the first mt columns are the pivots

# byte strings are viewed as little-endian 64-bit words throughout
if sys.byteorder != "little":
    raise ImportError("pqforge.mceliece needs a little-endian machine")


@lru_cache(maxsize=None)
def _bitrev_base(m: int) -> np.ndarray:
    # public constant: the Benes network's input sequence for 2^m positions
    base = bitrev_planes(m)
    base.setflags(write=False)
    return base


def _rng(rng):
    return os.urandom if rng is None else rng


def _le16(data: bytes, count: int, mask: int) -> np.ndarray:
    return (np.frombuffer(data, dtype="<u2", count=count).astype(np.int64)) & mask


def _bitrev(x: np.ndarray, m: int) -> np.ndarray:
    r = np.zeros_like(x)
    for i in range(m):
        r |= ((x >> i) & 1) << (m - 1 - i)
    return r


# -- key generation -------------------------------------------------------------------------

def _irreducible(p: Params, f: np.ndarray):
    ok, g = genpoly(f, p.m, field_poly(p), np.array(p.poly_taps, dtype=np.int64), p.poly_const_z)
    return g if ok else None


def _public_matrix(p: Params, g: np.ndarray, L: np.ndarray) -> np.ndarray:
    gfull = np.append(g, 1).astype(np.int64, copy=False)
    try:
        return parity_check_matrix(gfull, L, p.t, p.m, p.n, p.field_taps_array)
    finally:
        gfull.fill(0)       # a copy of the secret Goppa polynomial


def _pack(p: Params, mat: np.ndarray) -> bytes:
    out = np.empty(p.public_key_size, dtype=np.uint8)
    pack_public_key(mat, p.mt, p.n, p.pk_row_bytes, out)
    return out.tobytes()


def _systematic(p: Params, g: np.ndarray, perm: np.ndarray):
    """(pk, pi, c) from the Goppa polynomial and the 2^m random 32-bit words, or None."""
    q = p.q
    keyed = (perm.astype(np.int64) << 31) | np.arange(q, dtype=np.int64)
    sort_network(keyed)
    if np.any((keyed[1:] >> 31) == (keyed[:-1] >> 31)):   # repeated word: no uniform permutation
        return None
    pi = keyed & (q - 1)
    L = vec_from_scalars(_bitrev(pi[:p.n], p.m), p.m, (p.n + 63) // 64)
    mat = _public_matrix(p, g, L)
    W = mat.shape[1]
    if not p.semi_systematic:
        # most matrices are rejected: decide on the pivot columns alone, then rebuild and reduce
        if not eliminate_rows(mat, 0, p.mt, (p.mt + 63) // 64):
            return None
        mat = _public_matrix(p, g, L)
        eliminate_rows(mat, 0, p.mt, W)
        pivots = _ALL_PIVOTS
    else:
        if not eliminate_rows(mat, 0, p.mt - 32, W):
            return None
        ok, pivots = move_pivot_columns(mat, pi, p.mt)
        if not ok or not eliminate_rows(mat, p.mt - 32, p.mt, W):
            return None
        pivots &= (1 << 64) - 1
    return _pack(p, mat), pi, pivots


@compiling("keygen")
def keypair(p: Params, rng=None) -> tuple[bytes, bytes]:
    """(public key, private key) bytes. Draws the 32-byte seed delta from rng; retries with the
    next seed from SHAKE256 whenever g or the matrix is rejected, as specified."""
    delta = require_bytes(_rng(rng)(32), "random seed", 32)
    q, n8, t = p.q, p.n // 8, p.t
    while True:
        E = shake256(b"\x40" + delta, n8 + 4 * q + 2 * t + 32)
        s, perm_bytes = E[:n8], E[n8:n8 + 4 * q]
        f = _le16(E[n8 + 4 * q:n8 + 4 * q + 2 * t], t, q - 1)
        this_delta, delta = delta, E[-32:]
        g = _irreducible(p, f)
        if g is None:
            continue
        made = _systematic(p, g, np.frombuffer(perm_bytes, dtype="<u4"))
        if made is None:
            continue
        pk, pi, pivots = made
        cond = control_bits(pi, p.m).tobytes()
        g_bytes = g.astype("<u2").tobytes()
        sk = this_delta + pivots.to_bytes(8, "little") + g_bytes + cond + s
        return pk, sk


# -- encodings ------------------------------------------------------------------------------

def _public_key_bytes(p: Params, pk) -> bytes:
    try:
        return require_bytes(pk, f"{p.name} public key", p.public_key_size)
    except InvalidInput as exc:
        raise InvalidKey(str(exc)) from None


def _padding_error(p: Params) -> InvalidKey:
    return InvalidKey(f"{p.name} public key has nonzero padding bits")


def check_public_key(p: Params, pk) -> bytes:
    pk = _public_key_bytes(p, pk)
    if not padding_ok(pk, p.mt, p.pk_row_bytes, p.k):
        raise _padding_error(p)
    return pk


def _private_key_bytes(p: Params, sk) -> bytes:
    # type and length; the format of the pivot field and of g is checked in compiled code
    try:
        return require_bytes(sk, f"{p.name} private key", p.private_key_size)
    except InvalidInput as exc:
        raise InvalidKey(str(exc)) from None


def _format_error(p: Params, status: int) -> InvalidKey:
    """The error for a private key that ``decapsulation`` refused with ``status``."""
    what = "pivot field" if status < 0 else "Goppa polynomial encoding"
    return InvalidKey(f"{p.name} private key has an invalid {what}")


def check_private_key(p: Params, sk) -> bytes:
    sk = _private_key_bytes(p, sk)
    if not pivot_field_ok(sk, p.semi_systematic):
        raise _format_error(p, -1)
    if not goppa_encoding_ok(sk, p.m, p.t):
        raise _format_error(p, 0)
    return sk


def check_ciphertext(p: Params, ct) -> bytes:
    ct = require_bytes(ct, f"{p.name} ciphertext", p.ciphertext_size)
    if p.mt % 8 and ct[-1] >> (p.mt % 8):
        raise InvalidInput(f"{p.name} ciphertext has nonzero padding bits")
    return ct


def secret_key_parts(p: Params, sk: bytes):
    """(g, control bits, s) of a checked private key as arrays: g's coefficients are below 2^m;
    the control words are copied to align them."""
    g = np.frombuffer(sk, dtype="<u2", count=p.t, offset=40).astype(np.int64)
    off = 40 + p.irr_bytes
    cond = np.frombuffer(sk, dtype=np.int64, count=p.cond_bytes // 8, offset=off).copy()
    s = np.frombuffer(sk, dtype=np.uint8, count=p.n // 8, offset=off + p.cond_bytes)
    return g, cond, s


@compiling("public key")
def public_key_from_private(p: Params, sk: bytes) -> bytes:
    """Recompute T from g and the support the control bits encode (the moved pivots of the
    'f' sets are already in the support order)."""
    sk = check_private_key(p, sk)
    g, cond, _ = secret_key_parts(p, sk)
    L = support_from_control_bits(cond, p.m, p.n, _bitrev_base(p.m))
    try:
        mat = _public_matrix(p, g, L)
    finally:        # the secret copies made here (g, the control bits, the support) zeroed
        for secret in (g, cond, L):
            secret.fill(0)
    if not eliminate_rows(mat, 0, p.mt, mat.shape[1]):
        mat.fill(0)         # not reduced to the public [I | T]: still made of the secret code
        raise InvalidKey(f"{p.name} private key does not define a systematic code")
    return _pack(p, mat)


# -- encapsulation --------------------------------------------------------------------------

def _weight_bytes(p: Params, rng, attempts: int = 1) -> bytes:
    # FixedWeight's random bytes: 2t words, or 4t when n < 2^m (the first t below n are kept)
    draw = 2 * (p.t if p.n == p.q else 2 * p.t) * attempts
    return require_bytes(rng(draw), "random bytes", draw)


ATTEMPTS_AT_ONCE = 2
"""FixedWeight attempts drawn in one call of the operating system's generator: a draw repeats an
index 44% (mceliece348864) to 70% (mceliece6688128) of the time, and a further round trip
through Python costs about a microsecond more than its bytes; a third attempt's bytes cost
as much as the round trip they save (``os.urandom`` costs about 2 ns a byte). A caller's own
rng gives the bytes of one attempt per call, as the submission draws them."""


def fixed_weight(p: Params, rng) -> np.ndarray:
    """t distinct positions below n, sampled as the submission does: 2-byte words masked to m
    bits; when n < 2^m draw 2t words and keep the first t below n; retry on a shortfall or a
    repeat."""
    while True:
        ok, ind = fixed_weight_indices(_weight_bytes(p, rng), p.n, p.t, p.m)
        if ok:
            return ind


@compiling("encapsulation")
def encapsulate(p: Params, pk, rng=None) -> tuple[bytes, bytes]:
    """(ciphertext, shared secret) for public key pk: FixedWeight, the syndrome and the hash
    input 1 | e | C in one compiled call per draw of random bytes (which also checks the public
    key's padding bits)."""
    pk = _public_key_bytes(p, pk)
    attempts = ATTEMPTS_AT_ONCE if rng is None else 1
    rng = _rng(rng)
    out = np.empty(p.ciphertext_size + 32, dtype=np.uint8)      # C || K
    while True:
        ok = encapsulation(_weight_bytes(p, rng, attempts), pk, p.n, p.t, p.m, p.mt, p.pk_row_bytes, out)
        if ok < 0:
            raise _padding_error(p)
        if ok:
            ciphertext, shared = out[:p.ciphertext_size].tobytes(), out[p.ciphertext_size:].tobytes()
            out.fill(0)
            return ciphertext, shared


# -- decapsulation --------------------------------------------------------------------------

@compiling("decapsulation")
def decapsulate(p: Params, sk, ct) -> bytes:
    """Shared secret for ciphertext ct; a ciphertext that does not decode gives SHAKE256(0 | s | C)."""
    sk = _private_key_bytes(p, sk)
    ct = check_ciphertext(p, ct)
    key = np.empty(32, dtype=np.uint8)
    status = decapsulation(ct, sk, *(_DECAPSULATION.get(p.name) or _decapsulation_arguments(p)), key)
    if status <= 0:
        raise _format_error(p, status)
    shared = key.tobytes()
    key.fill(0)
    return shared


_DECAPSULATION: dict = {}


def _decapsulation_arguments(p: Params) -> tuple:
    """``decapsulation``'s public arguments between the private key and the output: the sizes,
    ``decoding_constants`` and the units' addresses, kept by name once the units are in this
    process (building them took about half a microsecond a call)."""
    args = (p.m, p.n, p.t, p.semi_systematic, *decoding_constants(p), decode.units(p.m))
    _DECAPSULATION[p.name] = args
    return args


_DECODING: dict = {}


def decoding_constants(p: Params) -> tuple:
    """decap_preimage's public arguments after m, n, t: the field polynomial, its taps, the FFT
    constants for degree below t, x^t at every field element and the FFT constants for power sums
    up to 2t - 1 (computed once per set, kept by name: hashing the Params dataclass on every call
    costs a microsecond)."""
    if p.name not in _DECODING:
        fpoly = field_poly(p)
        taps = p.field_taps_array
        # x^t at every field element in the FFT's order (entry x is the point bitrev(x)), by
        # square-and-multiply on the bitsliced points
        xt, power, e = None, bitrev_planes(p.m), p.t        # power: x^(2^i) for bit i of e
        while e:
            if e & 1:
                if xt is None:
                    xt = power.copy()
                else:
                    vec_mul(xt, xt, power, p.m, taps)
            vec_square(power, power, p.m, taps)
            e >>= 1
        _DECODING[p.name] = (fpoly, taps, *fft_constants(p.m, fft_size(p.t - 1), fpoly), xt,
                             *fft_constants(p.m, fft_size(2 * p.t - 1), fpoly))
    return _DECODING[p.name]
