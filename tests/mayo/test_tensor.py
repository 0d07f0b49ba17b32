"""The GEMM formulation of the GF(16) products, with numpy doing the GEMMs (no GPU needed).

Checked against the official vectors and the single-instance API, and, product by product,
against an independent element-wise GF(16) evaluation.
"""

import numpy as np
import pytest

from pqforge import kat, mayo
from pqforge.drbg import NistCtrDrbg
from pqforge.gf16 import gf16_mul, unbitslice
from pqforge.mayo import tensor
from pqforge.mayo import scheme

from ..known_answers import MAYO_FILES as FILES, mayo_entries


def _mul_table():
    return np.array([[gf16_mul.py_func(a, b) for b in range(16)] for a in range(16)], np.uint8)


def test_left_products_match_elementwise_gf16():
    rng = np.random.default_rng(1)
    table = _mul_table()
    J, C, m = 7, 5, 70
    limbs = 2
    elems = rng.integers(0, 16, (J, C, m), dtype=np.uint8)
    from pqforge.gf16 import bitslice
    words = bitslice(elems, limbs)
    s = rng.integers(0, 16, (3, J), dtype=np.uint8)
    got = tensor.bits_to_elements(tensor.left_products(s, tensor.key_matrix(words, m), C, m, np), np)
    want = np.zeros((3, C, m), np.uint8)
    for r in range(3):
        for a in range(J):
            want[r] ^= table[s[r, a]][elems[a]]
    assert np.array_equal(got, want)


@pytest.mark.parametrize("name", FILES)
def test_tensor_verification_matches_official_vectors(name, kat_root):
    alg = mayo.ALGORITHMS[name]
    p = alg.params
    entries = mayo_entries(name)[:2]
    for e in entries:
        prepared = tensor.PreparedPublicKey(p, scheme.expand_pk(p, e["pk"]).P)
        sig = e["sm"][:p.sig_bytes]
        tampered = sig[:7] + bytes([sig[7] ^ 0x20]) + sig[8:]
        msgs = [e["msg"], e["msg"], e["msg"] + b"!"]
        got = tensor.verify_batch(p, prepared, msgs, [sig, tampered, sig])
        assert got.tolist() == [True, False, False]


@pytest.mark.parametrize("name", FILES)
def test_tensor_signing_equals_single_signatures(name):
    alg = mayo.ALGORITHMS[name]
    p = alg.params
    sk = alg.generate_private_key(rng=NistCtrDrbg(bytes(range(48))))
    esk = sk.expanded()
    prepared = tensor.PreparedSecretKey(p, esk.L, esk.P1)
    msgs = [b"", b"one", b"two" * 50]
    drbg = NistCtrDrbg(bytes(48))
    randomness = [drbg(p.salt_bytes) for _ in msgs]
    got = tensor.sign_batch(p, esk, prepared, msgs, randomness)
    ref = NistCtrDrbg(bytes(48))
    assert got == [sk.sign(msg, rng=ref) for msg in msgs]


def test_tensor_products_match_the_bitsliced_kernels():
    """M = V^T L and U = V^T P1 V, element for element, against the compiled kernels."""
    from pqforge.mayo import kernels
    p = mayo.MAYO1.params
    esk = mayo.MAYO1.generate_private_key().expanded()
    V = np.random.default_rng(2).integers(0, 16, (2, p.k, p.v), dtype=np.uint8)
    M, U = tensor.PreparedSecretKey(p, esk.L, esk.P1).products(V)
    for b in range(2):
        Vt = np.ascontiguousarray(V[b].T)
        Mk = np.zeros((p.k, p.o, p.words), np.uint64)
        kernels.mul_transposed(Vt, esk.L, False, Mk)
        assert np.array_equal(M[b], unbitslice(Mk, p.m))
        Ut = np.zeros((p.k, p.k, p.words), np.uint64)
        kernels.quadratic_pairs(V[b], esk.P1, Ut)
        assert np.array_equal(U[b], unbitslice(Ut, p.m))


@pytest.mark.parametrize("name", FILES)
def test_whip_as_binary_maps_matches_the_whip_kernel(name):
    """y = sum_ell z^ell (U[i, j] + U[j, i]) mod f(z) through the two GEMM maps, against kernels.whip."""
    from pqforge.gf16 import bitslice
    from pqforge.mayo import kernels
    p = mayo.ALGORITHMS[name].params
    rng = np.random.default_rng(3)
    R = 5
    U = rng.integers(0, 16, (R, p.k, p.k, p.m), dtype=np.uint8)
    # the pair-product layout [r, i, e, q, j] = bit q of U[r, i, j][e]
    U_bits = ((U[..., None] >> np.arange(4)) & 1).transpose(0, 1, 3, 4, 2).astype(np.float32)
    Z, F = tensor.whip_matrices(p)
    y = tensor.bits_to_elements(tensor.whip_bits(U_bits, Z, F, np).reshape(R, 4, p.m), np)
    f_tail = np.array(p.f_tail, np.int64)
    for r in range(R):
        want = np.zeros(p.m, np.uint8)
        kernels.whip(bitslice(U[r], p.limbs), np.zeros((p.k, 0, p.words), np.uint64), p.m, f_tail, want,
                     np.zeros((p.m, 0), np.uint8))
        assert np.array_equal(y[r], want)


def test_pair_products_and_words_match_the_bitsliced_kernels():
    """U[i, j] = s_i^T P s_j from the verification key matrix, and the signing words, against the kernels."""
    from pqforge.gf16 import bitslice
    from pqforge.mayo import kernels
    p = mayo.MAYO2.params
    sk = mayo.MAYO2.generate_private_key()
    P = sk.public_key().expanded().P
    S = np.random.default_rng(4).integers(0, 16, (3, p.k, p.n), dtype=np.uint8)
    U = tensor.PreparedPublicKey(p, P).evaluate(S)
    for r in range(3):
        want = np.zeros((p.k, p.k, p.words), np.uint64)
        kernels.quadratic_pairs(S[r], P, want)
        assert np.array_equal(U[r], unbitslice(want, p.m))
    esk = sk.expanded()
    prepared = tensor.PreparedSecretKey(p, esk.L, esk.P1)
    V = S[:, :, :p.v].copy()
    M, U = prepared.products(V)
    Mw, Uw = prepared.words(V)
    assert np.array_equal(Mw, bitslice(M, p.limbs)) and np.array_equal(Uw, bitslice(U, p.limbs))


def test_pipelined_chunks_keep_the_order_and_the_bytes():
    """Several chunks in flight (hashing of one overlapping the tail of the previous) and one thread."""
    alg = mayo.MAYO2
    p = alg.params
    sk = alg.generate_private_key(rng=NistCtrDrbg(bytes(range(1, 49))))
    esk = sk.expanded()
    prepared = tensor.PreparedSecretKey(p, esk.L, esk.P1)
    msgs = [bytes([i]) * i for i in range(7)]
    drbg = NistCtrDrbg(bytes(48))
    randomness = [drbg(p.salt_bytes) for _ in msgs]
    ref = NistCtrDrbg(bytes(48))
    want = [sk.sign(msg, rng=ref) for msg in msgs]
    assert tensor.sign_batch(p, esk, prepared, msgs, randomness, chunk=2) == want
    assert tensor.sign_chunk(p, esk, prepared, msgs, randomness, threads=1) == want


def test_pipelined_chunks_use_at_most_the_threads_asked_for(monkeypatch):
    """One chunk's tail starts only after the previous chunk is collected, so a pool larger
    than ``threads`` (here 8 workers) never runs more than ``threads`` tails at once."""
    import threading
    import time
    from pqforge.mayo.engine import pool
    from pqforge.mayo import batch_data
    monkeypatch.setattr(pool, "cpu_threads", lambda: 8)
    alg = mayo.MAYO2
    p = alg.params
    esk = alg.generate_private_key(rng=NistCtrDrbg(bytes(range(2, 50)))).expanded()
    prepared = tensor.PreparedSecretKey(p, esk.L, esk.P1)
    msgs = [bytes([i]) for i in range(16)]
    randomness = [bytes([i]) * p.salt_bytes for i in range(16)]
    running, most, lock = [0], [0], threading.Lock()
    finish = tensor._finish_chunk

    def counted(*args):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.01)
        finish(*args)
        with lock:
            running[0] -= 1

    monkeypatch.setattr(tensor, "_finish_chunk", counted)
    with pool._lock:
        pool._executor(8)
    sigs = tensor.sign_batch(p, esk, prepared, msgs, randomness, chunk=4, threads=2)
    assert 1 <= most[0] <= 2
    assert sigs == [scheme.sign(p, esk, m, batch_data.replay(r)) for m, r in zip(msgs, randomness)]
