"""The compiled AES-128-CTR (``pqforge.aes``) against OpenSSL's (the ``cryptography`` package),
at every width this CPU runs, and the choice of width."""

import os

import numpy as np
import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from pqforge import aes, symmetric
from pqforge.gf16 import sets


def openssl_keystream(key: bytes, n: int) -> bytes:
    enc = Cipher(algorithms.AES(key), modes.CTR(bytes(16))).encryptor()
    return enc.update(bytes(n)) + enc.finalize()


def _runnable_widths() -> list[int]:
    f = sets.cpu_features()
    return [w for w, needs in ((1, {"aes"}), (2, {"aes", "vaes", "avx"}), (4, {"aes", "vaes", "avx512f"})) if needs <= f]


@pytest.mark.parametrize("width", _runnable_widths() or [pytest.param(1, marks=pytest.mark.skip("no AES instructions"))])
def test_keystream_matches_openssl_at_every_length_boundary(width):
    group = 16 * width * aes.IN_FLIGHT           # bytes the main loop takes at once
    lengths = {0, 1, 15, 16, 17, 16 * width - 1, 16 * width + 1, group - 1, group, group + 1,
               group + 16 * width + 7, 3 * group + 33, 101_376}
    for n in sorted(lengths):
        key = os.urandom(16)
        out = np.full(n + 16, 0xA5, np.uint8)
        aes.keystream_into(np.frombuffer(key, np.uint8), out[:n], (0,) * width)
        assert out[:n].tobytes() == openssl_keystream(key, n), (width, n)
        assert (out[n:] == 0xA5).all(), "wrote past the end"


def test_keystream_counts_past_a_32_bit_block_counter_like_openssl():
    # the counter block is one 128-bit big-endian number; a wrong byte order shows at block 256
    key = bytes(range(16))
    n = 16 * 300
    assert symmetric.aes128_ctr(key, n) == openssl_keystream(key, n)


def test_symmetric_keystream_is_openssl_s_with_either_path():
    key = os.urandom(16)
    buf = bytearray(1000 + 15)
    symmetric.aes128_ctr_into(key, 1000, buf)
    assert bytes(buf[:1000]) == openssl_keystream(key, 1000)
    assert symmetric.aes128_ctr(memoryview(key), 77) == openssl_keystream(key, 77)
    assert bytes(symmetric.aes128_ctr_scratch(key, 500)) == openssl_keystream(key, 500)


def test_wrong_key_length_is_a_clear_error():
    with pytest.raises(ValueError, match="16-byte key"):
        symmetric.aes128_ctr(bytes(15), 32)


def test_width_follows_the_kernel_set_and_the_cpu():
    everything = {"aes", "vaes", "avx", "avx2", "avx512f", "gfni"}
    assert sets.aes_width("portable", everything) == 0          # OpenSSL where no x86 set runs
    assert sets.aes_width("avx2", {"avx", "avx2"}) == 0         # no AES-NI: OpenSSL
    assert sets.aes_width("avx2", {"aes", "avx", "avx2"}) == 1
    assert sets.aes_width("avx2", {"aes", "vaes", "avx", "avx2"}) == 2
    assert sets.aes_width("gfni", everything) == 4
    assert sets.aes_width("neon", {"neon", "aes"}) == 1         # the ARMv8 instructions, a block each
    assert sets.aes_width("neon", {"neon"}) == 0                # a Cortex-A72 without them: OpenSSL
    assert sets.AES_WIDTH in _runnable_widths() + [0]
