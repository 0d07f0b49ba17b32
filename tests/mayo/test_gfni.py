"""The GFNI kernels (products on the byte encoding) against a GF(16) reference, their Python
twins, the official vectors on both kernel paths, and the choice of path."""

import os
import subprocess
import sys

import numpy as np
import pytest

from pqforge import kat
from pqforge.gf16 import encode_nibbles, gfni
from pqforge.mayo import ALGORITHMS
from pqforge.mayo import gfni_kernels as gn

from ..known_answers import MAYO_FILES, mayo_entries
from ..twins import pure
from .test_kernels import MUL

RNG = np.random.default_rng(16)
HAS_GFNI = gfni.cpu_has_gfni()
needs_gfni = pytest.mark.skipif(not HAS_GFNI, reason="this CPU has no GFNI: the compiled kernels cannot run")


def encode_slots(vectors, words):
    """Element arrays (count, m) -> flat slots of ``words`` uint64, the encoding at their start."""
    count, m = vectors.shape
    slots = np.zeros((count, words), np.uint64)
    slots.view(np.uint8)[:, :m // 2] = vectors[:, 0::2] | (vectors[:, 1::2] << 4)
    return slots.reshape(-1)


def decode_slots(slots, words, m):
    b = slots.reshape(-1, words).view(np.uint8)[:, :m // 2]
    out = np.empty((b.shape[0], m), np.uint8)
    out[:, 0::2], out[:, 1::2] = b & 15, b >> 4
    return out


def mul_vectors(c, vectors):
    return MUL[c][vectors]


def test_mul_add_slot_multiplies_every_byte_by_the_scalar():
    src = np.arange(256, dtype=np.uint8).view(np.uint64)         # 32 words: every byte value once
    kernels = [gfni.mul_add_slot]
    if HAS_GFNI:
        import numba as nb

        @nb.njit
        def compiled(dst, src, matrix):
            for at in range(0, 32, 8):
                gfni.mul_add_slot(dst, at, src, at, matrix, (0, 0))
        kernels.append(lambda dst, d, s_, s, matrix, limbs: compiled(dst, s_, matrix))
    for c in range(16):
        start = RNG.integers(0, 2**63, 32, dtype=np.uint64)
        expect = start.view(np.uint8) ^ (MUL[c][np.arange(256) & 15] | (MUL[c][np.arange(256) >> 4] << 4))
        for kernel in kernels:
            dst = start.copy()
            for at in range(0, 32, 8):
                if kernel is gfni.mul_add_slot:
                    kernel(dst, at, src, at, gfni.scalar_matrix(c), (0, 0))
            if kernel is not gfni.mul_add_slot:
                kernel(dst, 0, src, 0, gfni.scalar_matrix(c), (0, 0))
            assert (dst.view(np.uint8) == expect).all(), c


def reference_products(v, o, m, P1, P2, O):
    """Q = P1 O + P2 and L = (P1 + P1^T) O + P2 for element arrays (P1 full (v, v, m), upper)."""
    Q = P2.copy()
    L = P2.copy()
    for r in range(v):
        for c in range(o):
            for j in range(v):
                Q[r, c] ^= mul_vectors(O[j, c], P1[r, j])
                if j != r:
                    L[r, c] ^= mul_vectors(O[j, c], P1[r, j] ^ P1[j, r])
    return Q, L


def key_matrices(m, v, o):
    """(limbs, W, P1 upper triangular (v, v, m), P2 (v, o, m), and both in slots) at random."""
    limbs = (m + 63) // 64
    P1 = np.zeros((v, v, m), np.uint8)
    iu = np.triu_indices(v)
    P1[iu] = RNG.integers(0, 16, (len(iu[0]), m), dtype=np.uint8)
    P2 = RNG.integers(0, 16, (v, o, m), dtype=np.uint8)
    return limbs, 4 * limbs, P1, P2, encode_slots(np.concatenate([P1[iu], P2.reshape(v * o, m)]), 4 * limbs)


@pytest.mark.parametrize("m, v, o", [(64, 9, 5), (78, 7, 4)])   # slot = encoding; slot padded
def test_products_on_the_encoding_match_the_reference(m, v, o):
    limbs, W, P1, P2, slots = key_matrices(m, v, o)
    iu = np.triu_indices(v)
    O = RNG.integers(0, 16, (v, o), dtype=np.uint8)
    Q, L = reference_products(v, o, m, P1, P2, O)
    P3 = np.zeros((o, o, m), np.uint8)
    for i in range(o):
        for c in range(o):
            for r in range(v):
                P3[i, c] ^= mul_vectors(O[r, i], Q[r, c])
    upper = [P3[i, j] ^ P3[j, i] if i != j else P3[i, i] for i in range(o) for j in range(i, o)]
    expect_pk = np.concatenate([u[0::2] | (u[1::2] << 4) for u in upper])
    e1 = len(iu[0])
    oil = np.frombuffer(encode_nibbles(O.ravel()), np.uint8)        # O as key generation has it
    runs = [(pure(gn.public_key_from_slots), pure(gn.expand_secret_slots))]
    if HAS_GFNI:
        runs.append((gn.public_key_from_slots, gn.expand_secret_slots))
    for public_key, expand in runs:
        pk = np.zeros(len(expect_pk), np.uint8)
        public_key(slots.copy(), oil, v, o, (0,) * limbs, pk)
        assert (pk == expect_pk).all()
        expanded = slots.copy()
        expand(expanded, O, (0,) * limbs)
        assert (decode_slots(expanded, W, m)[e1:].reshape(v, o, m) == L).all()
        assert (expanded[:e1 * W] == slots[:e1 * W]).all()          # P1 untouched
        assert not expanded.reshape(-1, W).view(np.uint8)[:, m // 2:].any()   # padding stays zero


@pytest.mark.parametrize("name", MAYO_FILES)
def test_portable_kernels_reproduce_the_official_vectors(name, portable_kernels):
    """The full KAT test runs on the path this CPU chooses; this one forces the fallback."""
    official = list(mayo_entries(name)[:10])
    assert list(kat.signature_kat_entries(ALGORITHMS[name], 10)) == official


def _kernels_in_subprocess(value):
    env = dict(os.environ, **({gfni.KERNELS_ENV: value} if value is not None else {}))
    if value is None:
        env.pop(gfni.KERNELS_ENV, None)
    return subprocess.run([sys.executable, "-c", "from pqforge.gf16 import gfni; print(gfni.KERNELS)"],
                          env=env, capture_output=True, text=True, check=True)


def test_the_environment_forces_the_portable_kernels():
    assert _kernels_in_subprocess("portable").stdout.strip() == "portable"
    chosen = "gfni" if HAS_GFNI else "portable"
    assert _kernels_in_subprocess(None).stdout.strip() == chosen
    typo = _kernels_in_subprocess("portabel")
    assert typo.stdout.strip() == chosen
    assert "PQFORGE_KERNELS='portabel' is not 'auto' or 'portable'" in typo.stderr


def test_a_cpu_target_without_gfni_gets_the_portable_kernels():
    env = dict(os.environ, NUMBA_CPU_NAME="generic")
    env.pop(gfni.KERNELS_ENV, None)
    out = subprocess.run([sys.executable, "-c", "from pqforge.gf16 import gfni; print(gfni.KERNELS)"],
                         env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "portable"


@pytest.mark.parametrize("m, v, o, k", [(64, 9, 5, 3), (78, 7, 4, 2)])
def test_signing_products_on_the_encoding_match_the_reference(m, v, o, k):
    limbs, W, P1, L, slots = key_matrices(m, v, o)
    V = RNG.integers(0, 16, (k, v), dtype=np.uint8)
    M = np.zeros((k, o, m), np.uint8)
    U = np.zeros((k, k, m), np.uint8)
    for i in range(k):
        for r in range(v):
            for c in range(o):
                M[i, c] ^= mul_vectors(V[i, r], L[r, c])
        for j in range(k):
            for r in range(v):
                for c in range(v):
                    U[i, j] ^= mul_vectors(MUL[V[i, r], V[j, c]], P1[r, c])
    runs = [pure(gn.sign_products)] + ([gn.sign_products] if HAS_GFNI else [])
    for products in runs:
        Ms = np.zeros(k * o * W, np.uint64)
        Us = np.zeros(k * k * W, np.uint64)
        products(V, slots, o, (0,) * limbs, Ms, Us)
        assert (decode_slots(Ms, W, m).reshape(k, o, m) == M).all()
        assert (decode_slots(Us, W, m).reshape(k, k, m) == U).all()
