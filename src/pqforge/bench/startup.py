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


def measure(alg_name: str = "MAYO-2") -> dict:
    """{"cold": {...}, "warm": {...}}: seconds of the import, of the import and the first
    operation, and of the first three operations, each in a new process."""
    results = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold", "warm"):
            out = subprocess.run([sys.executable, "-c", _PROBE, alg_name], env=env, check=True,
                                 capture_output=True, text=True).stdout
            results[label] = json.loads(out)
    return results
