"""Every compiled kernel equals its plain-Python twin, and both equal a GF(16) reference."""

import numpy as np
import pytest

from pqforge.gf16 import bitslice, unbitslice
from pqforge.gf16 import kernels as gk
from pqforge.mayo import kernels as mk

from ..twins import pure

RNG = np.random.default_rng(2026)


def ref_mul(a, b):
    """Schoolbook GF(16) product, written independently of the kernels."""
    r = 0
    for i in range(4):
        if (a >> i) & 1:
            r ^= b << i
    for d in (6, 5, 4):
        if (r >> d) & 1:
            r ^= 0b10011 << (d - 4)
    return r


MUL = np.array([[ref_mul(a, b) for b in range(16)] for a in range(16)], np.uint8)


def ref_matmul(X, Y):
    """GF(16) matrix product of element arrays."""
    out = np.zeros((X.shape[0], Y.shape[1]), np.uint8)
    for j in range(X.shape[1]):
        out ^= MUL[X[:, j][:, None], Y[j, :][None, :]]
    return out


def elements(*shape):
    return RNG.integers(0, 16, shape, dtype=np.uint8)


def test_scalar_kernels_match_twins_and_reference():
    for a in range(16):
        assert gk.gf16_inv(a) == pure(gk.gf16_inv)(a)
        for b in range(16):
            assert gk.gf16_mul(a, b) == pure(gk.gf16_mul)(a, b) == MUL[a, b]
    for v in (0, 1, 2, 2**63, 2**64 - 1, 12345):
        expect = 0 if v == 0 else 2**64 - 1
        assert gk.nonzero_mask(np.uint64(v)) == pure(gk.nonzero_mask)(np.uint64(v)) == expect


@pytest.mark.parametrize("m", [64, 78, 142])
def test_mul_add_scalar(m):
    limbs = (m + 63) // 64
    a = elements(m)
    for s in range(16):
        acc_c = np.zeros(4 * limbs, np.uint64)
        acc_p = acc_c.copy()
        gk.mul_add_scalar(acc_c, bitslice(a, limbs), s, limbs)
        pure(gk.mul_add_scalar)(acc_p, bitslice(a, limbs), s, limbs)
        assert np.array_equal(acc_c, acc_p)
        assert np.array_equal(unbitslice(acc_c, m), MUL[s, a])


def mvec_matrix(rows, cols, m):
    el = elements(rows, cols, m)
    return el, bitslice(el, (m + 63) // 64)


@pytest.mark.parametrize("suffix", [False, True])
@pytest.mark.parametrize("m", [64, 142])
def test_mul_transposed(suffix, m):
    J, C, R = 6, 6, 4
    limbs = (m + 63) // 64
    el = elements(J, C, m)
    if suffix:
        el = el * np.triu(np.ones((J, C), np.uint8))[:, :, None]
    A = bitslice(el, limbs)
    B = elements(J, R)
    outs = []
    for fn in (mk.mul_transposed, pure(mk.mul_transposed)):
        out = np.zeros((R, C, 4 * limbs), np.uint64)
        fn(B, A, suffix, out)
        outs.append(out)
    assert np.array_equal(outs[0], outs[1])
    got = unbitslice(outs[0], m)
    for e in range(m):   # coordinate by coordinate it is an ordinary GF(16) matrix product
        assert np.array_equal(got[:, :, e], ref_matmul(B.T, el[:, :, e]))


@pytest.mark.parametrize("m", [64, 78, 108, 142])
def test_nibble_decoding_matches_reference(m):
    limbs = (m + 63) // 64
    el = elements(9, m)
    nibbles = (el[:, 0::2] | (el[:, 1::2] << 4)).astype(np.uint8)    # the specification's encoding
    words = gk.bitslice_nibble_rows(nibbles.tobytes(), 9, m // 2, limbs)
    assert np.array_equal(words, bitslice(el, limbs))
    stream = np.zeros((9 * m // 2 + 31) // 32 * 4 + 4, np.uint64)
    stream.view(np.uint8)[:nibbles.size] = nibbles.ravel()
    twin, compiled = np.empty_like(words), np.empty_like(words)
    gk.bitslice_stream(stream, m, compiled)
    pure(gk.bitslice_stream)(stream, m, twin)
    assert np.array_equal(twin, words) and np.array_equal(compiled, words)


def packed_upper(size, m):
    """A random upper-triangular m-vector matrix: dense elements and the packed bitsliced form."""
    el = elements(size, size, m) * np.triu(np.ones((size, size), np.uint8))[:, :, None]
    return el, bitslice(el[np.triu_indices(size)], (m + 63) // 64)


@pytest.mark.parametrize("size", [5, 8, 11])
def test_mul_transposed_packed(size):
    m, R = 78, 3
    el, Ap = packed_upper(size, m)
    B = elements(size, R)
    outs = []
    for fn in (mk.mul_transposed_packed, pure(mk.mul_transposed_packed)):
        out = np.zeros((R, size, 8), np.uint64)
        fn(B, Ap, out)
        outs.append(out)
    assert np.array_equal(outs[0], outs[1])
    got = unbitslice(outs[0], m)
    for e in range(m):
        assert np.array_equal(got[:, :, e], ref_matmul(B.T, el[:, :, e]))


@pytest.mark.parametrize("size", [5, 8, 11])
def test_mul_packed_rows(size):
    m, C = 64, 3
    el, Ap = packed_upper(size, m)
    B = elements(size, C)
    outs = []
    for fn in (mk.mul_packed_rows, pure(mk.mul_packed_rows)):
        out = np.zeros((size, C, 4), np.uint64)
        fn(Ap, B, out)
        outs.append(out)
    assert np.array_equal(outs[0], outs[1])
    got = unbitslice(outs[0], m)
    for e in range(m):
        assert np.array_equal(got[:, :, e], ref_matmul(el[:, :, e], B))


def encoded(el):
    """The byte encoding of m-vectors (..., m) elements: m/2 bytes each, low nibble first."""
    return (el[..., 0::2] | (el[..., 1::2] << 4)).astype(np.uint8)


def nibble_slots(entries, W):
    """m-vectors (E, m) elements as verification's nibble form: each encoding in a W-word slot."""
    out = np.zeros((entries.shape[0], W), np.uint64)
    out.view(np.uint8)[:, :entries.shape[1] // 2] = encoded(entries)
    return out


@pytest.mark.parametrize("m", [64, 78])
def test_public_key_assembly_from_encodings_and_its_bitsliced_form(m):
    from pqforge.mayo.params import MayoParams
    from pqforge.mayo.scheme import decode_epk
    v, o = 5, 3
    n = v + o
    p = MayoParams("test", n=n, m=m, o=o, k=2, f_tail=(8, 0, 2, 8), salt_bytes=24, digest_bytes=32,
                   pk_seed_bytes=16, sk_seed_bytes=24)
    el1, _ = packed_upper(v, m)
    el3, _ = packed_upper(o, m)
    el2 = elements(v, o, m)
    P12 = encoded(el1[np.triu_indices(v)]).tobytes() + encoded(el2).tobytes()
    epk = decode_epk(p, P12 + encoded(el3[np.triu_indices(o)]).tobytes())
    full = np.zeros((n, n, m), np.uint8)
    full[:v, :v], full[:v, v:], full[v:, v:] = el1, el2, el3
    assert np.array_equal(epk.nibbles, nibble_slots(full[np.triu_indices(n)], p.words))
    assert np.array_equal(unbitslice(epk.P, m), full[np.triu_indices(n)])


def ref_whip(U, M, m, tail):
    """The whipped sums with explicit polynomial arithmetic modulo z^m + tail(z)."""
    k, o = U.shape[0], M.shape[1]

    def times_z_pow(vec, ell):
        vec = list(vec)
        for _ in range(ell):
            top = vec[-1]
            vec = [0] + vec[:-1]
            for t in range(4):
                vec[t] ^= ref_mul(top, tail[t])
        return np.array(vec, np.uint8)

    y = np.zeros(m, np.uint8)
    A = np.zeros((m, k * o), np.uint8)
    ell = 0
    for i in range(k):
        for j in range(k - 1, i - 1, -1):
            u = U[i, j] ^ (U[j, i] if i != j else 0)
            y ^= times_z_pow(u, ell)
            for c in range(o):
                A[:, i * o + c] ^= times_z_pow(M[j, c], ell)
                if i != j:
                    A[:, j * o + c] ^= times_z_pow(M[i, c], ell)
            ell += 1
    return y, A


def test_whip():
    m, k, o, tail = 64, 4, 3, (8, 0, 2, 8)
    Uel, Mel = elements(k, k, m), elements(k, o, m)
    U, M = bitslice(Uel, 1), bitslice(Mel, 1)
    outs = []
    for fn in (mk.whip, pure(mk.whip)):
        y, A = np.zeros(m, np.uint8), np.zeros((m, k * o), np.uint8)
        fn(U, M, m, np.array(tail, np.int64), y, A)
        outs.append((y, A))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])
    y_ref, A_ref = ref_whip(Uel, Mel, m, tail)
    assert np.array_equal(outs[0][0], y_ref) and np.array_equal(outs[0][1], A_ref)


@pytest.mark.parametrize("m,ko", [(6, 9), (10, 12), (8, 8)])
def test_sample_solution(m, ko):
    for trial in range(20):
        A = elements(m, ko)
        if trial % 5 == 0:
            A[m - 1] = A[0]          # rank-deficient systems must be reported as failures
        y, r = elements(m), elements(ko)
        x_c, x_p = np.zeros(ko, np.uint8), np.zeros(ko, np.uint8)
        ok_c = mk.sample_solution(A, y, r, x_c)
        ok_p = pure(mk.sample_solution)(A, y, r, x_p)
        assert ok_c == ok_p
        if ok_c:
            assert np.array_equal(x_c, x_p)
            assert np.array_equal(ref_matmul(A, x_c[:, None])[:, 0], y)
        if trial % 5 == 0:
            assert not ok_c


def test_assemble_signature():
    k, v, o, n = 3, 5, 2, 7
    V, O, x = elements(k, v), elements(v, o), elements(k * o)
    s_c, s_p = np.zeros(k * n, np.uint8), np.zeros(k * n, np.uint8)
    mk.assemble_signature(V, O, x, n, s_c)
    pure(mk.assemble_signature)(V, O, x, n, s_p)
    assert np.array_equal(s_c, s_p)
    for i in range(k):
        xi = x[i * o:(i + 1) * o]
        assert np.array_equal(s_c[i * n:i * n + v], V[i] ^ ref_matmul(O, xi[:, None])[:, 0])
        assert np.array_equal(s_c[i * n + v:(i + 1) * n], xi)


def test_bitslice_round_trip():
    for m in (1, 63, 64, 65, 142):
        el = elements(5, m)
        w = bitslice(el, (m + 63) // 64)
        assert np.array_equal(unbitslice(w, m), el)
        out = np.zeros(m, np.uint8)
        mk.unbitslice_into(w[2], m, out)
        assert np.array_equal(out, el[2])


def test_quadratic_pairs_and_public_evaluation():
    m, size, k, tail = 64, 7, 3, (8, 0, 2, 8)
    el, Pp = packed_upper(size, m)
    S = elements(k, size)
    outs = []
    for fn in (mk.quadratic_pairs, pure(mk.quadratic_pairs)):
        U = np.zeros((k, k, 4), np.uint64)
        fn(S, Pp, U)
        outs.append(U)
    assert np.array_equal(outs[0], outs[1])
    got = unbitslice(outs[0], m)
    for e in range(m):
        assert np.array_equal(got[:, :, e], ref_matmul(ref_matmul(S, el[:, :, e]), S.T))
    for fn in (mk.public_pairs, pure(mk.public_pairs)):     # the bucket kernel of verification
        U = np.zeros((k, k, 4), np.uint64)
        fn(S, Pp, U)
        assert np.array_equal(U, outs[0])
    Pn = nibble_slots(el[np.triu_indices(size)], 4)          # the same on the byte encoding
    for fn in (mk.public_pairs_nibbles, pure(mk.public_pairs_nibbles)):
        U = np.zeros((k, k, 4), np.uint64)
        fn(S, Pn, U)
        assert np.array_equal(U, nibble_slots(got.reshape(k * k, m), 4).reshape(k, k, 4))
    y_ref, _ = ref_whip(got, np.zeros((k, 0, m), np.uint8), m, tail)
    for fn in (mk.evaluate_public_sized, pure(mk.evaluate_public_sized)):   # size and form as types
        for P, nibbles in ((Pn, (0,)), (Pp, ())):
            y = np.ones(m, np.uint8)                                          # overwritten
            fn(S, P, (0,), nibbles, np.array(tail, np.int64), y, mk.verify_units())
            assert np.array_equal(y, y_ref)
    with pytest.raises(ValueError, match="4 \\* len\\(limbs\\) words"):   # P's size is checked against limbs
        mk.evaluate_public_sized(S, Pp, (0, 0), (), np.array(tail, np.int64), np.zeros(m, np.uint8), mk.verify_units())


@pytest.mark.parametrize("limbs", [1, 2, 3, 4])
def test_public_pairs_equals_the_masked_kernel_at_every_vector_size(limbs):
    # 1-3 limbs run the bucket kernel specialised per size, 4 falls back to the masked kernel
    rng = np.random.default_rng(limbs)
    k, size, W = 5, 11, 4 * limbs
    P = rng.integers(0, 2**63, (size * (size + 1) // 2, W), dtype=np.uint64)
    X = rng.integers(0, 16, (k, size), dtype=np.uint8)
    want, got = np.zeros((k, k, W), np.uint64), np.ones((k, k, W), np.uint64)
    mk.quadratic_pairs(X, P, want)
    mk.public_pairs(X, P, got)
    assert np.array_equal(got, want)


def test_public_pairs_rejects_shapes_its_unchecked_bucket_writes_rely_on():
    X = np.zeros((3, 5), np.uint8)
    P = np.zeros((15, 4), np.uint64)
    with pytest.raises(ValueError, match="packed"):
        mk.public_pairs(X, P[:14], np.zeros((3, 3, 4), np.uint64))
    with pytest.raises(ValueError, match=r"\(k, k, W\)"):
        mk.public_pairs(X, P, np.zeros((2, 3, 4), np.uint64))


def test_sign_attempt_solves_the_whipped_system():
    m, v, o, k, tail = 64, 8, 17, 4, (8, 0, 2, 8)      # MAYO-2's m, o, k and f; a short v
    _, P1 = packed_upper(v, m)
    Lel = elements(v, o, m)
    L = bitslice(Lel, 1)
    V, r, t = elements(k, v), elements(k * o), elements(m)
    f = np.array(tail, np.int64)
    x_c, x_p = np.zeros(k * o, np.uint8), np.zeros(k * o, np.uint8)
    ok_c = mk.sign_attempt(V, r, P1, L, t, f, x_c, mk.units())
    ok_p = pure(mk.sign_attempt)(V, r, P1, L, t, f, x_p, mk.units())
    assert ok_c and ok_p and np.array_equal(x_c, x_p)   # a random 64 x 68 system has full rank
    # the same system built independently: A x must equal t - y(V)
    U = np.zeros((k, k, 4), np.uint64)
    mk.quadratic_pairs(V, P1, U)
    M = np.zeros((k, o, m), np.uint8)
    for i in range(k):
        for c in range(o):
            M[i, c] = np.bitwise_xor.reduce(MUL[V[i][:, None], Lel[:, c, :]], axis=0)
    y_ref, A_ref = ref_whip(unbitslice(U, m), M, m, tail)
    assert np.array_equal(ref_matmul(A_ref, x_c[:, None])[:, 0], t ^ y_ref)
