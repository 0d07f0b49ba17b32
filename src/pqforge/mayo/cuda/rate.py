"""Device timing (CUDA events) and the device's rate for 64-bit word operations, the unit of
the benchmark's operation-count model.

The pattern is the one the GF(16) product kernels spend their time in: ``acc ^= mask & row``,
two word operations, on values held in registers.
"""

from __future__ import annotations

import numpy as np
from numba import cuda, uint64

LANES = 16


@cuda.jit
def masked_xor_loop(seed, reps, out):
    """LANES independent masked XORs per step; the mask changes every step so nothing folds away."""
    i = cuda.grid(1)
    r = cuda.local.array(LANES, uint64)
    acc = cuda.local.array(LANES, uint64)
    for q in range(LANES):
        r[q] = seed[q] + uint64(i)
        acc[q] = uint64(0)
    mk = seed[LANES]
    for _ in range(reps):
        for q in range(LANES):
            acc[q] ^= mk & r[q]
        mk += uint64(1)
    x = uint64(0)
    for q in range(LANES):
        x ^= acc[q]
    out[i] = x


def event_seconds(fn, repeats: int = 3) -> float:
    """Median device time of fn() (CUDA events around it), after one untimed call."""
    fn()
    times = []
    for _ in range(repeats):
        start, stop = cuda.event(), cuda.event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop) / 1000)
    return float(np.median(times))


def word_op_rate(threads: int | None = None, reps: int = 2048) -> float:
    """Word operations per second of the whole device (the counter increment, one operation in
    2 * LANES, is not counted, so the rate is slightly understated)."""
    threads = threads or cuda.get_current_device().MULTIPROCESSOR_COUNT * 2048 * 2
    seed = cuda.to_device(np.arange(1, LANES + 2, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15))
    out = cuda.device_array(threads, np.uint64)
    seconds = event_seconds(lambda: masked_xor_loop[threads // 256, 256](seed, reps, out))
    return threads * reps * 2 * LANES / seconds
