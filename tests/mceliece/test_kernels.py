"""Every compiled kernel against its plain-Python twin (``kernel.py_func``) on random inputs,
plus checks of the arithmetic against definitions written out here."""

import warnings

import numpy as np
import pytest
from numba import njit

from pqforge.mceliece import benes, decode, fft, gf, matrix
from pqforge.mceliece.params import PARAMS

P12 = PARAMS["Classic-McEliece-348864"]
P13 = PARAMS["Classic-McEliece-460896"]
FIELDS = [(12, gf.field_poly(P12), P12.field_taps_array), (13, gf.field_poly(P13), P13.field_taps_array)]


@pytest.fixture(autouse=True)
def _quiet_numpy_overflow():
    # the twins run int64 wrap-around arithmetic on numpy scalars, which numpy reports
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with np.errstate(over="ignore"):
            yield


@pytest.fixture
def rng():
    return np.random.default_rng(2024)


def _clmul_mod(a, b, m, poly):
    # carry-less product then long division by the field polynomial: the textbook definition
    r = 0
    for i in range(m):
        if (b >> i) & 1:
            r ^= a << i
    for i in range(2 * m - 2, m - 1, -1):
        if (r >> i) & 1:
            r ^= poly << (i - m)
    return r


@pytest.mark.parametrize("m,poly,taps", FIELDS)
def test_scalar_field(rng, m, poly, taps):
    for a, b in rng.integers(0, 1 << m, (200, 2)):
        a, b = int(a), int(b)
        want = _clmul_mod(a, b, m, poly)
        assert gf.gf_mul(a, b, m, poly) == want == gf.gf_mul.py_func(a, b, m, poly)
        if a:
            inv = gf.gf_inv(a, m, poly)
            assert inv == gf.gf_inv.py_func(a, m, poly)
            assert _clmul_mod(a, inv, m, poly) == 1


def test_every_parameter_set_uses_the_field_polynomial_of_the_block_products():
    for p in PARAMS.values():
        assert tuple(p.field_taps) == gf.FIELD_TAPS[p.m], p.name


@pytest.mark.parametrize("m,poly,taps", FIELDS)
def test_bitsliced_products_in_blocks_and_the_words_after_them(rng, m, poly, taps):
    # 19 words: whole blocks of gf.BLOCK (8 or 4 words) through the vector-register product, 3 plane by plane
    n = 19 * 64
    a = rng.integers(0, 1 << m, n)
    b = rng.integers(0, 1 << m, n)
    A = gf.vec_from_scalars(a, m, 19)
    B = gf.vec_from_scalars(b, m, 19)
    want = [_clmul_mod(int(x), int(y), m, poly) for x, y in zip(a, b)]
    out = np.empty_like(A)
    gf.vec_mul(out, A, B, m, taps)
    assert list(gf.vec_to_scalars(out, n)) == want
    twin = np.empty_like(A)
    gf.vec_mul.py_func(twin, A, B, m, taps)          # the twin of the block product: numpy
    assert np.array_equal(twin, out)
    aliased = A.copy()
    gf.vec_mul(aliased, aliased, B, m, taps)         # out may be an input
    assert np.array_equal(aliased, out)
    other_order = np.empty_like(A)                   # the same polynomial, taps in another order:
    gf.vec_mul(other_order, A, B, m, taps[::-1].copy())      # every word plane by plane
    assert np.array_equal(other_order, out)
    # squares the same way: whole blocks through square_block, 3 words plane by plane
    square = np.empty_like(A)
    gf.vec_square(square, A, m, taps)
    assert list(gf.vec_to_scalars(square, n)) == [_clmul_mod(int(x), int(x), m, poly) for x in a]
    twin = np.empty_like(A)
    gf.vec_square.py_func(twin, A, m, taps)
    assert np.array_equal(twin, square)
    aliased = A.copy()
    gf.vec_square(aliased, aliased, m, taps)
    assert np.array_equal(aliased, square)
    gf.vec_square(other_order, A, m, taps[::-1].copy())
    assert np.array_equal(other_order, square)


@pytest.mark.parametrize("m,poly,taps", FIELDS)
def test_inverse_square(rng, m, poly, taps):
    words = 16                                         # whole blocks: the chain in vector registers
    n = words * 64
    a = rng.integers(0, 1 << m, n)
    a[:3] = 0                                          # 0 maps to 0
    A = gf.vec_from_scalars(a, m, words)
    out = np.empty_like(A)
    gf.vec_inverse_square(out, A, m, taps)
    got = gf.vec_to_scalars(out, n)
    assert list(got[:3]) == [0, 0, 0]
    for x, y in zip(a[3:], got[3:]):                   # y x^2 = 1
        assert _clmul_mod(int(y), _clmul_mod(int(x), int(x), m, poly), m, poly) == 1
    twin = np.empty_like(A)
    gf.vec_inverse_square.py_func(twin, A, m, taps)    # the Python chain on the blocks
    assert np.array_equal(twin, out)
    aliased = A.copy()
    gf.vec_inverse_square(aliased, aliased, m, taps)
    assert np.array_equal(aliased, out)
    partial = A[:, :10].copy()                         # not whole blocks (of 8 or 4): refused, not half done
    with pytest.raises(ValueError, match="whole blocks"):
        gf.vec_inverse_square(np.empty_like(partial), partial, m, taps)
    with pytest.raises(ValueError, match="FIELD_TAPS"):
        gf.vec_inverse_square(out, A, m, taps[::-1].copy())


@pytest.mark.parametrize("m,poly,taps", FIELDS)
def test_bitsliced_mul_inv_eval(rng, m, poly, taps):
    n = 150
    W = (n + 63) // 64
    a = rng.integers(1, 1 << m, n)
    b = rng.integers(0, 1 << m, n)
    A = gf.vec_from_scalars(a, m, W)
    B = gf.vec_from_scalars(b, m, W)
    assert np.array_equal(A, gf.vec_from_scalars.py_func(a, m, W))
    assert np.array_equal(gf.vec_to_scalars(A, n), a)
    assert np.array_equal(gf.vec_to_scalars.py_func(A, n), a)
    out, out2 = np.empty_like(A), np.empty_like(A)
    gf.vec_mul(out, A, B, m, taps)
    gf.vec_mul.py_func(out2, A, B, m, taps)
    assert np.array_equal(out, out2)
    assert list(gf.vec_to_scalars(out, n)) == [_clmul_mod(int(x), int(y), m, poly) for x, y in zip(a, b)]
    sq, sq2 = np.empty_like(A), np.empty_like(A)
    gf.vec_square(sq, A, m, taps)
    gf.vec_square.py_func(sq2, A, m, taps)
    assert np.array_equal(sq, sq2)
    assert list(gf.vec_to_scalars(sq, n)) == [_clmul_mod(int(x), int(x), m, poly) for x in a]
    inv = gf.vec_inv(A, m, taps)
    assert np.array_equal(inv, gf.vec_inv.py_func(A, m, taps))
    assert all(_clmul_mod(int(x), int(y), m, poly) == 1 for x, y in zip(a, gf.vec_to_scalars(inv, n)))
    c = A.copy()
    gf.vec_add_scalar(c, 5, m)
    c2 = A.copy()
    gf.vec_add_scalar.py_func(c2, 5, m)
    assert np.array_equal(c, c2)
    coeffs = rng.integers(0, 1 << m, 6)
    ev = gf.vec_eval(coeffs, A, m, taps)
    assert np.array_equal(ev, gf.vec_eval.py_func(coeffs, A, m, taps))
    for x, y in zip(a[:20], gf.vec_to_scalars(ev, 20)):
        acc = 0
        for cf in coeffs[::-1]:
            acc = _clmul_mod(acc, int(x), m, poly) ^ int(cf)
        assert acc == y
    T = gf.vec_times_z_table(B, m, taps)
    assert np.array_equal(T, gf.vec_times_z_table.py_func(B, m, taps))
    o3, o4 = np.empty_like(A), np.empty_like(A)
    gf.vec_mul_table(o3, A, T)
    gf.vec_mul_table.py_func(o4, A, T)
    assert np.array_equal(o3, out) and np.array_equal(o4, out)
    assert np.array_equal(gf.vec_eval_table(coeffs, gf.vec_times_z_table(A, m, taps), m), ev)
    assert np.array_equal(gf.vec_eval_table.py_func(coeffs, gf.vec_times_z_table(A, m, taps), m), ev)


def test_parity_and_popcount(rng):
    for x in rng.integers(-(1 << 63), (1 << 63) - 1, 50, dtype=np.int64):
        bits = bin(int(x) & ((1 << 64) - 1)).count("1")
        assert gf.parity64(x) == gf.parity64.py_func(x) == bits % 2
        assert decode._popcount64(x) == decode._popcount64.py_func(x) == bits


@pytest.mark.parametrize("m,poly,taps", FIELDS)
def test_poly_ring_and_genpoly(rng, m, poly, taps):
    t = 8
    ptaps = np.array([3, 1, 0])          # a small ring y^8 + y^3 + y + z, shaped like 348864's
    a = rng.integers(0, 1 << m, t)
    b = rng.integers(0, 1 << m, t)
    prod = gf.poly_mulmod(a, b, m, poly, ptaps, True)
    assert np.array_equal(prod, gf.poly_mulmod.py_func(a, b, m, poly, ptaps, True))
    ok, g = gf.genpoly(a, m, poly, ptaps, True)
    ok2, g2 = gf.genpoly.py_func(a, m, poly, ptaps, True)
    assert ok == ok2 and np.array_equal(g, g2)
    if ok:
        # g(a) = 0 in the ring: a^t + sum g_i a^i
        acc = np.zeros(t, dtype=np.int64)
        power = np.zeros(t, dtype=np.int64)
        power[0] = 1
        for i in range(t + 1):
            coeff = 1 if i == t else int(g[i])
            acc ^= np.array([_clmul_mod(int(x), coeff, m, poly) for x in power])
            power = gf.poly_mulmod(power, a, m, poly, ptaps, True)
        assert not acc.any()


def test_berlekamp_massey_refuses_what_its_intrinsics_do_not_cover():
    s = np.zeros(12, dtype=np.int64)
    # GF(2^11), another polynomial, t too large for GF(2^12) (no set has one), t too large
    for args in ((6, 11, 0x805), (6, 12, 0x1053), (130, 12, 0x1009), (300, 13, 0x201B)):
        with pytest.raises(ValueError, match="Classic McEliece"):
            gf.berlekamp_massey(np.zeros(2 * args[0], dtype=np.int64), *args)


# both parities of t (two per word); polynomials in two words per plane for t < 128, in four
# from 128 on (GF(2^13), t < 256)
@pytest.mark.parametrize("m,poly,taps,t,errors",
                         [(*field, t, errors) for field in FIELDS for t, errors in ((6, 6), (7, 7), (7, 5), (64, 64))]
                         + [(*FIELDS[1], 130, 130), (*FIELDS[1], 130, 97)])
def test_berlekamp_massey_finds_error_positions(rng, m, poly, taps, t, errors):
    n = 300
    L = rng.choice(np.arange(1, 1 << m), n, replace=False)   # no 0: with fewer errors than t, 0 is a root
    pos = rng.choice(n, errors, replace=False)
    s = np.zeros(2 * t, dtype=np.int64)
    for i in pos:
        p = 1
        for j in range(2 * t):                               # s_j = sum over errors of L_i^j
            s[j] ^= p
            p = _clmul_mod(p, int(L[i]), m, poly)
    loc = gf.berlekamp_massey(s, t, m, poly)
    assert np.array_equal(loc, gf.berlekamp_massey.py_func(s, t, m, poly))
    roots = set()
    for i, x in enumerate(L):
        acc = 0
        for cf in loc[::-1]:
            acc = _clmul_mod(acc, int(x), m, poly) ^ int(cf)
        if acc == 0:
            roots.add(i)
    assert roots == set(int(i) for i in pos)


def test_sort_network(rng):
    for n in (1, 2, 16, 256):
        a = rng.integers(0, 1 << 40, n)
        b, c = a.copy(), a.copy()
        benes.sort_network(b)
        benes.sort_network.py_func(c)
        assert np.array_equal(b, np.sort(a)) and np.array_equal(c, b)


@pytest.mark.parametrize("m", [4, 5, 6, 7, 8, 12])
def test_control_bits_realise_the_permutation(rng, m):
    N = 1 << m
    pi = rng.permutation(N).astype(np.int64)
    cb = benes.control_bits(pi, m)
    if m <= 7:
        assert np.array_equal(cb, benes.control_bits.py_func(pi, m))
    assert cb.shape[0] == (2 * m - 1) * N // 16
    # the network maps the sequence bitrev(i) to bitrev(pi[i])
    rev = np.array([benes._bitrev_bits(int(x), m) for x in pi])
    if m >= 7:                           # the bitsliced network needs whole words per layer
        cond = cb.view(np.int64)
        base = benes.bitrev_planes(m)
        assert np.array_equal(base, benes.bitrev_planes.py_func(m))
        support = benes.support_from_control_bits(cond, m, N - 24, base)
        assert np.array_equal(gf.vec_to_scalars(support, N - 24), rev[:N - 24])
        assert np.array_equal(support, benes.support_from_control_bits.py_func(cond, m, N - 24, base))
        planes = gf.vec_from_scalars(rng.integers(0, 1 << 9, N), 9, N // 64)
        p1, p2 = planes.copy(), planes.copy()
        benes.apply_benes(p1, cond, m)
        benes.apply_benes.py_func(p2, cond, m)
        assert np.array_equal(p1, p2)


@pytest.mark.parametrize("w", [3, 11])
def test_layer_step_twin(rng, w):
    n = 1 << w
    pi = rng.permutation(n).astype(np.int64)
    outs = []
    for fn in (benes._layer_step, benes._layer_step.py_func):
        out = np.zeros((2 * w - 1) * n // 16 + 1, dtype=np.uint8)
        q = np.empty(n, dtype=np.int64)
        fn(out, 0, 1, pi, w, n, q)
        outs.append((out, q))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])
    assert sorted(outs[0][1][:n // 2]) == list(range(n // 2))


def test_small_bit_functions(rng):
    for x in rng.integers(1, 1 << 62, 30, dtype=np.int64):
        assert matrix._ctz64(x) == matrix._ctz64.py_func(x) == (int(x) & -int(x)).bit_length() - 1
    for s in range(6):
        c = int(rng.integers(0, 1 << 32))
        spread = benes._spread32(c, s)
        assert spread == benes._spread32.py_func(c, s)
        positions = [x for x in range(64) if not (x >> s) & 1]
        assert spread == sum(((c >> i) & 1) << x for i, x in enumerate(positions))
    for a, b in rng.integers(0, 9000, (30, 2)):
        assert matrix._eq_mask(a, b) == matrix._eq_mask.py_func(a, b) == (-1 if a == b else 0)
    for x in list(rng.integers(0, 1 << 40, 20)) + [0]:
        assert gf._nonzero_mask(x) == gf._nonzero_mask.py_func(x) == (-1 if x else 0)
    for desc in (0, -1):
        for x, y in rng.integers(-1000, 1000, (10, 2)):
            a1 = np.array([x, y], dtype=np.int64)
            a2 = a1.copy()
            benes._exchange(a1, 0, 1, desc, 0)
            benes._exchange.py_func(a2, 0, 1, desc, 0)
            assert np.array_equal(a1, a2) and list(a1) == sorted([x, y], reverse=bool(desc))
            assert benes._ct_min(x, y, 0) == benes._ct_min.py_func(x, y, 0) == min(x, y)
    lo, hi = rng.integers(0, 100, 9), rng.integers(0, 100, 9)
    for desc in (0, -1):
        l1, h1, l2, h2 = lo.copy(), hi.copy(), lo.copy(), hi.copy()
        benes._exchange_halves(l1, h1, desc, 0)
        benes._exchange_halves.py_func(l2, h2, desc, 0)
        assert np.array_equal(l1, l2) and np.array_equal(h1, h2)
        assert np.array_equal(l1, np.maximum(lo, hi) if desc else np.minimum(lo, hi))
    dst, src = rng.integers(-(1 << 62), 1 << 62, (2, 7), dtype=np.int64)
    for mask in (0, -1):
        d1, d2 = dst.copy(), dst.copy()
        matrix._add_masked(d1, src, mask)
        matrix._add_masked.py_func(d2, src, mask)
        assert np.array_equal(d1, d2) and np.array_equal(d1, dst ^ (src & mask))
    x0, y0, mk = rng.integers(-(1 << 62), 1 << 62, (3, 5), dtype=np.int64)
    x1, y1, x2, y2 = x0.copy(), y0.copy(), x0.copy(), y0.copy()
    benes._swap_masked(x1, y1, mk)
    benes._swap_masked.py_func(x2, y2, mk)
    assert np.array_equal(x1, x2) and np.array_equal(y1, y2)
    assert np.array_equal(x1, (x0 & ~mk) | (y0 & mk)) and np.array_equal(y1, (y0 & ~mk) | (x0 & mk))
    for x in range(40):
        assert benes._bitrev_bits(x, 6) == benes._bitrev_bits.py_func(x, 6) == int(f"{x:06b}"[::-1], 2)
    out1, out2 = np.zeros(4, np.uint8), np.zeros(4, np.uint8)
    for pos in (0, 9, 31):
        benes._set_bit(out1, pos, 1)
        benes._set_bit.py_func(out2, pos, 1)
    assert np.array_equal(out1, out2)
    mat = rng.integers(-(1 << 63), (1 << 63) - 1, (3, 4), dtype=np.int64)
    for c0 in (0, 5, 64, 70, 127):
        assert matrix._get64(mat, 1, c0) == matrix._get64.py_func(mat, 1, c0)
        m1, m2 = mat.copy(), mat.copy()
        matrix._put64(m1, 2, c0, np.int64(-12345))
        matrix._put64.py_func(m2, 2, c0, np.int64(-12345))
        assert np.array_equal(m1, m2) and matrix._get64(m1, 2, c0) == -12345


def _bits(mat, ncols):
    return np.array([[(int(row[c >> 6]) >> (c & 63)) & 1 for c in range(ncols)] for row in mat])


def test_elimination_and_packing(rng):
    rows, n = 40, 150
    W = (n + 63) // 64
    mat = rng.integers(-(1 << 63), (1 << 63) - 1, (rows, W), dtype=np.int64)
    mat[:, -1] &= (1 << (n - 128)) - 1
    m1, m2 = mat.copy(), mat.copy()
    ok = matrix.eliminate_rows(m1, 0, rows, W)
    assert ok == matrix.eliminate_rows.py_func(m2, 0, rows, W) and np.array_equal(m1, m2)
    assert matrix.eliminate_rows(mat.copy(), 0, rows, 1) == ok      # the pivot columns decide
    if ok:
        B = _bits(m1, n)
        assert np.array_equal(B[:, :rows], np.eye(rows, dtype=int))
        # same row space: every original row is a combination of the reduced rows
        orig = _bits(mat, n)
        for r in orig:
            combo = np.zeros(n, dtype=int)
            for i in range(rows):
                if r[i]:
                    combo ^= B[i]
            assert np.array_equal(combo, r)
    row_bytes = (n - rows + 7) // 8
    o1 = np.empty(rows * row_bytes, np.uint8)
    o2 = np.empty(rows * row_bytes, np.uint8)
    matrix.pack_public_key(m1, rows, n, row_bytes, o1)
    matrix.pack_public_key.py_func(m1, rows, n, row_bytes, o2)
    assert np.array_equal(o1, o2)
    B = _bits(m1, n)
    unpacked = np.unpackbits(o1.reshape(rows, row_bytes), axis=1, bitorder="little")[:, :n - rows]
    assert np.array_equal(unpacked, B[:, rows:])


def test_move_pivot_columns_twin(rng):
    mt, n = 80, 200
    W = (n + 63) // 64
    for _ in range(5):
        mat = rng.integers(-(1 << 63), (1 << 63) - 1, (mt, W), dtype=np.int64)
        mat[:, -1] &= (1 << (n - 192)) - 1
        mat[mt - 32:, :] &= np.array([0, -1 << 48, -1, -1])[:W]   # zero columns 0..111 in the last 32 rows
        pi = rng.permutation(256).astype(np.int64)
        a = (mat.copy(), pi.copy())
        b = (mat.copy(), pi.copy())
        r1 = matrix.move_pivot_columns(a[0], a[1], mt)
        r2 = matrix.move_pivot_columns.py_func(b[0], b[1], mt)
        assert r1[0] == r2[0] and np.int64(r1[1]) == np.int64(r2[1])
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])


def test_parity_check_matrix_twin(rng):
    m, poly, taps = FIELDS[0]
    t, n = 3, 100
    g = np.append(rng.integers(1, 1 << m, t), 1)
    L = gf.vec_from_scalars(rng.choice(1 << m, n, replace=False), m, 2)
    assert np.array_equal(matrix.parity_check_matrix(g, L, t, m, n, taps),
                          matrix.parity_check_matrix.py_func(g, L, t, m, n, taps))


def test_encapsulation_kernels_twins(rng):
    p = PARAMS["Classic-McEliece-6960119"]
    ind = rng.choice(p.n, p.t, replace=False)
    e = matrix.weight_vector(ind, p.n // 8)
    assert np.array_equal(e, matrix.weight_vector.py_func(ind, p.n // 8))
    assert sorted(np.flatnonzero(np.unpackbits(e, bitorder="little"))) == sorted(ind)
    # rows of 29 bytes start at every byte offset mod 8; mt = 45 leaves a 5-bit shift of e's tail
    rows, row_bytes = 45, 29
    k = 8 * row_bytes - 3
    n = rows + k
    pk = rng.integers(0, 256, rows * row_bytes).astype(np.uint8)
    pk.reshape(rows, row_bytes)[:, -1] &= (1 << (k % 8)) - 1          # zero padding bits
    ebits = rng.integers(0, 2, n).astype(np.uint8)
    ev = np.packbits(np.concatenate([ebits, np.zeros(-n % 8, np.uint8)]), bitorder="little")
    s = matrix.syndrome_from_public_key(pk.tobytes(), ev, rows, row_bytes)     # as encapsulation passes it
    assert np.array_equal(s, matrix.syndrome_from_public_key(pk, ev, rows, row_bytes))
    assert np.array_equal(s, matrix.syndrome_from_public_key.py_func(pk, ev, rows, row_bytes))
    # H e with H = [I | T] written out bit by bit
    T = np.unpackbits(pk.reshape(rows, row_bytes), axis=1, bitorder="little")[:, :k]
    want = (ebits[:rows].astype(int) + T.astype(int) @ ebits[rows:].astype(int)) % 2
    assert np.array_equal(np.unpackbits(s, bitorder="little")[:rows], want)
    assert matrix.padding_ok(pk.tobytes(), rows, row_bytes, k) == 1
    for row in (0, rows - 1):
        bad = pk.copy()
        bad[(row + 1) * row_bytes - 1] |= 1 << (k % 8)
        assert matrix.padding_ok(bad.tobytes(), rows, row_bytes, k) == 0


def test_load_le64_any_alignment(rng):
    buf = rng.integers(0, 256, 40).astype(np.uint8)
    for offset in range(33):
        want = int.from_bytes(buf[offset:offset + 8].tobytes(), "little", signed=True)
        assert matrix.load_le64(buf, offset) == want
        assert _load_le64_loop(buf.tobytes(), offset) == want


@njit
def _load_le64_loop(buf, offset):
    return matrix.load_le64(buf, offset)


def test_decap_preimage_twin():
    from pqforge.mceliece import McEliece348864, scheme
    p = McEliece348864.params
    pk, sk = McEliece348864.keypair()
    ct, _ = McEliece348864.encapsulate(pk)
    g, cond, s = scheme.secret_key_parts(p, sk)
    c = np.frombuffer(ct, dtype=np.uint8)
    for cc in (c, c ^ np.uint8(1)):
        args = (cc, g, cond, s, p.m, p.n, p.t, *scheme.decoding_constants(p), decode.units(p.m))
        assert np.array_equal(decode.decap_preimage(*args), decode.decap_preimage.py_func(*args))


@pytest.mark.parametrize("m,poly,taps", FIELDS)
def test_vector_scalar_products(rng, m, poly, taps):
    x = rng.integers(0, 1 << m, 33)
    a = int(rng.integers(0, 1 << m))
    want = [_clmul_mod(int(v), a, m, poly) for v in x]
    assert list(gf.gf_scale(x, a, m, poly)) == want == list(gf.gf_scale.py_func(x, a, m, poly))
    raw = rng.integers(0, 1 << (2 * m - 1), 20)
    r1, r2 = raw.copy(), raw.copy()
    gf.gf_reduce_all(r1, m, poly)
    gf.gf_reduce_all.py_func(r2, m, poly)
    assert list(r1) == list(r2) == [_clmul_mod(int(v), 1, m, poly) if v < (1 << m) else _reduce(int(v), m, poly)
                                    for v in raw]


def _reduce(v, m, poly):
    for i in range(2 * m - 2, m - 1, -1):
        if (v >> i) & 1:
            v ^= poly << (i - m)
    return v


def test_fixed_weight_indices(rng):
    for n, t, m in ((3488, 64, 12), (8192, 128, 13), (100, 6, 8)):
        for _ in range(20):
            buf = rng.integers(0, 256, 4 * t).astype(np.uint8)
            ok, ind = matrix.fixed_weight_indices(buf, n, t, m)
            ok2, ind2 = matrix.fixed_weight_indices.py_func(buf, n, t, m)
            assert ok == ok2 and np.array_equal(ind, ind2)
            words = [(int(buf[2 * i]) | int(buf[2 * i + 1]) << 8) & ((1 << m) - 1) for i in range(2 * t)]
            below = [w for w in words if w < n][:t]
            assert ok == (len(below) == t and len(set(below)) == t)
            if ok:
                assert list(ind) == below


@pytest.mark.parametrize("name", ["Classic-McEliece-348864", "Classic-McEliece-6960119", "Classic-McEliece-8192128"])
def test_fft_matches_direct_evaluation(rng, name):
    p = PARAMS[name]
    m, poly = p.m, gf.field_poly(p)
    K = fft.fft_size(p.t)
    powers, Uw, Ub = fft.fft_constants(m, K, poly)
    f = rng.integers(0, 1 << m, p.t + 1)
    consts = fft.fft_coefficients(f, powers, m)
    assert np.array_equal(consts, fft.fft_coefficients.py_func(f, powers, m))
    E = fft.fft_evaluate(consts, Uw, Ub, m)
    values = gf.vec_to_scalars(E, 1 << m)
    for x in rng.integers(0, 1 << m, 40):          # entry x holds f(bitrev(x)), by Horner here
        point = int(f"{int(x):0{m}b}"[::-1], 2)
        acc = 0
        for cf in f[::-1]:
            acc = _clmul_mod(acc, point, m, poly) ^ int(cf)
        assert values[x] == acc
    # the routed values equal f at the support the control bits encode
    pi = rng.permutation(1 << m).astype(np.int64)
    cond = benes.control_bits(pi, m).view(np.int64)
    at_support = _values_at_support(f, cond, powers, Uw, Ub, m, poly, p.n)
    L = benes.support_from_control_bits(cond, m, p.n, benes.bitrev_planes(m))
    want = gf.vec_eval(f, L, m, p.field_taps_array)
    W = L.shape[1]
    if p.n & 63:
        want[:, W - 1] &= (1 << (p.n & 63)) - 1
    assert np.array_equal(at_support, want)


def _values_at_support(f, cond, powers, Uw, Ub, m, poly, n):
    # f at L_0 .. L_{n-1}: all field elements by the FFT, then the Benes network; decapsulation
    # relies on exactly this correspondence between the FFT's order and the support order
    E = fft.fft_evaluate(fft.fft_coefficients(f, powers, m), Uw, Ub, m)
    benes.apply_benes(E, cond, m)
    W = (n + 63) // 64
    out = E[:, :W].copy()
    if n & 63:
        out[:, W - 1] &= (1 << (n & 63)) - 1
    return out


def test_fft_kernel_twins(rng):
    p = PARAMS["Classic-McEliece-348864"]
    m, poly = p.m, gf.field_poly(p)
    powers, Uw, Ub = fft.fft_constants(m, 128, poly)
    consts = rng.integers(-2**63, 2**63, (m, fft.BLOCK), dtype=np.int64)
    assert np.array_equal(fft.fft_evaluate(consts, Uw, Ub, m), fft.fft_evaluate.py_func(consts, Uw, Ub, m))
    # level 2's scaling planes read back as field elements: the same powers in every block of 32
    y = gf.vec_to_scalars(powers[2], 128)
    assert len(set(y)) > 8 and all(y[P] == y[P % 32] for P in range(128))
    f = rng.integers(0, 1 << m, 65)
    assert np.array_equal(fft.fft_coefficients(f, powers, m), fft.fft_coefficients.py_func(f, powers, m))


def test_taylor_steps_move_the_masked_positions(rng):
    # forward: c[P] ^= c[P + 2^(a+1)] where bits (a + 1, a) of P are 01, then c[P] ^= c[P - 2^a]
    # where they are 10; transposed: c[P] ^= c[P + 2^a] at 01, then c[P] ^= c[P - 2^(a+1)] at 11.
    # Bit by bit here; the compiled steps against it and the Python twin
    m, W = 13, fft.BLOCK
    compiled = njit(lambda c, a, m, transposed: fft.taylor_pair(c, a, m, transposed))
    c = rng.integers(-2**63, 2**63, (m, W), dtype=np.int64)
    bits = [[(int(c[k, P >> 6]) >> (P & 63)) & 1 for P in range(64 * W)] for k in range(m)]
    for a in range(fft.TAYLOR_SCALES):
        for transposed in (False, True):
            steps = ((1, 1 << a), (3, -(2 << a))) if transposed else ((1, 2 << a), (2, -(1 << a)))
            want = [list(b) for b in bits]
            for pattern, shift in steps:
                for k in range(m):
                    want[k] = [x ^ want[k][P + shift] if (P >> a) & 3 == pattern and 0 <= P + shift < 64 * W else x
                               for P, x in enumerate(want[k])]
            twin = c.copy()
            fft.taylor_pair(twin, a, m, transposed)
            got = c.copy()
            compiled(got, a, m, transposed)
            assert [[(int(twin[k, P >> 6]) >> (P & 63)) & 1 for P in range(64 * W)] for k in range(m)] == want
            assert np.array_equal(got, twin), (a, transposed)


@pytest.mark.parametrize("name", ["Classic-McEliece-348864", "Classic-McEliece-460896", "Classic-McEliece-6960119"])
def test_transposed_fft_gives_power_sums(rng, name):
    p = PARAMS[name]
    m, poly = p.m, gf.field_poly(p)
    pi = rng.permutation(1 << m).astype(np.int64)
    cond = benes.control_bits(pi, m).view(np.int64)
    K = fft.fft_size(2 * p.t - 1)
    powers, Uw, Ub = fft.fft_constants(m, K, poly)
    vals = rng.integers(0, 1 << m, p.n)
    W = (p.n + 63) // 64
    v = gf.vec_from_scalars(vals, m, W)
    E = np.zeros((m, (1 << m) // 64), dtype=np.int64)
    E[:, :W] = v
    # support order back to the FFT's order (decapsulation routes its received word this way)
    routed = E.copy()
    benes.apply_benes(routed, cond, m, True)
    sums = fft.fft_transposed(routed, Uw, Ub, powers, m)
    assert np.array_equal(fft.fft_transposed(E.copy(), Uw, Ub, powers, m),
                          fft.fft_transposed.py_func(E.copy(), Uw, Ub, powers, m))
    # against the definition, with the support taken as bitrev(pi[i])
    support = [int(f"{int(x):0{m}b}"[::-1], 2) for x in pi[:p.n]]
    for j in (0, 1, 2, 7, 2 * p.t - 1):
        want = 0
        for a, x in zip(vals, support):
            term = int(a)
            for _ in range(j):
                term = _clmul_mod(term, x, m, poly)
            want ^= term
        assert sums[j] == want
