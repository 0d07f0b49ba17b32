"""Start-up cost: import time and the first operations in a fresh interpreter.

"cold" runs with an empty numba cache directory (the first use after installation compiles the
kernels it needs); "warm" is the next process, with the cache that the cold run filled. The
first operations are keygen, sign and verify for a signature scheme, keygen, encapsulation and
decapsulation for a KEM; "one_op_s" is the time to the end of the first of them (what a
command such as ``pqforge keygen`` pays after its import).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import Any

_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
from pqforge import algorithms
alg = algorithms.get(sys.argv[1])
t1 = time.perf_counter()
if alg.kind == "signature":
    sk = alg.generate_private_key()
    t2 = time.perf_counter()
    sk.public_key().verify(sk.sign(b"start-up"), b"start-up")
else:
    sk = alg.generate_private_key()
    t2 = time.perf_counter()
    ct, ss = sk.public_key().encapsulate()
    assert sk.decapsulate(ct) == ss
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "one_op_s": t2 - t0, "first_ops_s": t3 - t1}))
"""


_FLOOR = r"""
import time
t0 = time.perf_counter()
import numba
import numpy


@numba.njit(cache=True)
def one_more(x):
    return x + 1


one_more(numpy.int64(1))
print(time.perf_counter() - t0)
"""


def measure(alg_name: str = "MAYO-2") -> dict[str, Any]:
    """{"cold": {...}, "warm": {...}, "numba_floor_s": s}: seconds of the import, of the import and
    the first operation, and of the first three operations, each in a new process; then the
    anchor, measured right after the warm run."""
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold", "warm"):
            results[label] = json.loads(_run([sys.executable, "-c", _PROBE, alg_name], env))
        floor = os.path.join(cache, "numba_floor.py")     # a file: numba caches only those
        with open(floor, "w") as f:
            f.write(_FLOOR)
        _run([sys.executable, floor], env)                # compiles
        results["numba_floor_s"] = float(_run([sys.executable, floor], env))
    return results


def _run(argv: list, env: dict) -> str:
    return subprocess.run(argv, env=env, check=True, capture_output=True, text=True).stdout
