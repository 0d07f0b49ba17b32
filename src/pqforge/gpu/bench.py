"""GPU throughput benchmark (run by ``scripts/gpu_check.sh``).

    python -m pqforge.gpu.bench --json out.json --markdown out.md [--quick]

Per parameter set and batch size (1, 256, 4096, 65536): verification and signing on the device,
bitsliced path, with one key (expanded once on the device, the expansion timed separately) and
with a distinct key per element (expansion included), and key generation; the tensor path
(CuPy GEMMs; numpy when CuPy is absent, labelled so) for one key, verification and signing.
Times include host-device transfers and, for the tensor path, host hashing. A point whose
estimated time (from the previous size) exceeds the per-point budget (6 s), and any point after
the run's total budget (150 s) is spent, is skipped and recorded (with its estimate), so the
whole run stays within a few minutes. ``--quick`` (used with the simulator): MAYO-2, batch sizes
1 and 2, every path exercised (no total budget to speak of).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

SIZES = (1, 256, 4096, 65536)


def _sync():
    from numba import cuda
    cuda.synchronize()


def _timed(fn):
    _sync()
    t0 = time.perf_counter()
    out = fn()
    _sync()
    return time.perf_counter() - t0, out


def _xp():
    try:
        import cupy
        cupy.zeros(1)
        return cupy, "cupy", np.float16
    except Exception:  # no CuPy or no device: the same code on numpy
        return np, "numpy", np.float32


def run(sets=None, sizes=SIZES, budget_s=6.0, total_s=150.0, progress=print) -> list[dict]:
    from ..mayo import ALGORITHMS
    from . import batch as gb
    from . import tensor
    xp, xp_name, dtype = _xp()
    rows = []
    deadline = time.perf_counter() + total_s
    for name in sets or list(ALGORITHMS):
        alg = ALGORITHMS[name]
        p = alg.params
        sk = alg.generate_private_key()
        pk = sk.public_key()
        cpk = pk.public_bytes_raw()
        top = max(sizes)
        base_msgs = [os.urandom(32) for _ in range(min(top, 256))]
        base_sigs = sk.sign_many(base_msgs, backend="cpu")
        msgs = [base_msgs[i % len(base_msgs)] for i in range(top)]
        sigs = [base_sigs[i % len(base_sigs)] for i in range(top)]

        def record(path, keys, size, seconds, note=""):
            rows.append({"alg": name, "path": path, "keys": keys, "batch": size, "seconds": seconds,
                         "per_s": size / seconds if seconds else None, "note": note})
            progress(f"{name} {path} {keys} {size}: " + (f"{size / seconds:,.0f}/s" if seconds else note))

        progress(f"{name}: expanding the key on the device")
        t_expand, P = _timed(lambda: gb.expand_public_keys(p, [cpk]))
        rows.append({"alg": name, "path": "bitsliced", "keys": "expand one key", "batch": 1, "seconds": t_expand,
                     "per_s": 1 / t_expand, "note": "AES-CTR + assembly on the device"})

        def series(path, keys, fn):
            if time.perf_counter() > deadline:
                record(path, keys, sizes[0], None, "skipped: the whole run's time budget is spent")
                return
            fn(1)                 # compiles the kernels of this path before timing
            last = None
            for size in sizes:
                if time.perf_counter() > deadline:
                    record(path, keys, size, None, "skipped: the whole run's time budget is spent")
                    continue
                if last is not None and last[1] / last[0] * size > budget_s:
                    record(path, keys, size, None, f"skipped: estimated {last[1] / last[0] * size:.0f} s")
                    continue
                try:
                    seconds, ok = _timed(lambda: fn(size))
                except Exception as exc:  # keep going: an out-of-memory point is a result too
                    record(path, keys, size, None, f"failed: {type(exc).__name__}: {str(exc)[:120]}")
                    continue
                if ok is not None and not bool(np.all(ok)):
                    raise AssertionError(f"{name} {path} {keys} {size}: a valid signature was rejected")
                record(path, keys, size, seconds)
                last = (size, seconds)

        series("bitsliced", "same key", lambda n: gb.run_verify(p, P, np.zeros(n, np.int64), msgs[:n], sigs[:n]))

        def distinct(n):
            """One key expansion per signature (the same key bytes, expanded n times), 512 keys per launch."""
            ok = []
            for lo in range(0, n, 512):
                c = min(512, n - lo)
                Pn = gb.expand_public_keys(p, [cpk] * c)
                ok.append(gb.run_verify(p, Pn, np.arange(c), msgs[lo:lo + c], sigs[lo:lo + c]))
            return np.concatenate(ok)
        series("bitsliced", "distinct keys (one expansion per signature)", distinct)

        csk = sk.private_bytes_raw()
        rand = [os.urandom(p.salt_bytes) for _ in range(top)]

        progress(f"{name}: expanding the secret key on the device")
        t_sexpand, dev_sk = _timed(lambda: gb.prepare_secret_keys(p, [csk]))
        rows.append({"alg": name, "path": "bitsliced sign", "keys": "expand one secret key", "batch": 1,
                     "seconds": t_sexpand, "per_s": 1 / t_sexpand, "note": "SHAKE + AES-CTR + L on the device"})

        def same_key_sign(n):
            step = gb._sign_chunk_size(p)
            for lo in range(0, n, step):
                c = min(step, n - lo)
                gb.run_sign(p, dev_sk, np.zeros(c, np.int64), msgs[lo:lo + c], rand[lo:lo + c])

        def distinct_sign(n):
            out = [None] * n
            groups = [(os.urandom(p.sk_seed_bytes), [q]) for q in range(n)]
            gb.sign_groups(p, groups, msgs[:n], rand[:n], out)
        series("bitsliced sign", "same key", same_key_sign)
        series("bitsliced sign", "distinct keys (one expansion per signature)", distinct_sign)
        series("bitsliced keygen", "distinct keys",
               lambda n: (gb.keygen(p, [os.urandom(p.sk_seed_bytes) for _ in range(n)]), None)[1])

        prepared = tensor.PreparedPublicKey(p, pk.expanded().P, xp, dtype)
        series(f"tensor ({xp_name})", "same key",
               lambda n: tensor.verify_batch(p, prepared, msgs[:n], sigs[:n], chunk=_tensor_chunk(p)))
        esk = sk.expanded()
        sprep = tensor.PreparedSecretKey(p, esk.L, esk.P1, xp, dtype)
        series(f"tensor sign ({xp_name})", "same key",
               lambda n: (tensor.sign_batch(p, esk, sprep, msgs[:n], rand[:n], chunk=_tensor_chunk(p)), None)[1])
    return rows


def _tensor_chunk(p) -> int:
    """Rows per GEMM launch: the per-signature stage-2 operand (4n x 4km halves) kept near 1 GiB."""
    return max(1, (1 << 30) // (2 * 4 * p.n * 4 * p.k * p.m))


def markdown(rows) -> str:
    lines = ["| set | path | keys | batch | time (s) | per second | note |", "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        t = f"{r['seconds']:.4f}" if r["seconds"] else ""
        ps = f"{r['per_s']:,.0f}" if r["per_s"] else ""
        lines.append(f"| {r['alg']} | {r['path']} | {r['keys']} | {r['batch']} | {t} | {ps} | {r['note']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pqforge.gpu.bench", description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--alg", action="append")
    a = ap.parse_args(argv)
    from ..bench import machine
    from numba import cuda
    sets, sizes = (a.alg or ["MAYO-2"], (1, 2)) if a.quick else (a.alg, SIZES)
    rows = run(sets, sizes, total_s=900.0 if a.quick else 150.0, progress=lambda s: print(f"  {s}", file=sys.stderr))
    info = machine()
    try:
        info["gpu"] = cuda.get_current_device().name
        info["gpu"] = info["gpu"].decode() if isinstance(info["gpu"], bytes) else str(info["gpu"])
    except Exception:
        info["gpu"] = "simulator" if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else "unknown"
    table = markdown(rows)
    print(table)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": info, "results": rows}, f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"{info['date']}, GPU {info['gpu']}, {info['processor']}\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
