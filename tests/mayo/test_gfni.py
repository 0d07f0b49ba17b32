"""The encoded kernels (products on the byte encoding: the gfni, avx2 and neon sets) against a
GF(16) reference, their Python twins, the official vectors on every kernel set, and the choice of set."""

import os
import subprocess
import sys

import numpy as np
import pytest

from pqforge import kat
from pqforge.gf16 import encode_nibbles, gfni, sets, shuffle
from pqforge.jit.target import architecture
from pqforge.mayo import ALGORITHMS
from pqforge.mayo.kernels import encoded as gn
from pqforge.mayo.kernels import layout

from ..known_answers import MAYO_FILES, mayo_entries
from ..twins import pure
from .conftest import RUNNABLE, use_kernel_set
from .test_kernels import MUL

RNG = np.random.default_rng(16)
HAS_GFNI = "gfni" in sets.runnable()
ENCODED = tuple(name for name in sets.NAMES if name != "portable")
"""The encoded sets: their Python twins run anywhere, their compiled kernels where the CPU runs them."""


def runs_of(*kernels):
    """(set, forms, kernels) for each encoded set: the Python twins always, the compiled kernels
    where this CPU runs the set."""
    out = []
    for name in ENCODED:
        out.append((name, sets.forms_of(name), [pure(k) for k in kernels]))
        if name in sets.runnable():
            out.append((name, sets.forms_of(name), list(kernels)))
    return out


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


def row_products_of(name):
    """(label, accumulate, flush) for set ``name``: the Python twins, and the compiled entry
    points where this CPU runs the set."""
    out = [("twin", gfni.row_accumulate, gfni.row_flush)]
    if name in sets.runnable():
        import numba as nb

        @nb.njit
        def accumulate(tmp, src, s, step, shrink, count, forms, j0, cols, chunks):
            gfni.row_accumulate(tmp, src, s, step, shrink, count, forms, j0, cols, chunks)

        @nb.njit
        def flush(dst, d, dcol, tmp, cols, chunks, like):
            gfni.row_flush(dst, d, dcol, tmp, cols, chunks, like)
        out.append(("compiled", accumulate, flush))
    return out


@pytest.mark.parametrize("name", ENCODED)
@pytest.mark.parametrize("cols", [16, 15])          # every scalar; an odd count (the last pair half empty)
@pytest.mark.parametrize("chunks", [2, 1])          # a 32-byte block; a 16-byte one (an odd last chunk)
def test_row_products_multiply_every_byte_by_every_scalar(name, cols, chunks):
    src = np.arange(256, dtype=np.uint8).view(np.uint64)         # 32 words: every byte value once
    B = np.arange(16 - cols, 16, dtype=np.uint8)[None, :]        # one term: the scalars of one row
    forms = gfni.matrix_forms(B, sets.forms_of(name))
    n = 16 * chunks                                               # bytes of a vector, in a 32-byte slot
    for label, accumulate, flush in row_products_of(name):
        for at in range(0, 32, 2 * chunks):                       # one vector at a time
            tmp = gfni.row_scratch(cols, (0,) * chunks)
            start = RNG.integers(0, 2**63, cols * 4, dtype=np.uint64)
            dst = start.copy()
            accumulate(tmp, src, at, 0, 0, 1, forms, 0, cols, (0,) * chunks)
            flush(dst, 0, 4, tmp, cols, (0,) * chunks, sets.forms_of(name))
            x = np.arange(8 * at, 8 * at + n)
            for c in range(cols):
                scalar = B[0, c]
                got, before = dst[4 * c:4 * c + 4].view(np.uint8), start[4 * c:4 * c + 4].view(np.uint8)
                want = before[:n] ^ (MUL[scalar][x & 15] | (MUL[scalar][x >> 4] << 4))
                assert (got[:n] == want).all(), (label, scalar)
                assert (got[n:] == before[n:]).all(), label       # the slot past the vector's chunks: untouched
            assert not tmp.any(), label                           # the flush leaves the scratch clear


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
    """(chunks, W, P1 upper triangular (v, v, m), P2 (v, o, m), and both in slots) at random."""
    chunks = (0,) * ((m + 31) // 32)
    W = 4 * ((m + 63) // 64)
    P1 = np.zeros((v, v, m), np.uint8)
    iu = np.triu_indices(v)
    P1[iu] = RNG.integers(0, 16, (len(iu[0]), m), dtype=np.uint8)
    P2 = RNG.integers(0, 16, (v, o, m), dtype=np.uint8)
    return chunks, W, P1, P2, encode_slots(np.concatenate([P1[iu], P2.reshape(v * o, m)]), W)


# vectors of whole 32-byte blocks (MAYO-2), ending in a 16-byte chunk (MAYO-1, MAYO-5), and padded
# within their last block (MAYO-3)
SIZES = [(64, 9, 5), (78, 7, 4), (142, 5, 3), (108, 5, 3)]


@pytest.mark.parametrize("m, v, o", SIZES)
def test_products_on_the_encoding_match_the_reference(m, v, o):
    chunks, W, P1, P2, slots = key_matrices(m, v, o)
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
    for name, forms, (public_key, expand) in runs_of(gn.public_key_from_slots, gn.expand_secret_slots):
        pk = np.zeros(len(expect_pk), np.uint8)
        public_key(slots.copy(), oil, v, o, chunks, forms, pk)
        assert (pk == expect_pk).all(), name
        expanded = slots.copy()
        expand(expanded, O, chunks, forms)
        assert (decode_slots(expanded, W, m)[e1:].reshape(v, o, m) == L).all()
        assert (expanded[:e1 * W] == slots[:e1 * W]).all()          # P1 untouched
        assert not expanded.reshape(-1, W).view(np.uint8)[:, m // 2:].any()   # padding stays zero


@pytest.mark.parametrize("name", MAYO_FILES)
@pytest.mark.parametrize("kernels", RUNNABLE)
def test_every_kernel_set_reproduces_the_official_vectors(name, kernels, monkeypatch):
    """The full KAT test runs on the set this CPU chooses; this one on each set it can run."""
    use_kernel_set(monkeypatch, kernels)
    official = list(mayo_entries(name)[:10])
    assert list(kat.signature_kat_entries(ALGORITHMS[name], 10)) == official


def _set_in_subprocess(value, **env_extra):
    env = dict(os.environ, **env_extra, **({sets.ENV: value} if value is not None else {}))
    if value is None:
        env.pop(sets.ENV, None)
    return subprocess.run([sys.executable, "-c", "from pqforge.gf16 import sets; print(sets.NAME)"],
                          env=env, capture_output=True, text=True)


def test_the_environment_chooses_the_kernel_set():
    assert _set_in_subprocess("portable").stdout.strip() == "portable"
    assert _set_in_subprocess(None).stdout.strip() == sets.runnable()[0]
    for name in sets.runnable():
        assert _set_in_subprocess(name.upper()).stdout.strip() == name
    typo = _set_in_subprocess("portabel")
    assert typo.returncode != 0
    assert "PQFORGE_KERNELS='portabel' names no kernel set; expected one of auto, gfni, avx2, neon, portable" in typo.stderr


def test_the_command_line_blames_the_environment_not_the_argument():
    env = dict(os.environ, PQFORGE_KERNELS="portabel")
    run = subprocess.run([sys.executable, "-c", "import sys; from pqforge.cli import main; sys.exit(main(sys.argv[1:]))",
                          "keygen", "--alg", "MAYO-2", "--out", os.devnull], env=env, capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.startswith("pqforge: error: PQFORGE_KERNELS='portabel' names no kernel set"), run.stderr
    assert "--alg" not in run.stderr


def test_a_set_the_cpu_cannot_run_is_a_clear_error():
    haswell = dict(NUMBA_CPU_NAME="haswell", NUMBA_CPU_FEATURES="+64bit,+avx,+avx2,+sse4.2")
    assert _set_in_subprocess(None, **haswell).stdout.strip() == "avx2"
    refused = _set_in_subprocess("gfni", **haswell)
    assert refused.returncode != 0
    assert "PQFORGE_KERNELS=gfni: this CPU lacks avx, gfni; it runs avx2, portable" in refused.stderr


@pytest.mark.skipif(architecture() != "x86_64", reason="x86-64 CPU names")
def test_a_cpu_target_without_avx2_gets_the_portable_kernels():
    assert _set_in_subprocess(None, NUMBA_CPU_NAME="generic").stdout.strip() == "portable"


def test_each_architecture_runs_its_own_sets_only():
    """neon on aarch64, gfni and avx2 on x86-64: a set of the other architecture is refused by name."""
    other = "gfni" if architecture() == "aarch64" else "neon"
    refused = _set_in_subprocess(other)
    assert refused.returncode != 0
    assert f"PQFORGE_KERNELS={other}: this CPU lacks" in refused.stderr, refused.stderr
    if architecture() == "aarch64":
        assert sets.runnable() == ("neon", "portable")
    else:
        assert "neon" not in sets.runnable()


@pytest.mark.parametrize("m, v, o, k", [size + (3,) for size in SIZES])
def test_signing_products_on_the_encoding_match_the_reference(m, v, o, k):
    chunks, W, P1, L, slots = key_matrices(m, v, o)
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
    for name, forms, (products,) in runs_of(gn.sign_products):
        Ms = np.zeros(k * o * W, np.uint64)
        Us = np.zeros(k * k * W, np.uint64)
        products(V, slots, o, chunks, forms, Ms, Us)
        assert (decode_slots(Ms, W, m).reshape(k, o, m) == M).all()
        assert (decode_slots(Us, W, m).reshape(k, k, m) == U).all()


@pytest.mark.parametrize("row_bytes", [39, 32, 54, 71, 5])     # the four sets' m/2; a row in one chunk
def test_the_keystream_lands_in_its_slots_with_zero_after_each_row(row_bytes):
    chunks = (0,) * -(-row_bytes // 16)
    W = 4 * ((len(chunks) + 1) // 2)
    count = 9
    stream = np.full(count * row_bytes + 15, 0xA5, np.uint8)      # the bytes past the last row must not show
    stream[:count * row_bytes] = RNG.integers(0, 256, count * row_bytes, dtype=np.uint8)
    for kernel in (layout.rows_to_slots, layout.keystream_to_slots):
        slots = RNG.integers(0, 2**63, count * W, dtype=np.uint64)  # whatever was there before
        kernel(stream, count, row_bytes, chunks, slots)
        got = slots.view(np.uint8).reshape(count, 8 * W)
        assert (got[:, :row_bytes] == stream[:count * row_bytes].reshape(count, row_bytes)).all(), kernel
        assert not got[:, row_bytes:].any(), kernel
