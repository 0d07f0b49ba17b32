"""Compile every device kernel to PTX (sm_90) without a GPU: the real typing and code generation.

Usage: python tests/mayo/cuda/ptx_check.py [SET ...]. Needs NVVM (pip install "numba-cuda[cu12]"); no device.
The kernels compile for the device the dispatcher reports; with no device present, a stand-in
reporting compute capability 9.0 is put in its place.
"""
import sys
import time

import numba.cuda.dispatcher as _dispatcher


class _Sm90:
    compute_capability = (9, 0)


_dispatcher.get_current_device = lambda: _Sm90()

from numba import cuda, types as T  # noqa: E402
from pqforge.mayo.cuda import aes, keccak, sign, verify  # noqa: E402
from pqforge.mayo import ALGORITHMS  # noqa: E402

u8_1, u8_2, u8_3 = T.uint8[::1], T.uint8[:, ::1], T.uint8[:, :, ::1]
u64_1, u64_2, u64_3, u64_4 = T.uint64[::1], T.uint64[:, ::1], T.uint64[:, :, ::1], T.uint64[:, :, :, ::1]
i64_1, i32_1 = T.int64[::1], T.int32[::1]
cc = (9, 0)


def comp(name, fn, sig):
    t = time.time()
    ptx, _ = cuda.compile_ptx(fn.py_func, sig, cc=cc)
    print(f"{name}: ok {time.time() - t:.1f}s ptx {len(ptx) // 1024} KiB", file=sys.stderr)


comp("aes.key_schedule", aes.key_schedule_kernel, (u8_2, u8_1, u8_3))
comp("aes.ctr", aes.ctr_kernel, (u8_3, u64_1, T.int64, u8_2))
comp("keccak.shake", keccak.shake256_kernel, (u8_1, i64_1, T.int64, u8_2, i64_1, u64_1))
for name in sys.argv[1:] or ALGORITHMS:
    p = ALGORITHMS[name].params
    assemble, ver = verify.kernels_for(p)
    comp(f"{name} assemble", assemble, (u8_2, u8_2, u64_4))
    comp(f"{name} verify", ver, (u64_4, i32_1, u8_1, i64_1, u8_2, u64_4, u8_1, i64_1, u64_1))
    se, es, kg, sg = sign.kernels_for(p)
    comp(f"{name} seed_expand", se, (u8_2, u8_2, u8_3, i64_1, u64_1))
    comp(f"{name} expand_secret", es, (u8_2, u8_3, u64_4, u64_4, u64_4))
    comp(f"{name} keygen", kg, (u8_2, u8_3, u64_4, u64_4, u64_4, u64_4, u8_2))
    comp(f"{name} sign", sg, (i32_1, u8_2, u8_3, u64_4, u64_4, u8_1, i64_1, u8_2, u64_4, u8_3, u64_3, u8_2,
                             i64_1, i64_1, u64_1))
