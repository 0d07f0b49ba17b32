"""GPU throughput benchmark (run by ``scripts/gpu_check.sh``).

    python -m pqforge.bench.gpu --json out.json --markdown out.md [--quick]

Per parameter set and batch size (1, 256, 4096, 65536): verification and signing on the device,
bitsliced path, with one key (expanded once on the device, the expansion timed separately) and
with a distinct key per element (expansion included), and key generation; the tensor path
(CuPy GEMMs; numpy when CuPy is absent, labelled so) for one key, verification and signing.
Times include host-device transfers and, for the tensor path, host hashing. A point whose
estimated time (from the previous size) exceeds the per-point budget (6 s), and any point after
its parameter set's share of the run's total budget (``--seconds``, 150 s by default, shared
equally by the sets still to run) is spent, is skipped and recorded (with its estimate), so the
whole run stays within a few minutes. The first call of each path is recorded too: it includes
the kernels' compilation. ``--json`` is rewritten after every point, so a run stopped from
outside keeps what it measured. ``--quick`` (used with the simulator): MAYO-2, batch sizes 1
and 2, every path exercised (no total budget to speak of).

Then (unless ``--quick`` or ``--no-model``) the verification and signing kernels alone, timed
with CUDA events per block size, next to their operation-count model (``kernel_model``), and
the registers and local and shared memory of every compiled kernel.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from .batch_cli import mayo_name

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


def run(sets=None, sizes=SIZES, budget_s=6.0, total_s=150.0, progress=print, on_row=None) -> list[dict]:
    from ..mayo import ALGORITHMS
    from ..mayo.cuda import batch as gb
    from ..mayo import tensor
    xp, xp_name, dtype = _xp()
    rows = []
    sets = list(sets or ALGORITHMS)
    end = time.perf_counter() + total_s
    for done, name in enumerate(sets):
        deadline = time.perf_counter() + (end - time.perf_counter()) / (len(sets) - done)
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
            if on_row:
                on_row(rows)

        progress(f"{name}: expanding the key on the device")
        gb.expand_public_keys(p, [cpk])          # compiles the AES and assembly kernels
        t_expand, P = _timed(lambda: gb.expand_public_keys(p, [cpk]))
        record("bitsliced", "expand one key", 1, t_expand, "AES-CTR + assembly on the device")

        def series(path, keys, fn):
            if time.perf_counter() > deadline:
                record(path, keys, sizes[0], None, "skipped: this set's share of the time budget is spent")
                return
            first, _ = _timed(lambda: fn(1))
            record(path, keys, 1, first, "first call: includes compiling this path's kernels")
            last = None
            for size in sizes:
                if time.perf_counter() > deadline:
                    record(path, keys, size, None, "skipped: this set's share of the time budget is spent")
                    continue
                # extrapolate only from a batch big enough for the per-element cost to dominate
                if last is not None and (last[1] > budget_s or last[0] >= 256 and last[1] / last[0] * size > budget_s):
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
        gb.prepare_secret_keys(p, [csk])         # compiles the seed-expansion kernels
        t_sexpand, dev_sk = _timed(lambda: gb.prepare_secret_keys(p, [csk]))
        record("bitsliced sign", "expand one secret key", 1, t_sexpand, "SHAKE + AES-CTR + L on the device")

        def same_key_sign(n):
            step = gb.sign_chunk_size(p)
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
               lambda n: tensor.verify_batch(p, prepared, msgs[:n], sigs[:n]))
        esk = sk.expanded()
        sprep = tensor.PreparedSecretKey(p, esk.L, esk.P1, xp, dtype)
        series(f"tensor sign ({xp_name})", "same key",
               lambda n: (tensor.sign_batch(p, esk, sprep, msgs[:n], rand[:n], chunk=_tensor_chunk(p)), None)[1])
    return rows


def kernel_model(sets, batch: int = 16384, thread_counts=(32, 64, 128, 256), progress=print, rate=None) -> list[dict]:
    """Same-key verification and signing kernels alone (no transfers, no host work) at ``batch``,
    per threads-per-block setting, next to the operation-count model: the word operations of the
    GF(16) products and of the linear solve (``pqforge.bench.batch.op_counts``; scalar whip
    operations counted as half a word operation, one 32-bit instruction; hashing not counted),
    over the device's measured rate for such operations."""
    from .batch import op_counts
    from ..mayo import ALGORITHMS
    from ..mayo.cuda import batch as gb
    from ..mayo.cuda.rate import event_seconds, word_op_rate
    rate = rate or word_op_rate()
    progress(f"device word-operation rate: {rate:.3g}/s")
    rows = [{"kernel": "word-op rate", "ops_per_s": rate}]
    for name in sets or list(ALGORITHMS):
        alg = ALGORITHMS[name]
        p = alg.params
        sk = alg.generate_private_key()
        msgs = [os.urandom(32) for _ in range(256)]
        sigs = sk.sign_many(msgs, backend="cpu")
        msgs, sigs = [msgs[i % 256] for i in range(batch)], [sigs[i % 256] for i in range(batch)]
        counts = op_counts(p)

        def ops(*names):
            return sum(c if kind == "word" else c / 2 for kind, c in (counts[x] for x in names))
        P = gb.expand_public_keys(p, [sk.public_key().public_bytes_raw()])
        dev_sk = gb.prepare_secret_keys(p, [sk.private_bytes_raw()])
        rand = [os.urandom(p.salt_bytes) for _ in range(batch)]
        zeros = np.zeros(batch, np.int64)
        for kernel, per, make in (
                ("verify", ops("quadratic_pairs (verify)", "whip (verify)"),
                 lambda: gb.verify_launch(p, P, zeros, msgs, sigs)),
                ("sign", ops("products (sign)", "whip (sign)", "sample_solution (sign)"),
                 lambda: gb.sign_launch(p, dev_sk, zeros, msgs, rand)[:2])):
            model = batch * per / rate
            launch, out = make()
            for t in thread_counts:
                try:
                    out.copy_to_device(np.zeros(out.shape, out.dtype))
                    seconds = event_seconds(lambda: launch(t), repeats=1)
                    if kernel == "verify" and not out.copy_to_host().all():
                        raise AssertionError("a valid signature was rejected")
                    if kernel == "sign" and not out.copy_to_host().any(axis=1).all():
                        raise AssertionError("a signature was not written")
                except Exception as exc:  # a block size the kernel's resources do not allow is a result too
                    rows.append({"alg": name, "kernel": kernel, "threads": t, "batch": batch,
                                 "note": f"failed: {type(exc).__name__}: {str(exc)[:120]}"})
                    continue
                rows.append({"alg": name, "kernel": kernel, "threads": t, "batch": batch, "seconds": seconds,
                             "per_s": batch / seconds, "ops_per_instance": per, "model_s": model,
                             "pct_of_model": 100 * model / seconds})
                progress(f"{name} {kernel} kernel, {t} threads/block: {batch / seconds:,.0f}/s, "
                         f"{100 * model / seconds:.1f}% of model")
    return rows


def model_markdown(rows) -> str:
    lines = ["| set | kernel | batch | threads/block | per second (kernel only) | ops/instance | model per second | % of model |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "alg" not in r:
            continue
        if "seconds" not in r:
            lines.append(f"| {r['alg']} | {r['kernel']} | {r['batch']} | {r['threads']} | {r['note']} | | | |")
            continue
        lines.append(f"| {r['alg']} | {r['kernel']} | {r['batch']} | {r['threads']} | {r['per_s']:,.0f} | {r['ops_per_instance']:,.0f} | "
                     f"{r['batch'] / r['model_s']:,.0f} | {r['pct_of_model']:.1f}% |")
    return "\n".join(lines)


def kernel_resources(sets) -> list[dict]:
    """Registers, local (spilled or indexed) and shared memory of every kernel compiled so far."""
    from ..mayo import ALGORITHMS
    from ..mayo.cuda import aes, sign, verify
    found = [("", "aes key schedule", aes.key_schedule_kernel), ("", "aes ctr", aes.ctr_kernel)]
    for name in sets or list(ALGORITHMS):
        p = ALGORITHMS[name].params
        found += [(name, k, fn) for k, fn in zip(("assemble", "verify"), verify.kernels_for(p))]
        found += [(name, k, fn) for k, fn in zip(("seed_expand", "expand_secret", "keygen", "sign"), sign.kernels_for(p))]
    rows = []
    for alg, kernel, fn in found:
        try:
            regs = fn.get_regs_per_thread()
            local = fn.get_local_mem_per_thread()
            shared = fn.get_shared_mem_per_block()
        except Exception:   # the simulator keeps no such figures
            continue
        if not isinstance(regs, dict):
            regs = {"": regs}
        for sig in regs:
            rows.append({"alg": alg, "kernel": kernel, "registers": regs[sig],
                         "local_bytes": local.get(sig) if isinstance(local, dict) else local,
                         "shared_bytes": shared.get(sig) if isinstance(shared, dict) else shared})
    return rows


def _tensor_chunk(p) -> int:
    """Signatures per chunk of tensor signing: 4n x 4km halves per signature kept near 1 GiB."""
    return max(1, (1 << 30) // (2 * 4 * p.n * 4 * p.k * p.m))


def markdown(rows) -> str:
    lines = ["| set | path | keys | batch | time (s) | per second | note |", "|---|---|---|---:|---:|---:|---|"]
    for r in rows:
        t = f"{r['seconds']:.4f}" if r["seconds"] else ""
        ps = f"{r['per_s']:,.0f}" if r["per_s"] else ""
        lines.append(f"| {r['alg']} | {r['path']} | {r['keys']} | {r['batch']} | {t} | {ps} | {r['note']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pqforge.bench.gpu", description=__doc__.splitlines()[0])
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--alg", action="append", type=mayo_name)
    ap.add_argument("--seconds", type=float, default=150.0, help="time budget of the whole run (default 150)")
    ap.add_argument("--no-model", action="store_true", help="skip the kernel-only timings and their model")
    ap.add_argument("--model-alg", action="append", type=mayo_name, help="sets for the kernel-only timings (default: as --alg)")
    a = ap.parse_args(argv)
    from . import machine
    from numba import cuda
    sets, sizes = (a.alg or ["MAYO-2"], (1, 2)) if a.quick else (a.alg, SIZES)
    info = machine()
    try:
        info["gpu"] = cuda.get_current_device().name
        info["gpu"] = info["gpu"].decode() if isinstance(info["gpu"], bytes) else str(info["gpu"])
    except Exception:
        info["gpu"] = "simulator" if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" else "unknown"

    def save(rows):
        if a.json:
            with open(a.json, "w") as f:
                json.dump({"machine": info, "results": rows}, f, indent=1)
    rows = run(sets, sizes, total_s=900.0 if a.quick else a.seconds,
               progress=lambda s: print(f"  {s}", file=sys.stderr, flush=True), on_row=save)
    table = markdown(rows)
    print(table)
    save(rows)
    model_rows = []
    if not a.quick and not a.no_model:
        model_rows = kernel_model(a.model_alg or sets, progress=lambda s: print(f"  {s}", file=sys.stderr, flush=True))
        print(model_markdown(model_rows))
    resources = kernel_resources(sets)
    for r in resources:
        print(f"  kernel {r['alg']} {r['kernel']}: {r['registers']} registers, {r['local_bytes']} B local, "
              f"{r['shared_bytes']} B shared", file=sys.stderr)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"machine": info, "results": rows, "model": model_rows, "kernels": resources}, f, indent=1)
    if a.markdown and model_rows:
        with open(a.markdown, "a") as f:
            f.write(f"\nKernels alone (no transfers), same key:\n\n{model_markdown(model_rows)}\n")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"{info['date']}, GPU {info['gpu']}, {info['processor']}\n\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
