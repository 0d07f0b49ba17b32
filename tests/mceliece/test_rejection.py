"""Implicit rejection: a ciphertext that does not decode yields SHAKE256(0 | s | C), computed
here straight from the specification's formula and the private-key layout."""

import hashlib

import numpy as np

import pytest

from pqforge.mceliece import ALGORITHMS

from ..known_answers import kem_entry0


def _rejection_value(name, sk, ct):
    p = ALGORITHMS[name].params
    s = sk[len(sk) - p.n // 8:]          # s is the last n/8 bytes of the private key
    return hashlib.shake_256(b"\x00" + s + ct).digest(32)


@pytest.mark.parametrize("name", ["Classic-McEliece-348864", "Classic-McEliece-460896f",
                                  "Classic-McEliece-6960119", "Classic-McEliece-8192128"])
def test_flipped_bits_give_the_rejection_key(name):
    official = kem_entry0(name)
    alg = ALGORITHMS[name]
    sk, ct = official["sk"], official["ct"]
    mt = alg.params.m * alg.params.t
    for bits in ([0], [5, 77], [mt - 1], list(range(0, mt, 37))):
        bad = bytearray(ct)
        for b in bits:
            bad[b // 8] ^= 1 << (b % 8)
        bad = bytes(bad)
        ss = alg.decapsulate(sk, bad)
        assert ss != official["ss"]
        assert ss == _rejection_value(name, sk, bad)


def test_zero_and_random_ciphertexts():
    name = "Classic-McEliece-348864f"
    official = kem_entry0(name)
    alg = ALGORITHMS[name]
    for ct in (bytes(alg.ciphertext_size), hashlib.sha512(b"x").digest()[:alg.ciphertext_size]
               + bytes(alg.ciphertext_size - 64)):
        assert alg.decapsulate(official["sk"], ct) == _rejection_value(name, official["sk"], ct)


def _gf2_solve(A, b):
    """x with A x = b over GF(2) (A: rows x cols of 0/1, full column rank), by elimination."""
    M = np.concatenate([A, b[:, None]], axis=1).astype(np.uint8)
    rows, cols = A.shape
    r = 0
    for c in range(cols):
        hit = np.nonzero(M[r:, c])[0]
        assert len(hit), "syndrome map is not injective"
        M[[r, r + hit[0]]] = M[[r + hit[0], r]]
        others = np.nonzero(M[:, c])[0]
        M[others[others != r]] ^= M[r]
        r += 1
    assert not M[r:, -1].any(), "target syndrome outside the code's syndrome space"
    return M[:cols, -1]


@pytest.mark.parametrize("outside", [False, True])
def test_a_locator_root_outside_the_support_is_rejected(outside):
    # Decoding runs over all 2^m field elements and routes the error vector back to the support
    # afterwards. Here the official 348864 key (n < 2^m) gets a ciphertext whose syndrome is that
    # of t - 1 support positions plus one field element outside the support: decoding finds t
    # roots, one of them outside, so the specification's support-only error vector has weight
    # t - 1 and the answer must be the rejection key. The control uses t support positions.
    from pqforge.mceliece import benes, fft, scheme
    from pqforge.mceliece.gf import vec_inv, vec_square
    name = "Classic-McEliece-348864"
    p = ALGORITHMS[name].params
    sk = kem_entry0(name)["sk"]
    g, cond, s = scheme.secret_key_parts(p, sk)
    fpoly, taps = scheme.decoding_constants(p)[:2]
    syp, syu, syb = scheme.decoding_constants(p)[-3:]
    evp, evu, evb = fft.fft_constants(p.m, fft.fft_size(p.t), fpoly)    # g in full, t + 1 coefficients
    nw = (1 << p.m) >> 6
    ginv2 = vec_inv(fft.fft_evaluate(fft.fft_coefficients(np.append(g, 1), evp, p.m),
                                     evu, evb, p.m), p.m, taps)
    vec_square(ginv2, ginv2, p.m, taps)

    def syndrome(positions):             # positions in support order; from n on: outside it
        v = np.zeros((1, nw), dtype=np.int64)
        for i in positions:
            v[0, i >> 6] |= np.int64(1) << np.int64(i & 63)
        benes.apply_benes(v, cond, p.m, True)
        syn = fft.fft_transposed(ginv2 & v, syu, syb, syp, p.m)[:2 * p.t]
        return ((syn[:, None] >> np.arange(p.m)) & 1).ravel()

    rng = np.random.default_rng(7)
    errors = list(rng.choice(p.n, p.t, replace=False))
    if outside:
        errors[-1] = p.n + int(rng.integers((1 << p.m) - p.n))
    A = np.stack([syndrome([i]) for i in range(p.mt)], axis=1)
    bits = _gf2_solve(A, syndrome(errors))
    ct = np.packbits(bits, bitorder="little").tobytes()
    ss = ALGORITHMS[name].decapsulate(sk, ct)
    if outside:
        assert ss == _rejection_value(name, sk, ct)
    else:
        e = np.zeros(p.n, dtype=np.uint8)
        e[errors] = 1
        assert ss == hashlib.shake_256(b"\x01" + np.packbits(e, bitorder="little").tobytes() + ct).digest(32)
