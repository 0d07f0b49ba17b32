"""The package's own constant-time targets (``registry`` registers them on first use).

Kernel targets call one compiled kernel on buffers prepared at the parameter set's real sizes;
their secret arguments are those the kernel's docstring names (``pqforge.gf16.kernels``,
``pqforge.mayo.kernels``), and the trace check covers all of them. Operation targets time a whole
call of the functional API. The encoded MAYO kernel sets' targets exist only on a CPU that runs
those sets (``_mayo_encoded_targets``); every other target always exists.
"""

from __future__ import annotations

import os

import numpy as np

from .target import Target

MAYO_ALGS = ("MAYO-2", "MAYO-1", "MAYO-3", "MAYO-5")
"""MAYO-2 first: the default parameter set of a MAYO target."""

_SHARED = np.random.default_rng()
"""Randomness that both classes draw alike (signing salts, which signature to verify)."""


def _mayo_params(alg):
    from ..mayo import get
    return get(alg).params


def _el(rng, *shape) -> np.ndarray:
    """Random GF(16) elements."""
    return rng.integers(0, 16, shape, dtype=np.uint8)


def _mvecs(rng, p, *shape) -> np.ndarray:
    """Random bitsliced m-vectors (unused high bits zero, as the scheme keeps them)."""
    from ..gf16 import bitslice
    return bitslice(_el(rng, *shape, p.m), p.limbs)


def _upper_mvecs(rng, p, size) -> np.ndarray:
    full = _mvecs(rng, p, size, size)
    full[np.tril_indices(size, -1)] = 0
    return full


RANK_BIT = ("the rank bit of the signing system (sample_solution_bitsliced): whether the attempt "
            "succeeded, which decides a retry with the next counter; the rejected attempt's values are "
            "discarded, as in the specification and the C reference")
GENPOLY_REJECTION = ("genpoly's singular-system test: a candidate whose minimal polynomial has degree "
                     "below t is dropped and key generation retries with fresh randomness")
KEY_FORMAT = ("pivot_field_ok and goppa_encoding_ok: whether the private key's pivot field has its form "
              "and g's coefficients fit in m bits, checks of the key's format, not of its secret value")


def _hash_output(rng, p, size=None) -> bytes:
    """SHAKE output as signing hands it to a kernel (bytes): the vinegar and r bytes of an
    attempt, or ``size`` bytes."""
    size = p.k * p.v_bytes + p.r_bytes if size is None else size
    return rng.integers(0, 256, size, dtype=np.uint8).tobytes()


def _secret_seed(rng, p) -> bytes:
    """seed_sk, the compact secret key, as key generation and expansion hand it to a kernel."""
    return rng.integers(0, 256, p.sk_seed_bytes, dtype=np.uint8).tobytes()


def _signature_body(p) -> np.ndarray:
    return np.zeros(p.sig_bytes - p.salt_bytes, np.uint8)


def _k(module, name):
    """The kernel ``name`` of ``module``; a missing one stays as its dotted name, so that
    ``builtin_targets`` can name every target whose kernel is gone."""
    return getattr(module, name, f"{module.__name__}.{name}")


# -- GF(16) kernels -----------------------------------------------------------------------------

def _gf16_targets():
    from ..gf16 import kernels as gk
    algs = dict(algs=MAYO_ALGS, params_for=_mayo_params)

    def scalar_pair(p, rng, fixed):
        return (int(rng.integers(16)), int(rng.integers(16)))

    def scalar(p, rng, fixed):
        return (int(rng.integers(16)),)

    def word(p, rng, fixed):
        return (np.uint64(0) if fixed else np.uint64(rng.integers(1, 2 ** 63)),)

    def bit(p, rng, fixed):
        return (int(rng.integers(16)), int(rng.integers(4)))

    def mul_add(p, rng, fixed):
        return (_mvecs(rng, p), _mvecs(rng, p), int(rng.integers(16)), p.limbs)

    def compress(p, rng, fixed):
        return (np.uint64(rng.integers(2 ** 63)),)

    def mul_add_from(p, rng, fixed):
        return (_mvecs(rng, p), _mvecs(rng, p), int(rng.integers(16)), p.limbs, p.limbs - 1)

    def stream(p, rng, fixed):  # o nibble-packed m-vectors (as in decoding L), bitsliced
        total = p.o * p.m_bytes
        words = np.zeros((total + 31) // 32 * 4 + 4, np.uint64)
        words.view(np.uint8)[:total] = rng.integers(0, 256, total, dtype=np.uint8)
        return (words, 2 * p.m_bytes, np.empty((p.o, p.words), np.uint64))

    return [
        Target("gf16-mul", "GF(16) product of two scalars (both secret)", _k(gk, "gf16_mul"), scalar_pair,
               secret_args=("a", "b"), **algs),
        Target("gf16-inv", "GF(16) inverse a^14 (a secret)", _k(gk, "gf16_inv"), scalar, secret_args=("a",),
               **algs),
        Target("gf16-nonzero-mask", "all-ones mask when a word is nonzero: zero word vs random word",
               _k(gk, "nonzero_mask"), word, secret_args=("v",), classes=("zero", "random"), **algs),
        Target("gf16-nonzero-bit", "1 when a word is nonzero (the mask's arithmetic, no barrier): zero word vs "
               "random word", _k(gk, "nonzero_bit"), word, secret_args=("v",), classes=("zero", "random"), **algs),
        Target("gf16-bit-mask", "mask of bit t of a secret scalar", _k(gk, "bit_mask"), bit, secret_args=("s",),
               **algs),
        Target("gf16-mul-add-scalar", "acc ^= s * a on bitsliced m-vectors (all secret)", _k(gk, "mul_add_scalar"),
               mul_add, secret_args=("acc", "a", "s"), **algs),
        Target("gf16-compress-nibble-bits", "gathering bits 0, 4, ..., 60 of a word (x secret)",
               _k(gk, "compress_nibble_bits"), compress, secret_args=("x",), **algs),
        Target("gf16-mul-add-scalar-from", "acc ^= s * a on the upper limbs only (all secret but the public "
               "first limb)", _k(gk, "mul_add_scalar_from"), mul_add_from, secret_args=("acc", "a", "s"), **algs),
        Target("gf16-bitslice-stream", "nibble-packed vectors to bitsliced words, as in decoding secret "
               "matrices (words secret)", _k(gk, "bitslice_stream"), stream, secret_args=("words",), **algs),
    ]


# -- MAYO kernels -------------------------------------------------------------------------------

def _mayo_kernel_targets():
    from ..mayo import kernels as mk
    from ..mayo.kernels import whipping
    algs = dict(algs=MAYO_ALGS, params_for=_mayo_params)

    def packed(rng, p, size):              # an upper-triangular m-vector matrix, packed by rows
        return _mvecs(rng, p, size * (size + 1) // 2)

    def mt_keygen(p, rng, fixed):          # O^T P2 as in key generation: O secret
        return (_el(rng, p.v, p.o), _mvecs(rng, p, p.v, p.o), False, np.zeros((p.o, p.o, p.words), np.uint64))

    def mt_sign_L(p, rng, fixed):          # M_i = v_i^T L: V and L secret
        return (_el(rng, p.v, p.k), _mvecs(rng, p, p.v, p.o), False, np.zeros((p.k, p.o, p.words), np.uint64))

    def mt_sign_U(p, rng, fixed):          # (V P1) V^T: both factors secret
        return (_el(rng, p.v, p.k), _mvecs(rng, p, p.v, p.k), False, np.zeros((p.k, p.k, p.words), np.uint64))

    def mtp_keygen(p, rng, fixed):         # O^T P1, P1 packed: O secret
        return (_el(rng, p.v, p.o), packed(rng, p, p.v), np.zeros((p.o, p.v, p.words), np.uint64))

    def mtp_sign(p, rng, fixed):           # v_i^T P1, P1 packed: V secret
        return (_el(rng, p.v, p.k), packed(rng, p, p.v), np.zeros((p.k, p.v, p.words), np.uint64))

    def packed_rows(p, rng, fixed):        # P1 O as in expanding the secret key: O secret
        return (packed(rng, p, p.v), _el(rng, p.v, p.o), np.zeros((p.v, p.o, p.words), np.uint64))

    def unbitslice(p, rng, fixed):
        return (_mvecs(rng, p), p.m, np.zeros(p.m, np.uint8))

    def encode_upper(p, rng, fixed):       # O^T (P1 O + P2) before Upper, as in key generation
        return (_mvecs(rng, p, p.o, p.o), p.m, np.zeros(p.P3_bytes, np.uint8))

    def stream(p, rng):                    # a keystream of P1 || P2 (public)
        from ..gf16.kernels import stream_words
        words = np.zeros(stream_words(p.P1_bytes + p.P2_bytes), np.uint64)
        words.view(np.uint8)[:p.P1_bytes + p.P2_bytes] = rng.integers(0, 256, p.P1_bytes + p.P2_bytes,
                                                                       dtype=np.uint8)
        return words

    def public_key(p, rng, fixed):         # the keystream and a secret O
        return (stream(p, rng), _el(rng, p.v, p.o), p.m, np.zeros(p.P3_bytes, np.uint8))

    def expand_secret(p, rng, fixed):
        return (stream(p, rng), _el(rng, p.v, p.o), p.m,
                np.zeros((p.v * (p.v + 1) // 2 + p.v * p.o, p.words), np.uint64))

    def reduce(p, rng, fixed):             # three unreduced sums of m + E coefficients, as columns
        from ..gf16 import bitslice
        xl = (p.m + p.pairs + 63) // 64
        ext = np.zeros((4 * xl, 3), np.uint64)
        for c in range(3):
            ext[:, c] = bitslice(_el(rng, p.m + p.pairs), xl)
        return (ext, xl, p.m, np.array(p.f_tail, np.int64),
                np.zeros((p.words, 3), np.uint64), p.limbs)

    def whip(p, rng, fixed):
        return (_mvecs(rng, p, p.k, p.k), _mvecs(rng, p, p.k, p.o), p.m, np.array(p.f_tail, np.int64),
                _el(rng, p.m), np.zeros((p.m, p.k * p.o), np.uint8))

    def solve(p, rng, fixed):
        ko = p.k * p.o
        return (_el(rng, p.m, ko), _el(rng, p.m), _el(rng, ko), np.zeros(ko, np.uint8))

    def solve_late_pivots(p, rng, fixed):
        A, y, r, x = solve(p, rng, fixed)
        if fixed:  # the first ko - m columns zero: every pivot search runs to the far end
            A[:, :A.shape[1] - A.shape[0]] = 0
        return (A, y, r, x)

    def solve_rank(p, rng, fixed):
        A, y, r, x = solve(p, rng, fixed)
        if fixed:  # rank m - 1: the last row is the sum of the first two
            A[-1] = A[0] ^ A[1]
        return (A, y, r, x)

    def assemble(p, rng, fixed):
        return (_el(rng, p.k, p.v), _el(rng, p.v, p.o), _el(rng, p.k * p.o), p.n, np.zeros(p.k * p.n, np.uint8))

    def vinegar_bytes(p, rng, fixed):      # signing's SHAKE output decoded into the vinegar vectors
        return (rng.integers(0, 256, p.k * p.v_bytes + p.r_bytes, dtype=np.uint8),
                np.zeros((p.k, 2 * p.v_bytes), np.uint8))

    def pairs(p, rng, fixed):              # U[i, j] = v_i^T P1 v_j: V and P1 secret in signing
        return (_el(rng, p.k, p.v), packed(rng, p, p.v), np.zeros((p.k, p.k, p.words), np.uint64))

    def attempt(p, rng, fixed):            # one signing attempt: everything secret
        ko = p.k * p.o
        return (_el(rng, p.k, p.v), _el(rng, ko), packed(rng, p, p.v), _mvecs(rng, p, p.v, p.o), _el(rng, p.m),
                np.array(p.f_tail, np.int64), np.zeros(ko, np.uint8), mk.units())

    def from_hashes(p, rng, fixed):        # one signing attempt from its hash outputs to the encoded signature
        return (_hash_output(rng, p), _hash_output(rng, p, p.m_bytes), packed(rng, p, p.v), _mvecs(rng, p, p.v, p.o),
                _el(rng, p.v, p.o), p.k, np.array(p.f_tail, np.int64), mk.units(), _signature_body(p))

    def evaluate(p, rng, fixed):           # verification's P*(s) on P's byte encoding: public
        entries = _el(rng, p.n * (p.n + 1) // 2, p.m)
        P = np.zeros((entries.shape[0], p.words), np.uint64)
        P.view(np.uint8)[:, :p.m_bytes] = entries[:, 0::2] | (entries[:, 1::2] << 4)
        return (_el(rng, p.k, p.n), P, p.zero_limbs, (0,), np.array(p.f_tail, np.int64), np.zeros(p.m, np.uint8),
                mk.verify_units())

    return [
        Target("mayo-sign-attempt", "one whole signing attempt in compiled code: products, whipping, "
               "solution sampling (all inputs secret)", _k(mk, "sign_attempt"), attempt,
               secret_args=("V", "r", "P1", "L", "t"), declassified=(RANK_BIT,), **algs),
        Target("mayo-sign-from-hashes", "one signing attempt from its hash outputs: decoding V, r and t, the "
               "attempt, the signature's assembly and encoding (all inputs secret but t)", _k(mk, "sign_from_hashes"),
               from_hashes, secret_args=("vr", "P1", "L", "O"), declassified=(RANK_BIT,), **algs),
        Target("mayo-quadratic-pairs", "U[i, j] = v_i^T P1 v_j, P1 packed (V and P1 secret)",
               _k(mk, "quadratic_pairs"), pairs, secret_args=("X", "P"), **algs),
        Target("mayo-evaluate-public", "P*(s) of verification in compiled code: public data only (timing "
               "only)", _k(mk, "evaluate_public_sized"), evaluate, **algs),
        Target("mayo-mul-transposed-O", "O^T P2 as in key generation (oil matrix O secret)",
               _k(mk, "mul_transposed"), mt_keygen, secret_args=("B",), **algs),
        Target("mayo-mul-transposed-L", "v_i^T L as in signing (V and L secret)", _k(mk, "mul_transposed"),
               mt_sign_L, secret_args=("B", "A"), **algs),
        Target("mayo-mul-transposed-U", "(v_i^T P1) v_j as in signing (both factors secret)",
               _k(mk, "mul_transposed"), mt_sign_U, secret_args=("B", "A"), **algs),
        Target("mayo-mul-transposed-packed-O", "O^T P1, P1 packed, as in key generation (O secret)",
               _k(mk, "mul_transposed_packed"), mtp_keygen, secret_args=("B",), **algs),
        Target("mayo-mul-transposed-packed-V", "v_i^T P1, P1 packed, as in signing (V secret)",
               _k(mk, "mul_transposed_packed"), mtp_sign, secret_args=("B",), **algs),
        Target("mayo-mul-packed-rows", "P1 O, P1 packed, as in expanding the secret key (O secret)",
               _k(mk, "mul_packed_rows"), packed_rows, secret_args=("B",), **algs),
        Target("mayo-unbitslice", "elements of a bitsliced m-vector (words secret)", _k(mk, "unbitslice_into"),
               unbitslice, secret_args=("words",), **algs),
        Target("mayo-encode-upper", "Encode(Upper(X)) of key generation's X = O^T (P1 O + P2) (X secret)",
               _k(mk, "encode_upper_into"), encode_upper, secret_args=("X",), **algs),
        Target("mayo-public-key-from-stream", "key generation after hashing: decoding P1 || P2, P1 O + P2, "
               "O^T (P1 O + P2), Encode(Upper(.)) (O secret)", _k(mk, "public_key_from_stream"), public_key,
               secret_args=("O",), **algs),
        Target("mayo-expand-secret-from-stream", "expanding the secret key after hashing: decoding P1 || P2, "
               "L = (P1 + P1^T) O + P2 (O secret)", _k(mk, "expand_secret_from_stream"), expand_secret,
               secret_args=("O",), **algs),
        Target("mayo-reduce-mod-f", "reduction modulo f(z) inside whipping (coefficients secret)",
               _k(whipping, "_reduce_mod_f"), reduce, secret_args=("ext",), **algs),
        Target("mayo-whip", "combining the k(k+1)/2 evaluations with powers of z (U, M, y, A secret)",
               _k(mk, "whip"), whip, secret_args=("U", "M", "y", "A"), **algs),
        Target("mayo-sample-solution", "solution sampling: echelon form and back substitution of "
               "A x = y (A, y, r secret)", _k(mk, "sample_solution"), solve, secret_args=("A", "y", "r"),
               declassified=(RANK_BIT,), **algs),
        Target("mayo-echelon-pivots", "echelon form: a system whose pivots all lie in the last m columns "
               "vs a random system", _k(mk, "sample_solution"), solve_late_pivots, secret_args=("A", "y", "r"),
               classes=("late pivots", "random"), declassified=(RANK_BIT,), **algs),
        Target("mayo-echelon-rank", "echelon form: a rank-deficient system vs a random (full-rank) one; the "
               "rank bit itself is public", _k(mk, "sample_solution"), solve_rank, secret_args=("A", "y", "r"),
               classes=("rank m-1", "random"), declassified=(RANK_BIT,), **algs),
        Target("mayo-assemble-signature", "s_i = (v_i + O x_i, x_i) (V, O, x secret)",
               _k(mk, "assemble_signature"), assemble, secret_args=("V", "O", "x"), **algs),
        Target("mayo-decode-vinegar", "the vinegar vectors from their bytes (the bytes secret)",
               _k(mk, "decode_nibbles_into"), vinegar_bytes, secret_args=("data",), **algs),
    ]


# -- MAYO kernels on the byte encoding (the gfni, avx2 and neon kernel sets) --------------------

def _mayo_encoded_targets():
    """For each encoded kernel set this CPU runs (their compiled kernels exist nowhere else)."""
    from ..gf16 import gfni, sets, shuffle
    from ..mayo.kernels import encoded as gn
    from ..mayo.kernels import units
    algs = dict(algs=MAYO_ALGS, params_for=_mayo_params)

    def slots(p, rng):                     # P1 || P2 in their slots, as the keystream gives them (public)
        count = p.v * (p.v + 1) // 2 + p.v * p.o
        out = np.zeros((count, p.words), np.uint64)
        out.view(np.uint8)[:, :p.m_bytes] = rng.integers(0, 256, (count, p.m_bytes), dtype=np.uint8)
        return out.reshape(-1)

    def scalars(p, rng, fixed):            # the oil matrix's elements, as in key generation
        return (_el(rng, p.v, p.o),)

    found = []
    for name in (n for n in sets.runnable() if sets.forms_of(n) is not None):
        forms = sets.forms_of(name)
        width = (0,) * sets.aes_width(name, sets.cpu_features())     # the compiled AES beside the set

        def public_key(p, rng, fixed, forms=forms):     # O given by its encoding, as key generation has it
            return (slots(p, rng), rng.integers(0, 256, p.O_bytes, dtype=np.uint8), p.v, p.o, p.zero_chunks, forms,
                    np.zeros(p.P3_bytes, np.uint8))

        def expand_secret(p, rng, fixed, forms=forms):
            return (slots(p, rng), _el(rng, p.v, p.o), p.zero_chunks, forms)

        def from_seed(p, rng, fixed, forms=forms, width=width):  # key generation from the secret seed
            return (_secret_seed(rng, p), p.v, p.o, p.m_bytes, p.zero_chunks, forms, width,
                    np.zeros(p.cpk_bytes, np.uint8))

        def expand_from_seed(p, rng, fixed, forms=forms, width=width):
            return (_secret_seed(rng, p), p.pk_seed_bytes, np.zeros((p.v, p.o), np.uint8), p.m_bytes, p.zero_chunks,
                    forms, width)

        def whole_sign(p, rng, fixed, forms=forms, width=width):     # signing from the message's, R's and the seed's bytes
            return (b"message", _hash_output(rng, p, p.salt_bytes), _secret_seed(rng, p), slots(p, rng),
                    _el(rng, p.v, p.o), p.k, p.pk_seed_bytes, p.digest_bytes, p.m_bytes, np.array(p.f_tail, np.int64),
                    p.zero_chunks, forms, width, units(), np.zeros(p.sig_bytes, np.uint8))

        def sign_from_seed(p, rng, fixed, forms=forms, width=width):    # the same under the compact key
            return (b"message", _hash_output(rng, p, p.salt_bytes), _secret_seed(rng, p), np.zeros(0, np.uint64),
                    np.zeros((p.v, p.o), np.uint8), p.k, p.pk_seed_bytes, p.digest_bytes, p.m_bytes,
                    np.array(p.f_tail, np.int64), p.zero_chunks, forms, width, units(), np.zeros(p.sig_bytes, np.uint8))

        def products(p, rng, fixed, forms=forms):       # signing's products: V, P1 and L secret
            return (_el(rng, p.k, p.v), slots(p, rng), p.o, p.zero_chunks, forms,
                    np.zeros(p.k * p.o * p.words, np.uint64), np.zeros(p.k * p.k * p.words, np.uint64))

        def attempt(p, rng, fixed, forms=forms):        # one signing attempt: everything secret
            return (_el(rng, p.k, p.v), _el(rng, p.k * p.o), slots(p, rng), p.o, _el(rng, p.m),
                    np.array(p.f_tail, np.int64), p.zero_chunks, forms, np.zeros(p.k * p.o, np.uint8), units())

        form_of = {"gfni": ("scalar-matrices", "the GFNI bit matrices", gfni.scalar_matrices),
                   "avx2": ("pair-tables", "the entangled shuffle tables", shuffle.pair_tables),
                   "neon": ("pair-tables", "the entangled shuffle tables", shuffle.pair_tables)}[name]
        found += [
            Target(f"mayo-{name}-sign-attempt", f"one whole signing attempt from P1 || L on the encoding, {name} set "
                   "(all inputs secret)", _k(gn, "sign_attempt"), attempt, secret_args=("V", "r", "slots", "t"),
                   declassified=(RANK_BIT,), **algs),
            Target(f"mayo-{name}-sign", f"signing in one call on the encoding, {name} set: the hashes, the "
                   "attempts, the signature's encoding (R, seed_sk, P1 || L and O secret)", _k(gn, "sign"), whole_sign,
                   secret_args=("rand", "seed_sk", "slots", "O"), declassified=(RANK_BIT,), **algs),
            Target(f"mayo-{name}-sign-products", f"v_i^T L and v_i^T P1 v_j on the encoding, {name} set (V, P1, L "
                   "secret)", _k(gn, "sign_products"), products, secret_args=("V", "slots"), **algs),
            Target(f"gf16-{name}-{form_of[0]}", f"{form_of[1]} of a matrix of scalars, as of O in key generation (B "
                   "secret; an array call, so numba's conversion of a Python int stays out of the timing)",
                   form_of[2], scalars, secret_args=("B",), **algs),
            Target(f"mayo-{name}-public-key", f"key generation after hashing on the encoding, {name} set: P1 O + "
                   "P2, O^T (P1 O + P2), Encode(Upper(.)) (O secret)", _k(gn, "public_key_from_slots"), public_key,
                   secret_args=("oil",), **algs),
            Target(f"mayo-{name}-expand-secret", f"expanding the secret key on the encoding, {name} set: L = "
                   "(P1 + P1^T) O + P2 (O secret)", _k(gn, "expand_secret_slots"), expand_secret,
                   secret_args=("O",), **algs),
        ]
        if width:                      # (without AES instructions the key is expanded by OpenSSL)
            found += [
                Target(f"mayo-{name}-public-key-from-seed", f"key generation in one call, {name} set: "
                       "SHAKE256(seed_sk), AES-128-CTR of the seed it gives, the products, the encoding (seed_sk "
                       "secret)", _k(gn, "public_key_from_seed"), from_seed, secret_args=("seed_sk",), **algs),
                Target(f"mayo-{name}-expand-secret-from-seed", f"secret-key expansion in one call, {name} set: "
                       "SHAKE256(seed_sk), decoding O, AES-128-CTR of the seed it gives, L (seed_sk secret)",
                       _k(gn, "expand_secret_from_seed"), expand_from_seed, secret_args=("seed_sk",), **algs),
                Target(f"mayo-{name}-sign-from-seed", f"signing under the compact key in one call, {name} set: the "
                       f"secret-key expansion, then as mayo-{name}-sign (R and seed_sk secret)", _k(gn, "sign"),
                       sign_from_seed, secret_args=("rand", "seed_sk"), declassified=(RANK_BIT,), **algs),
            ]
    return found


# -- hashing inside the batch loops -------------------------------------------------------------

def _batch_hash_targets():
    from .. import shake
    from ..mayo.kernels import batch as bk
    algs = dict(algs=MAYO_ALGS, params_for=_mayo_params)
    count = 3

    def shake256(p, rng, fixed):           # SHAKE256 of a secret input (a seed, say) over two blocks
        return (rng.integers(0, 256, 200, dtype=np.uint8), np.zeros(p.salt_bytes + 150, np.uint8),
                np.zeros(25, np.uint64))

    def hashes(p, rng, fixed):             # three elements, the last under a second key: seeds and rand secret
        lengths = _SHARED.integers(0, 300, count)
        offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        data = _SHARED.integers(0, 256, int(offsets[-1]) + 1, dtype=np.uint8)
        return (data, offsets, rng.integers(0, 256, (count, p.salt_bytes), dtype=np.uint8),
                rng.integers(0, 256, (2, p.sk_seed_bytes), dtype=np.uint8), np.array([0, 0, 1], np.int64),
                p.digest_bytes, np.zeros((count, p.salt_bytes), np.uint8), np.zeros((count, p.m), np.uint8),
                np.zeros((count, p.k, p.v), np.uint8), np.zeros((count, p.k * p.o), np.uint8))

    return [
        Target("shake256", "compiled SHAKE256 of a secret 200-byte input, squeezed over two blocks",
               _k(shake, "shake256_into"), shake256, secret_args=("src",), **algs),
        Target("mayo-signing-hashes", "the hashes of batch signing in compiled code: salt, t, vinegar and r "
               "from the message, the salt randomness and the secret seed (seeds and rand secret)",
               _k(bk, "signing_hashes"), hashes, secret_args=("rand", "seeds"), **algs),
    ]


# -- MAYO operations ----------------------------------------------------------------------------

def _fresh(data: bytes) -> bytes:
    """A new copy of pooled bytes: every call gets its own object, as fresh buffers do for kernels.
    Passing the pooled object itself would let the fixed class, which reuses one entry far more
    often, find its input in the cache more often than the random class does."""
    return bytes(bytearray(data))


class _Salt:
    """A signing rng that returns bytes drawn in advance (outside the timed region)."""

    def __init__(self, data: bytes):
        self.data = data

    def __call__(self, n: int) -> bytes:
        return self.data[:n]


_MSG = b"pqforge constant-time campaign message"
_SIGNING_KEY: dict = {}
_VERIFY_POOL: dict = {}
POOL_KEYS = 32
POOL_SIGS = 8


def _signing_key(p) -> bytes:
    """One secret key per parameter set and process, shared by both classes."""
    if p.name not in _SIGNING_KEY:
        _SIGNING_KEY[p.name] = os.urandom(p.csk_bytes)
    return _SIGNING_KEY[p.name]


def _verify_pool(p):
    """POOL_KEYS key pairs with valid signatures on random 32-byte messages: the first key (the
    fixed class's) has as many signatures as all the others together, POOL_SIGS each, so that
    both classes see equally many distinct messages and signatures and differ only in the key."""
    if p.name not in _VERIFY_POOL:
        from .. import mayo
        pool = []
        for i in range(POOL_KEYS):
            pk, sk = mayo.keypair(p, os.urandom)
            sigs = []
            for _ in range(POOL_SIGS * (POOL_KEYS - 1) if i == 0 else POOL_SIGS):
                msg = os.urandom(32)
                sigs.append((msg, mayo.sign(p, sk, msg, os.urandom)))
            pool.append((pk, sigs))
        _VERIFY_POOL[p.name] = pool
    return _VERIFY_POOL[p.name]


def _mayo_operation_targets():
    from .. import mayo
    algs = dict(algs=MAYO_ALGS, params_for=_mayo_params, kind="operation")

    def sign_key(p, rng, fixed):
        return (p, rng.bytes(p.csk_bytes), _fresh(_MSG), _Salt(_SHARED.bytes(p.salt_bytes)))

    def sign_message(p, rng, fixed):
        return (p, _fresh(_signing_key(p)), rng.bytes(32), _Salt(_SHARED.bytes(p.salt_bytes)))

    def verify_key(p, rng, fixed):
        pool = _verify_pool(p)
        pk, sigs = pool[0] if fixed else pool[1 + int(rng.integers(len(pool) - 1))]
        msg, sig = sigs[int(_SHARED.integers(len(sigs)))]
        return (p, _fresh(pk), _fresh(msg), _fresh(sig))

    def verify_message(p, rng, fixed):
        pk, sigs = _verify_pool(p)[0]
        msg, sig = sigs[int(rng.integers(len(sigs)))]
        return (p, _fresh(pk), _fresh(msg), _fresh(sig))

    return [
        Target("mayo-sign-key", "whole signing (compact key, expansion included): fixed vs random secret "
               "key, same message, fresh salt randomness", mayo.sign, sign_key, secret_args=("sk",),
               declassified=(RANK_BIT,), **algs),
        Target("mayo-sign-message", "whole signing: one secret key, fixed vs random message, fresh salt "
               "randomness", mayo.sign, sign_message, secret_args=("sk",), declassified=(RANK_BIT,), **algs),
        Target("mayo-verify-key", f"whole verification (valid signatures): one fixed public key vs "
               f"{POOL_KEYS - 1} others; each class draws from {POOL_SIGS * (POOL_KEYS - 1)} messages "
               f"and signatures",
               mayo.verify, verify_key, **algs),
        Target("mayo-verify-message", f"whole verification (valid signatures), one public key: fixed vs "
               f"random message and signature (from {POOL_SIGS * (POOL_KEYS - 1)})", mayo.verify,
               verify_message, **algs),
    ]


# -- Classic McEliece operations --------------------------------------------------------------

MCE_KEYS = 4
MCE_CTS = 48
_MCE_POOL: dict = {}


def _mceliece_params(alg):
    from ..mceliece import get
    return get(alg).params


def _mce_pool(p):
    """MCE_KEYS key pairs with valid (ciphertext, shared secret) pairs: the first key (the fixed
    class's) has as many as all the others together, MCE_CTS each."""
    if id(p) not in _MCE_POOL:
        from .. import mceliece
        pool = []
        for i in range(MCE_KEYS):
            pk, sk = mceliece.keypair(p, os.urandom)
            cts = [mceliece.encapsulate(p, pk, os.urandom)
                   for _ in range(MCE_CTS * (MCE_KEYS - 1) if i == 0 else MCE_CTS)]
            pool.append((sk, cts))
        _MCE_POOL[id(p)] = (p, pool)
    return _MCE_POOL[id(p)][1]


def _mce_public(p) -> bytes:
    """A public key for the encapsulation kernels (the pool's first key pair's)."""
    from .. import mceliece
    key = ("pk", id(p))
    if key not in _MCE_POOL:
        _MCE_POOL[key] = (p, mceliece.keypair(p, os.urandom)[0])
    return _MCE_POOL[key][1]


def _mceliece_targets():
    from .. import mceliece
    algs = dict(algs=tuple(mceliece.ALGORITHMS), params_for=_mceliece_params, kind="operation")

    def validity(p, rng, fixed):
        sk, cts = _mce_pool(p)[0]
        ct = bytearray(cts[int(_SHARED.integers(len(cts)))][0])
        if fixed:  # malformed: one syndrome bit flipped, so decoding fails and rejection follows
            bit = int(_SHARED.integers(p.mt))
            ct[bit >> 3] ^= 1 << (bit & 7)
        return (p, _fresh(sk), bytes(ct))

    def key(p, rng, fixed):
        pool = _mce_pool(p)
        sk, cts = pool[0] if fixed else pool[1 + int(rng.integers(len(pool) - 1))]
        return (p, _fresh(sk), _fresh(cts[int(_SHARED.integers(len(cts)))][0]))

    def preimage_args(p, ct, sk):
        from ..mceliece import decode, scheme as ms
        g, cond, sv = ms.secret_key_parts(p, sk)
        return (np.frombuffer(ct, dtype=np.uint8).copy(), g.copy(), cond.copy(), sv.copy(), p.m, p.n, p.t,
                *ms.decoding_constants(p), decode.units(p.m))

    def preimage_key(p, rng, fixed):
        pool = _mce_pool(p)
        sk, cts = pool[0] if fixed else pool[1 + int(rng.integers(len(pool) - 1))]
        return preimage_args(p, cts[int(_SHARED.integers(len(cts)))][0], sk)

    def preimage_validity(p, rng, fixed):
        return preimage_args(p, *validity(p, rng, fixed)[:0:-1])

    def preimage_validity_pair(p, rng):
        # the same key, a valid and a malformed ciphertext: whether decoding succeeds depends on
        # the secret key, so it must not steer the flow either
        return preimage_validity(p, rng, False), preimage_validity(p, rng, True)

    def weight(p, rng, fixed):             # the error vector's positions are secret
        from ..mceliece import scheme as ms
        return (ms.fixed_weight(p, rng.bytes).copy(), p.n // 8)

    def syndrome(p, rng, fixed):           # H e under one public key, e secret
        from ..mceliece import matrix, scheme as ms
        pk = _mce_public(p)
        e = matrix.weight_vector(ms.fixed_weight(p, rng.bytes), p.n // 8)
        return (np.frombuffer(pk, np.uint8).copy(), e, p.mt, p.pk_row_bytes)

    def sort_keys(p, rng, fixed):          # key generation's random words, tagged with positions
        perm = rng.integers(0, 2 ** 32, p.q, dtype=np.int64)
        return ((perm << 31) | np.arange(p.q, dtype=np.int64),)

    def permutation(p, rng, fixed):        # the secret permutation behind the support
        return (rng.permutation(p.q).astype(np.int64), p.m)

    def goppa(p, rng, fixed):              # key generation's random field element f
        from ..mceliece import scheme as ms
        return (rng.integers(0, p.q, p.t, dtype=np.int64), p.m, ms.field_poly(p),
                np.array(p.poly_taps, dtype=np.int64), p.poly_const_z)

    def syndromes(p, rng, fixed):          # decapsulation's 2t syndromes (secret)
        from ..mceliece import scheme as ms
        return (rng.integers(0, p.q, 2 * p.t, dtype=np.int64), p.t, p.m, ms.field_poly(p))

    from ..mceliece import benes, decode, gf, matrix
    return [
        Target("mceliece-weight-vector", "the error vector from its t secret positions",
               _k(matrix, "weight_vector"), weight, secret_args=("ind",), **{**algs, "kind": "kernel"}),
        Target("mceliece-syndrome", "encapsulation's syndrome H e (e secret, public key fixed)",
               _k(matrix, "syndrome_from_public_key"), syndrome, secret_args=("e",), **{**algs, "kind": "kernel"}),
        Target("mceliece-sort-network", "key generation's sorting network on tagged random words (secret)",
               _k(benes, "sort_network"), sort_keys, secret_args=("a",), **{**algs, "kind": "kernel"}),
        Target("mceliece-control-bits", "Benes control bits of the secret permutation", _k(benes, "control_bits"),
               permutation, secret_args=("pi",), **{**algs, "kind": "kernel"}),
        Target("mceliece-genpoly", "the Goppa polynomial as the minimal polynomial of a secret f",
               _k(gf, "genpoly"), goppa, secret_args=("f",), declassified=(GENPOLY_REJECTION,),
               **{**algs, "kind": "kernel"}),
        Target("mceliece-berlekamp-massey", "decapsulation's error locator from secret syndromes",
               _k(gf, "berlekamp_massey"), syndromes, secret_args=("s",), **{**algs, "kind": "kernel"}),
        Target("mceliece-decap-preimage-key", "decapsulation's compiled core (decoding, implicit rejection): "
               "one fixed private key vs three others, valid ciphertexts (g, cond, s secret)",
               _k(decode, "decap_preimage"), preimage_key, secret_args=("g", "cond", "s"), **{**algs, "kind": "kernel"}),
        Target("mceliece-decap-preimage-validity", "decapsulation's compiled core under one key: a valid "
               "ciphertext with one syndrome bit flipped vs a valid one (g, cond, s secret; the trace check "
               "compares a valid with a malformed ciphertext)", _k(decode, "decap_preimage"), preimage_validity,
               secret_args=("g", "cond", "s"), classes=("malformed", "valid"),
               trace_inputs=preimage_validity_pair, **{**algs, "kind": "kernel"}),
        Target("mceliece-decap-validity", "whole decapsulation under one key: a valid ciphertext with one "
               "syndrome bit flipped (implicit rejection) vs a valid ciphertext", mceliece.decapsulate,
               validity, secret_args=("sk",), classes=("malformed", "valid"), declassified=(KEY_FORMAT,), **algs),
        Target("mceliece-decap-key", f"whole decapsulation of valid ciphertexts: one fixed private key vs "
               f"{MCE_KEYS - 1} others; each class draws from {MCE_CTS * (MCE_KEYS - 1)} ciphertexts",
               mceliece.decapsulate, key, secret_args=("sk",), declassified=(KEY_FORMAT,), **algs),
    ]


def builtin_targets() -> list[Target]:
    """Every target of both schemes. A target whose kernel is missing is an error, not a target
    left out: a renamed or removed kernel must not drop out of the constant-time checks unseen."""
    found = (_gf16_targets() + _mayo_kernel_targets() + _mayo_encoded_targets() + _batch_hash_targets()
             + _mayo_operation_targets() + _mceliece_targets())
    missing = [f"{t.name} (no kernel {t.func})" for t in found if isinstance(t.func, str)]
    if missing:
        raise RuntimeError(f"constant-time targets whose kernel is missing: {', '.join(missing)}")
    return found
