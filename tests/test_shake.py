"""The compiled SHAKE256 against hashlib (OpenSSL) at lengths around the rate's block edges."""

import hashlib

import numpy as np

from pqforge import shake


def test_compiled_shake256_matches_hashlib():
    rng = np.random.default_rng(7)
    lengths = [0, 1, 31, 32, 56, 135, 136, 137, 271, 272, 300, 1000]
    inputs = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]
    offsets = np.zeros(len(inputs) + 1, np.int64)
    offsets[1:] = np.cumsum(lengths)
    data = np.frombuffer(b"".join(inputs) + b"\0", np.uint8)
    for outlen in (1, 32, 136, 137, 300):
        out = np.zeros((len(inputs), outlen), np.uint8)
        shake.shake256_rows(data, offsets, out)
        assert [row.tobytes() for row in out] == [hashlib.shake_256(x).digest(outlen) for x in inputs]


def test_round_constants_and_rotations_are_the_standard_ones():
    # first and last round constants and two rotation offsets as printed in FIPS 202 / Keccak team tables
    assert int(shake.RC[0]) == 0x0000000000000001 and int(shake.RC[23]) == 0x8000000080008008
    assert shake.RHO[1] == 1 and shake.RHO[24] == 14
