"""Start-up cost: import time and the first keygen/sign/verify in a fresh interpreter.

"cold" runs with an empty numba cache directory (the first call after installation compiles
every kernel); "warm" runs with the cache that the cold run filled (every later process).
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
from pqforge.mayo import get
t1 = time.perf_counter()
alg = get(sys.argv[1])
sk = alg.generate_private_key()
sig = sk.sign(b"start-up")
sk.public_key().verify(sig, b"start-up")
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_ops_s": t2 - t1}))
"""


def measure(alg_name: str = "MAYO-2") -> dict:
    """{"cold": {...}, "warm": {...}} with import and first-operation seconds."""
    results = {}
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        for label in ("cold", "warm"):
            out = subprocess.run([sys.executable, "-c", _PROBE, alg_name], env=env, check=True,
                                 capture_output=True, text=True).stdout
            results[label] = json.loads(out)
    return results
