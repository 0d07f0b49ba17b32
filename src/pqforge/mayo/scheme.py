"""MAYO at the level of the specification (NIST Round 2): keygen, expansion, sign, verify.

The steps follow the specification's algorithms line by line; matrix products and the linear
solve run in compiled kernels (``mayo.kernels``). Byte strings are decoded once into the internal
form (bitsliced m-vectors, GF(16) element arrays) and encoded once on the way out; the expanded
public key keeps its encoding (see ``ExpandedPublicKey``). With an encoded kernel set (GFNI or
AVX2 byte shuffles, ``gf16.sets``) the products of key generation, expansion, signing and
verification run on the encoding itself (``encoded.py``): the keys are never decoded, only
each signing attempt's small products go to bit planes for the whipping and the solver.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidKey
from ..gf16 import encode_nibbles, sets, unbitslice
from ..gf16.kernels import bitslice_nibble_rows, stream_words
from ..symmetric import aes128_ctr, aes128_ctr_into, aes128_ctr_scratch, aes_width, shake256
from . import kernels
from .kernels import encoded as encoded_set
from .kernels import layout
from .kernels.ahead import compiling
from .params import MayoParams

NO_FULL_RANK = ("the secret key is malformed: signing found no full-rank system in 256 attempts "
                "(for a key made by MAYO key generation the chance is below 2^-256)")

# -- decoding and encoding at the byte boundary --------------------------------------------------

def decode_mvecs(params: MayoParams, data: bytes, count: int) -> np.ndarray:
    """``count`` consecutive m-vectors (m/2 bytes each) -> (count, W) bitsliced words."""
    return bitslice_nibble_rows(data, count, params.m_bytes, params.limbs)


def encode_mvecs(params: MayoParams, words: np.ndarray) -> bytes:
    return encode_nibbles(unbitslice(words, params.m))


def dense_upper(packed: np.ndarray, size: int) -> np.ndarray:
    """A packed upper-triangular matrix as a dense (size, size, W) array, zeros below the diagonal
    (for consumers that want plain row/column indexing, such as the tensor path's GEMMs)."""
    dense = np.zeros((size, size, packed.shape[1]), np.uint64)
    dense[np.triu_indices(size)] = packed
    return dense


def decode_oil(params: MayoParams, data: bytes) -> np.ndarray:
    """The oil matrix O, (n-o) x o elements, row by row (secret: a compiled loop of shifts)."""
    O = np.empty((params.v, params.o), np.uint8)
    kernels.decode_nibbles_into(np.frombuffer(data, np.uint8), O)
    return O


# -- keys in their internal form -----------------------------------------------------------------

@dataclass(eq=False)
class ExpandedSecretKey:
    """seed_sk, the oil matrix O (elements) and P1 || L: the packed upper triangle P1, then
    L = (P1 + P1^T) O + P2 (v x o, row by row), in the form signing wants: bit planes
    (``planes``, (count, W)) for the portable kernels, the encoding in W-word slots (``slots``,
    flat) for the GFNI kernels. ``P1`` and ``L`` are the bit planes, made from the slots on first
    use where only those exist (the batch loops and the GPU paths sign from bit planes)."""
    seed_sk: bytes
    O: np.ndarray       # (v, o) uint8
    planes: np.ndarray | None = None
    slots: np.ndarray | None = None

    def _planes(self) -> np.ndarray:
        if self.planes is None:
            assert self.slots is not None
            v, o = self.O.shape
            count = v * (v + 1) // 2 + v * o
            planes = np.empty((count, self.slots.size // count), np.uint64)
            kernels.slots_to_bitsliced(self.slots.reshape(planes.shape), planes)
            self.planes = planes
        return self.planes

    @property
    def P1(self) -> np.ndarray:
        """P1, packed: (v(v+1)/2, W) bit planes."""
        v = self.O.shape[0]
        return self._planes()[:v * (v + 1) // 2]

    @property
    def L(self) -> np.ndarray:
        """L: (v, o, W) bit planes."""
        v, o = self.O.shape
        planes = self._planes()
        return planes[v * (v + 1) // 2:].reshape(v, o, planes.shape[1])


BITSLICED_AFTER = 16
"""Verifications by one expanded public key from which it decodes P into bit planes: making
them costs one to two verifications, and each verification from them is faster."""


@dataclass(eq=False)
class ExpandedPublicKey:
    """The specification's expanded public key P1 || P2 || P3 as bytes (``encoded``: uint8, m/2
    bytes an m-vector, followed by ``spare_bytes(params)`` zero bytes), and the forms made from it
    on first use.

    P = [[P1, P2], [0, P3]] is one upper-triangular matrix of m-vectors. Verification on the GFNI
    path reads its entries straight from ``encoded``. The portable kernels add entries of P in
    buckets chosen by the public signature and multiply the sums by x, which works on the byte
    encoding as well as on bit planes: they read ``nibbles`` (P packed, (n(n+1)/2, W), each
    m-vector's m/2 bytes in a W-word slot), and ``for_verification`` switches to ``P``, the bit
    planes, once the key is in steady use (the tensor path's GEMMs want bit planes too)."""
    params: MayoParams
    encoded: np.ndarray
    verifications: int = 0

    @functools.cached_property
    def nibbles(self) -> np.ndarray:
        """P packed, each entry's m/2 bytes copied into its W-word slot (no decoding)."""
        params = self.params
        mb = params.m_bytes
        b = params.P1_bytes + params.P2_bytes
        to_p12, to_p3 = public_entry_places(params)
        nibbles = np.zeros((params.n * (params.n + 1) // 2, params.words), np.uint64)
        slots = nibbles.view(np.uint8)
        kernels.place_rows(slots, to_p12, self.encoded[:b].reshape(-1, mb))
        kernels.place_rows(slots, to_p3, self.encoded[b:params.epk_bytes].reshape(-1, mb))
        return nibbles

    @property
    def has_bitsliced(self) -> bool:
        """Whether ``P`` has been made."""
        return "P" in self.__dict__

    @functools.cached_property
    def P(self) -> np.ndarray:
        out = np.empty(self.nibbles.shape, np.uint64)
        kernels.slots_to_bitsliced(self.nibbles, out)
        return out

    def for_verification(self, count: int = 1) -> tuple[np.ndarray, bool]:
        """(matrix, encoded) for ``count`` more verifications: the bit planes once this key has
        verified (or is about to verify) ``BITSLICED_AFTER`` signatures, the encoding before."""
        self.verifications += count
        if self.verifications >= BITSLICED_AFTER or self.has_bitsliced:
            return self.P, False
        return self.nibbles, True


def seed_expansion(params: MayoParams, seed_sk: bytes):
    """S = SHAKE256(seed_sk): seed_pk and the encoded oil matrix."""
    s = shake256(seed_sk, params.pk_seed_bytes + params.O_bytes)
    return s[:params.pk_seed_bytes], s[params.pk_seed_bytes:]


FROM_SEED = sets.ENCODED and sets.AES_WIDTH > 0
"""Whether key generation, secret-key expansion and verification under a compact key run in one
compiled call each, SHAKE256 and AES-128-CTR included (an encoded kernel set on a CPU with AES
instructions)."""

_KEPT: dict[tuple[str, int], tuple] = {}


def _kept(operation: str, params: MayoParams) -> tuple | None:
    """The public arguments after the data of ``operation``'s compiled call (one call each where
    ``FROM_SEED``) for ``params`` and the kernel set in use, once a call through ``compiling``
    has built them (``_keep``); else None. Building them (attributes, the AES width, the units'
    addresses) and the ``compiling`` wrapper took about a microsecond of MAYO-2's 20-µs verification."""
    kept = _KEPT.get((operation, id(params)))
    if kept is not None and kept[0] is params and kept[1] is sets.FORMS:
        return kept[2]
    return None


def _keep(operation: str, params: MayoParams, args: tuple) -> tuple:
    _KEPT[(operation, id(params))] = (params, sets.FORMS, args)
    return args


def compact_keygen(params: MayoParams, rng) -> tuple[bytes, bytes]:
    """(cpk, csk) with csk = seed_sk drawn from ``rng`` (the specification's MAYO.CompactKeyGen)."""
    seed_sk = rng(params.sk_seed_bytes)
    kept = _kept("keygen", params) if FROM_SEED else None
    if kept is not None:            # (``public_key_from_seed``'s one compiled call, its arguments kept)
        return _public_key_on_encoding(params, seed_sk, kept), seed_sk
    return public_key_from_seed(params, seed_sk), seed_sk


@compiling("keygen")
def public_key_from_seed(params: MayoParams, seed_sk: bytes) -> bytes:
    """cpk = seed_pk || Encode(Upper(O^T P1 O + O^T P2)) for the secret seed."""
    if FROM_SEED:                   # all of key generation in one compiled call, the hash included
        return _public_key_on_encoding(params, seed_sk)
    encoded = np.empty(params.P3_bytes, np.uint8)
    seed_pk, o_bytes = seed_expansion(params, seed_sk)
    if sets.ENCODED:                 # O's elements straight from its encoding, inside the kernel
        encoded_set.public_key_from_slots(public_slots(params, seed_pk), np.frombuffer(o_bytes, np.uint8),
                                               params.v, params.o, params.zero_chunks, sets.FORMS, encoded)
    else:
        kernels.public_key_from_stream(public_stream(params, seed_pk), decode_oil(params, o_bytes), params.m, encoded)
    return seed_pk + encoded.tobytes()


def _public_key_on_encoding(params: MayoParams, seed_sk: bytes, kept: tuple | None = None) -> bytes:
    if kept is None:
        kept = _keep("keygen", params, (params.v, params.o, params.m_bytes, params.zero_chunks, sets.FORMS,
                                        aes_width()))
    cpk = np.empty(params.cpk_bytes, np.uint8)
    encoded_set.public_key_from_seed(seed_sk, *kept, cpk)
    return cpk.tobytes()


def public_stream(params: MayoParams, seed_pk: bytes, out: np.ndarray | None = None) -> np.ndarray:
    """The keystream of P1 || P2, AES-128-CTR(seed_pk), as the zero-padded uint64 words that
    ``bitslice_stream`` reads (``gf16.kernels.stream_words`` of them); written into ``out``, a
    zeroed row of that length, when given."""
    nbytes = params.P1_bytes + params.P2_bytes
    if out is None:
        out = np.zeros(stream_words(nbytes), np.uint64)
    aes128_ctr_into(seed_pk, nbytes, out.view(np.uint8))
    return out


def public_slots(params: MayoParams, seed_pk: bytes) -> np.ndarray:
    """P1 || P2 from the keystream AES-128-CTR(seed_pk) as the encoded kernels read them: each
    m-vector's m/2 bytes at the start of a W-word slot, one flat uint64 array."""
    count = params.v * (params.v + 1) // 2 + params.v * params.o
    W, mb = params.words, params.m_bytes
    nbytes = params.P1_bytes + params.P2_bytes
    if 8 * W == mb:                  # the slots are the keystream itself (MAYO-2)
        slots = np.empty(count * W + 2, np.uint64)      # 15 spare bytes for the cipher
        aes128_ctr_into(seed_pk, nbytes, slots.view(np.uint8))
        return slots[:count * W]
    slots = np.empty(count * W, np.uint64)
    keystream = aes128_ctr_scratch(seed_pk, nbytes)            # 15 spare bytes after it, as the copy needs
    layout.keystream_to_slots(np.frombuffer(keystream.obj, np.uint8), count, mb, params.zero_chunks, slots)
    return slots


@compiling("secret-key expansion")
def expand_sk(params: MayoParams, csk: bytes) -> ExpandedSecretKey:
    if FROM_SEED:                   # all of it in one compiled call, the hash included
        O = np.empty((params.v, params.o), np.uint8)
        slots = encoded_set.expand_secret_from_seed(csk, params.pk_seed_bytes, O, params.m_bytes, params.zero_chunks,
                                                    sets.FORMS, aes_width())
        return ExpandedSecretKey(csk, O, slots=slots)
    seed_pk, o_bytes = seed_expansion(params, csk)
    O = decode_oil(params, o_bytes)
    v, o = params.v, params.o
    if sets.ENCODED:                 # L = (P1 + P1^T) O + P2 on the encoding, kept there
        slots = public_slots(params, seed_pk)
        encoded_set.expand_secret_slots(slots, O, params.zero_chunks, sets.FORMS)
        return ExpandedSecretKey(csk, O, slots=slots)
    P1L = np.empty((v * (v + 1) // 2 + v * o, params.words), np.uint64)
    kernels.expand_secret_from_stream(public_stream(params, seed_pk), O, params.m, P1L)
    return ExpandedSecretKey(csk, O, planes=P1L)


def expand_sk_bytes(params: MayoParams, csk: bytes) -> bytes:
    """The specification's expanded secret key: seed_sk || O || P1 || L."""
    esk = expand_sk(params, csk)
    seed_pk, o_bytes = seed_expansion(params, csk)
    p = aes128_ctr(seed_pk, params.P1_bytes)
    return csk + o_bytes + p + encode_mvecs(params, esk.L.reshape(-1, params.words))


def decode_esk(params: MayoParams, esk: bytes) -> ExpandedSecretKey:
    a = params.sk_seed_bytes
    b = a + params.O_bytes
    count = params.v * (params.v + 1) // 2 + params.v * params.o      # P1 || L, consecutive m-vectors
    O = decode_oil(params, esk[a:b])
    if sets.ENCODED:
        slots = np.zeros((count, params.words), np.uint64)
        slots.view(np.uint8)[:, :params.m_bytes] = np.frombuffer(esk, np.uint8, offset=b).reshape(count, -1)
        return ExpandedSecretKey(esk[:a], O, slots=slots.reshape(-1))
    return ExpandedSecretKey(esk[:a], O, planes=decode_mvecs(params, esk[b:], count))


def spare_bytes(params: MayoParams) -> int:
    """Zero bytes after an expanded public key's encoding: the GFNI kernels read whole slots of
    W words from an m-vector's first byte on, also for the last one."""
    return 8 * params.words + 16


def expand_pk(params: MayoParams, cpk: bytes) -> ExpandedPublicKey:
    encoded = _with_p3(params, cpk)
    aes128_ctr_into(cpk[:params.pk_seed_bytes], params.P1_bytes + params.P2_bytes, encoded)    # P1 || P2
    return ExpandedPublicKey(params, encoded)


def _with_p3(params: MayoParams, cpk: bytes) -> np.ndarray:
    """The buffer of an expanded public key with P3 (from the compact key) and the spare zero
    bytes in place, P1 || P2 still to be written."""
    encoded = np.empty(params.epk_bytes + spare_bytes(params), np.uint8)
    view = memoryview(encoded)      # byte copies through the buffer: a numpy call each costs more
    view[params.P1_bytes + params.P2_bytes:params.epk_bytes] = memoryview(cpk)[params.pk_seed_bytes:]
    view[params.epk_bytes:] = bytes(spare_bytes(params))
    return encoded


def expand_pk_bytes(params: MayoParams, cpk: bytes) -> bytes:
    """The specification's expanded public key: P1 || P2 || P3."""
    return aes128_ctr(cpk[:params.pk_seed_bytes], params.P1_bytes + params.P2_bytes) + cpk[params.pk_seed_bytes:]


def decode_epk(params: MayoParams, epk: bytes) -> ExpandedPublicKey:
    encoded = np.zeros(params.epk_bytes + spare_bytes(params), np.uint8)
    encoded[:params.epk_bytes] = np.frombuffer(epk, np.uint8)
    return ExpandedPublicKey(params, encoded)


@functools.lru_cache(maxsize=None)
def public_entry_places(params: MayoParams):
    """Where the entries of P1 || P2 and of P3, in their encoding's order, sit in the packed P."""
    n, v, o = params.n, params.v, params.o
    row = np.array([i * n - i * (i - 1) // 2 for i in range(n)])     # packed index of (i, i)
    p1 = [row[i] + j - i for i in range(v) for j in range(i, v)]
    p2 = [row[i] + v + c - i for i in range(v) for c in range(o)]
    p3 = [row[v + a] + b - a for a in range(o) for b in range(a, o)]
    return np.array(p1 + p2), np.array(p3)


# -- signing and verification --------------------------------------------------------------------

@compiling("sign")
def sign(params: MayoParams, esk: ExpandedSecretKey, msg: bytes, rng) -> bytes:
    """The signature encode(s) || salt of ``msg`` (the specification's MAYO.Sign). With P1 || L
    in their encoding, all of it after drawing R in one compiled call (``encoded.sign``, the
    hashes included); otherwise the hashes here and each attempt (decoding V, r and t, the
    products, the whipped system, the solution, and the signature's encoding on success) in one
    compiled call."""
    k = params.k
    rand = rng(params.salt_bytes)
    if sets.ENCODED and esk.slots is not None:
        return _sign_on_encoding(params, msg, rand, esk.seed_sk, esk.slots, esk.O)
    digest = shake256(msg, params.digest_bytes)
    salt = shake256(digest + rand + esk.seed_sk, params.salt_bytes)
    t_bytes = shake256(digest + salt, params.m_bytes)             # t = Decode_vec(m, SHAKE256(M_digest || salt))
    prefix = digest + salt + esk.seed_sk
    vr_bytes = k * params.v_bytes + params.r_bytes
    f_tail, units = params.f_tail_array, kernels.units()
    sig = np.empty(params.sig_bytes - params.salt_bytes, np.uint8)
    for ctr in _COUNTERS:
        # V = SHAKE256(M_digest || salt || seed_sk || ctr): the vinegar vectors, then r
        vr = shake256(prefix + ctr, vr_bytes)
        if kernels.sign_from_hashes(vr, t_bytes, esk.P1, esk.L, esk.O, k, f_tail, units, sig):
            return sig.tobytes() + salt
    # for a key made by key generation the probability is far below 2^-256
    raise InvalidKey(NO_FULL_RANK)


_COUNTERS = [bytes([ctr]) for ctr in range(256)]


def sign_compact(params: MayoParams, csk: bytes, msg: bytes, rng) -> bytes:
    """``sign`` under the compact secret key ``csk``: where ``FROM_SEED``, the key is expanded
    inside the compiled signing (one call, no expanded key object); elsewhere by ``expand_sk``."""
    if not FROM_SEED:
        return sign(params, expand_sk(params, csk), msg, rng)
    kept = _kept("sign", params)
    if kept is not None:            # (``_sign_from_seed``'s one compiled call, its arguments kept)
        return _sign_on_encoding(params, msg, rng(params.salt_bytes), csk, _NO_SLOTS,
                                 np.empty((params.v, params.o), np.uint8), kept)
    return _sign_from_seed(params, csk, msg, rng)


@compiling("sign")
def _sign_from_seed(params: MayoParams, csk: bytes, msg: bytes, rng) -> bytes:
    return _sign_on_encoding(params, msg, rng(params.salt_bytes), csk, _NO_SLOTS,
                             np.empty((params.v, params.o), np.uint8))


_NO_SLOTS = np.empty(0, np.uint64)
"""The expanded-key argument of the encoded signing under a compact key: made inside."""


def _sign_on_encoding(params: MayoParams, msg: bytes, rand: bytes, seed_sk: bytes, slots: np.ndarray,
                      O: np.ndarray, kept: tuple | None = None) -> bytes:
    sig = np.empty(params.sig_bytes, np.uint8)
    if kept is None:
        kept = _keep("sign", params, (params.k, params.pk_seed_bytes, params.digest_bytes, params.m_bytes,
                                      params.f_tail_array, params.zero_chunks, sets.FORMS, aes_width(),
                                      kernels.units()))
    if encoded_set.sign(msg, rand, seed_sk, slots, O, *kept, sig):
        return sig.tobytes()
    raise InvalidKey(NO_FULL_RANK)


def verify(params: MayoParams, epk: ExpandedPublicKey, msg: bytes, sig: bytes) -> bool:
    """True when P*(s) = t (the specification's MAYO.Verify). ``sig`` must have sig_bytes bytes."""
    if sets.ENCODED:
        return _verify_on_encoding(params, sig, msg, epk.encoded, b"")
    t = _target(params, msg, sig)
    P, encoded = epk.for_verification()
    return (_verify_encoded if encoded else _verify_bitsliced)(params, sig, t, P)


def verify_compact(params: MayoParams, cpk: bytes, msg: bytes, sig: bytes) -> bool:
    """``verify`` under the compact key ``cpk``: where ``FROM_SEED``, P3 is copied and P1 || P2
    made inside the compiled verification (one call, no expanded key object); elsewhere by
    ``expand_pk``."""
    if not FROM_SEED:
        return verify(params, expand_pk(params, cpk), msg, sig)
    kept = _kept("verify", params)
    if kept is not None:            # (``_verify_on_encoding``'s one compiled call, its arguments kept)
        return _verified(params, sig, msg, _NO_KEY, cpk, kept)
    return _verify_on_encoding(params, sig, msg, _NO_KEY, cpk)


def _target(params: MayoParams, msg: bytes, sig: bytes) -> bytes:
    """t, encoded: SHAKE256(SHAKE256(M) || salt), the salt at the end of ``sig``."""
    salt = sig[params.sig_bytes - params.salt_bytes:]
    return shake256(shake256(msg, params.digest_bytes) + salt, params.m_bytes)


_NO_KEY = np.empty(0, np.uint8)
"""The expanded-key argument of the encoded verification under a compact key: made inside."""


# P*(s) = t, from the signature's and t's bytes in one compiled call each, compiled for the
# parameter set's vector size and the key's form only (with an encoded set from the message, the
# signature and the key's bytes, the hashes included)

@compiling("verify")
def _verify_on_encoding(params: MayoParams, sig: bytes, msg: bytes, epk: np.ndarray, cpk: bytes) -> bool:
    return _verified(params, sig, msg, epk, cpk)


def _verified(params: MayoParams, sig: bytes, msg: bytes, epk: np.ndarray, cpk: bytes,
              kept: tuple | None = None) -> bool:
    if kept is None:
        kept = _keep("verify", params, (params.k, params.n, params.v, params.m_bytes, params.digest_bytes,
                                        params.zero_chunks, sets.FORMS, params.f_tail_array, aes_width(),
                                        kernels.verify_units()))
    return bool(encoded_set.verify(sig, msg, epk, cpk, *kept))


@compiling("verify")
def _verify_encoded(params: MayoParams, sig, t, P) -> bool:
    return bool(kernels.verify_sized(sig, t, P, params.k, params.n, params.zero_limbs, (0,), params.f_tail_array,
                                     kernels.verify_units()))


@compiling("verify (bit planes)")
def _verify_bitsliced(params: MayoParams, sig, t, P) -> bool:
    return bool(kernels.verify_sized(sig, t, P, params.k, params.n, params.zero_limbs, (), params.f_tail_array,
                                     kernels.verify_units()))
