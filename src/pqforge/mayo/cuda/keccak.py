"""Keccak-f[1600] and SHAKE256 on the device (one thread computes one hash).

The state is 25 uint64 lanes, lane (x, y) at index x + 5 y, bytes little-endian within a lane.
The rotation offsets and round constants are those of ``pqforge.shake`` (derived there from
their definitions in FIPS 202). Constant-time: the permutation is fixed shifts, XORs and ANDs;
message lengths are public.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, uint64

from ... import shake

RATE, RHO, RC = shake.RATE, shake.RHO, shake.RC


@cuda.jit(device=True)
def keccak_f1600(A, B, rho, rc):
    """Permute the 25 lanes of A in place (B: 25 lanes of scratch; rho, rc: the constants)."""
    C = cuda.local.array(5, uint64)
    for rnd in range(24):
        for x in range(5):
            C[x] = A[x] ^ A[x + 5] ^ A[x + 10] ^ A[x + 15] ^ A[x + 20]
        for x in range(5):
            c1 = C[(x + 1) % 5]
            d = C[(x + 4) % 5] ^ ((c1 << uint64(1)) | (c1 >> uint64(63)))
            for y in range(5):
                A[x + 5 * y] ^= d
        for x in range(5):
            for y in range(5):
                v = A[x + 5 * y]
                n = rho[x + 5 * y]
                if n != 0:   # a public constant
                    v = (v << uint64(n)) | (v >> uint64(64 - n))
                B[y + 5 * ((2 * x + 3 * y) % 5)] = v
        for y in range(5):
            for x in range(5):
                A[x + 5 * y] = B[x + 5 * y] ^ (~B[(x + 1) % 5 + 5 * y] & B[(x + 2) % 5 + 5 * y])
        A[0] ^= rc[rnd]


@cuda.jit(device=True)
def shake256(src, off, length, out, out_off, outlen, A, B, rho, rc):
    """out[out_off : out_off + outlen] = SHAKE256(src[off : off + length]). A, B: 25-lane scratch."""
    for i in range(25):
        A[i] = uint64(0)
    pos = 0
    for i in range(length):
        A[pos >> 3] ^= uint64(src[off + i]) << uint64(8 * (pos & 7))
        pos += 1
        if pos == RATE:
            keccak_f1600(A, B, rho, rc)
            pos = 0
    A[pos >> 3] ^= uint64(0x1F) << uint64(8 * (pos & 7))
    A[(RATE - 1) >> 3] ^= uint64(0x80) << uint64(8 * ((RATE - 1) & 7))
    keccak_f1600(A, B, rho, rc)
    pos = 0
    for i in range(outlen):
        if pos == RATE:
            keccak_f1600(A, B, rho, rc)
            pos = 0
        out[out_off + i] = (A[pos >> 3] >> uint64(8 * (pos & 7))) & uint64(0xFF)
        pos += 1


@cuda.jit
def shake256_kernel(data, offsets, outlen, out, rho, rc):
    """out[i, :outlen] = SHAKE256(data[offsets[i]:offsets[i+1]]), one thread per input (for tests)."""
    i = cuda.grid(1)
    if i >= out.shape[0]:
        return
    A = cuda.local.array(25, uint64)
    B = cuda.local.array(25, uint64)
    shake256(data, offsets[i], offsets[i + 1] - offsets[i], out[i], 0, outlen, A, B, rho, rc)


def shake256_many(inputs: list[bytes], outlen: int) -> np.ndarray:
    """SHAKE256 of each input on the device; (len(inputs), outlen) uint8 on the host."""
    offsets = np.zeros(len(inputs) + 1, np.int64)
    offsets[1:] = np.cumsum([len(x) for x in inputs])
    data = np.frombuffer(b"".join(inputs) + b"\0", np.uint8)
    out = cuda.device_array((len(inputs), outlen), np.uint8)
    tpb = 32
    shake256_kernel[(len(inputs) + tpb - 1) // tpb, tpb](cuda.to_device(data), cuda.to_device(offsets), outlen, out,
                                                          cuda.to_device(RHO), cuda.to_device(RC))
    return out.copy_to_host()
