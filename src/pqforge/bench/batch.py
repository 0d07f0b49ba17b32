"""Batch benchmark: throughput of batched MAYO on the CPU (and, when present, the GPU).

    pqforge bench-batch                               # all four sets, batch 512, all cores
    pqforge bench-batch --alg MAYO-2 --batch 2048 --json out.json

Per parameter set it reports operations per second for
  * same key, expanded key cached: sign_many and verify_many, with 1 thread and with all cores
    (the scaling 1 -> N threads, with the process CPU time as a check of real parallelism);
  * distinct keys: generate_private_keys, sign_many and verify_many with a different compact key
    per element (each key expanded once inside the call);
  * the public calls as users make them: ``sk.sign_many(messages)`` and
    ``pk.verify_many(messages, signatures)`` with default arguments on new random 32-byte
    messages each round, interleaved with the CPU backend called directly on the same inputs
    (randomness drawn before; which of the two runs first alternates), median of the rounds:
    the ratio is what the API costs; and the CPU time per element that a call spends outside
    its compiled loops, holding the GIL;
and per compiled kernel an operation-count model next to the measured time: the 64-bit word
operations (AND/XOR/shift; for the element-wise kernels, scalar operations) the kernel's
algorithm performs, divided by this machine's measured rate for such operations in a compiled
streaming loop. "% of model" = model time / measured time: 100% would be the kernel running at the
rate of the simplest vectorised XOR loop.
"""

from __future__ import annotations

import os
import time

import numba as nb
import numpy as np

from . import machine
from ..jit.cache import JIT_CACHE


# -- the machine's rate for word operations ------------------------------------------------------

@nb.njit(cache=JIT_CACHE, nogil=True)
def _masked_xor_loop(acc, row, masks, reps):
    for _ in range(reps):
        for t in range(masks.shape[0]):
            mk = masks[t]
            for q in range(row.shape[0]):
                acc[q] ^= mk & row[q]        # 2 word operations per element


@nb.njit(cache=JIT_CACHE, nogil=True)
def _scalar_op_loop(a, reps):
    s = np.int64(0)
    for r in range(reps):
        for i in range(a.shape[0]):
            x = np.int64(a[i]) ^ r
            s += ((x << 1) ^ (x >> 3)) & 15   # 5 scalar operations per element
    return s


def word_op_rate(seconds: float = 0.2) -> float:
    """64-bit word operations per second, in cache, one thread (the kernels' masked-XOR pattern)."""
    acc = np.zeros(256, np.uint64)
    row = np.arange(256, dtype=np.uint64)
    masks = np.array([0, ~np.uint64(0)] * 4, np.uint64)
    _masked_xor_loop(acc, row, masks, 1)
    reps, best = 64, 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        _masked_xor_loop(acc, row, masks, reps)
        best = max(best, 2 * 256 * masks.size * reps / (time.perf_counter() - t0))
    return best


def scalar_op_rate(seconds: float = 0.2) -> float:
    a = np.arange(4096, dtype=np.uint8)
    _scalar_op_loop(a, 1)
    reps, best = 16, 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        t0 = time.perf_counter()
        _scalar_op_loop(a, reps)
        best = max(best, 5 * a.size * reps / (time.perf_counter() - t0))
    return best


# -- operation counts of the kernels' algorithms -------------------------------------------------

def _mul_add(limbs):                 # one bitsliced scalar multiply-accumulate: 4 masks + 28 ops per limb
    return 4 + 28 * limbs


def op_counts(p) -> dict:
    """Word (or scalar) operations of one call of each kernel, for parameter set p.

    The product kernels split each scalar into four bit masks and, per (scalar, m-vector)
    term, do one AND and one XOR per word for each bit: 8 W word operations a term.
    Verification's ``public_pairs`` XORs each term into a bucket (W words a term) and combines
    16 buckets in about 36 W. The CPU whip and solver work on bitsliced words
    (``whip_bitsliced``, ``sample_solution_bitsliced``); the GPU kernels' formulations (masked
    products in verification, the whip on elements) have their own entries, which
    ``pqforge.bench.gpu`` uses.
    """
    n, m, o, v, k, W, limbs = p.n, p.m, p.o, p.v, p.k, p.words, p.limbs
    E = k * (k + 1) // 2
    ko = k * o

    def product(J, R, C, triangular):
        terms = R * (J * (J + 1) // 2 if triangular else J * C)
        return 8 * W * terms + R * C * 4 * _mul_add(limbs)
    pairs_verify = product(n, k, n, True) + product(n, k, k, False)                  # s^T P, then (s^T P) s
    buckets_verify = W * k * n * (n + 1) // 2 + W * n * k * k + 36 * W * (n * k + k * k)
    sign_products = product(v, k, o, False) + product(v, k, v, True) + product(v, k, k, False)
    whip_verify = E * (m * 12 + m) + E * 4 * 10                                      # scalar ops
    whip_sign = whip_verify + E * o * 2 * (m * 13) + E * 4 * k * o * 10                # scalar ops
    shift = 16 * limbs                        # a bitsliced vector shifted into place: shift and XOR, 2 words a plane
    hl = (m + E + 63) // 64 - m // 64
    reduce = 24 * hl + 8 * limbs + 16 * hl * sum(bin(c).count("1") for c in p.f_tail)
    Wa = 4 * ((ko + 1 + 63) // 64)
    echelon = ko * m * (2 * Wa + _mul_add(Wa // 4) + 12)
    solve = ko * m * 12 + m * m * 4 * (Wa // 4) * 2 + echelon                         # GPU: elements in, rows
    # the back substitution, per column: its pivot row's inner product with x (16 AND, 15 XOR a
    # limb of four planes) and four parities (13 each)
    back = ko * ((Wa // 4) * 31 + 52)
    solve_bitsliced = ko * _mul_add(limbs) + (Wa // 4) * limbs * 4 * 1152 + back + echelon
    return {"quadratic_pairs (verify)": ("word", pairs_verify), "whip (verify)": ("scalar", whip_verify),
            "public_pairs (verify)": ("word", buckets_verify),
            "whip_bitsliced (verify)": ("word", E * shift + reduce),
            "products (sign)": ("word", sign_products), "whip (sign)": ("scalar", whip_sign),
            "whip_bitsliced (sign)": ("word", (E + o * k * k) * shift + (ko + 1) * reduce),
            "sample_solution (sign)": ("word", solve),
            "sample_solution_bitsliced (sign)": ("word", solve_bitsliced)}


def _kernel_calls(p, sk, msg):
    """Zero-argument callables running each CPU kernel once on real inputs (one instance)."""
    from ..mayo import batch_data, kernels
    esk = sk.expanded()
    epk = sk.public_key().expanded()
    sig = sk.sign(msg)
    S = batch_data.signature_vectors(p, [sig])[0]
    f_tail = p.f_tail_array
    W = p.words
    U = np.zeros((p.k, p.k, W), np.uint64)
    kernels.public_pairs(S, epk.P, U)
    V = np.random.default_rng(0).integers(0, 16, (p.k, p.v), dtype=np.uint8)
    Vt = np.ascontiguousarray(V.T)
    M = np.zeros((p.k, p.o, W), np.uint64)
    Uv = np.zeros((p.k, p.k, W), np.uint64)
    A = np.zeros((W, p.k * p.o), np.uint64)
    y = np.zeros(W, np.uint64)
    r = np.zeros(p.k * p.o, np.uint8)
    x = np.zeros(p.k * p.o, np.uint8)

    def products():
        kernels.mul_transposed(Vt, esk.L, False, M)
        kernels.quadratic_pairs(V, esk.P1, Uv)

    products()
    kernels.whip_bitsliced(Uv, M, p.m, f_tail, y, A)
    empty_m, empty_a = np.zeros((p.k, 0, W), np.uint64), np.zeros((W, 0), np.uint64)
    return {
        "public_pairs (verify)": lambda: kernels.public_pairs(S, epk.P, U),
        "whip_bitsliced (verify)": lambda: kernels.whip_bitsliced(U, empty_m, p.m, f_tail, y.copy(), empty_a),
        "products (sign)": products,
        "whip_bitsliced (sign)": lambda: kernels.whip_bitsliced(Uv, M, p.m, f_tail, y.copy(), A.copy()),
        "sample_solution_bitsliced (sign)": lambda: kernels.sample_solution_bitsliced(A, y, p.m, r, x),
    }


def _median_time(fn, min_seconds=0.2, min_runs=5) -> float:
    fn()
    times = []
    start = time.perf_counter()
    while len(times) < min_runs or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def _throughput(fn, count, repeats=3):
    """(best ops/s, CPU seconds per wall second) over a few runs of fn() doing ``count`` operations."""
    fn()
    best, cpu_ratio = 0.0, 0.0
    for _ in range(repeats):
        w, c = time.perf_counter(), time.process_time()
        fn()
        dw, dc = time.perf_counter() - w, time.process_time() - c
        if count / dw > best:
            best, cpu_ratio = count / dw, dc / dw
    return best, cpu_ratio


def gil_held(alg, batch_size: int, rounds: int = 7) -> dict:
    """Microseconds per element that a one-key batch call spends outside its compiled loops (in
    Python, holding the GIL, where the threads of a batch wait for each other): the CPU time of
    the whole call on one thread minus that of its compiled loops (with the byte joins that feed
    them) on the same inputs, least of ``rounds`` (thread CPU time, so other processes on the
    machine hardly move it)."""
    from ..mayo import batch_cpu, batch_data
    p = alg.params
    sk = alg.generate_private_key()
    pk = sk.public_key()
    msgs = [os.urandom(32) for _ in range(batch_size)]
    sigs = sk.sign_many(msgs, threads=1, backend="cpu")
    esk = sk.expanded()
    key = batch_cpu.verification_form(pk.expanded(), batch_size)
    data, offsets, rows = batch_data.verification_arrays(p, msgs, sigs, range(batch_size))
    verdicts = np.zeros(batch_size, np.bool_)
    randomness = [os.urandom(p.salt_bytes) for _ in range(batch_size)]
    salts, T, V, R = batch_data.signing_inputs(p, msgs, randomness, [esk.seed_sk])
    S, ok = np.zeros((batch_size, p.k * p.n), np.uint8), np.zeros(batch_size, np.bool_)

    def sign_loops():
        batch_data.signing_inputs(p, msgs, randomness, [esk.seed_sk])
        batch_cpu.sign_loop(p, esk, V, R, T, S, ok)

    def least(fn):
        fn()
        out = []
        for _ in range(rounds):
            c = time.thread_time()
            fn()
            out.append((time.thread_time() - c) / batch_size * 1e6)
        return min(out)

    calls = {"verify": (lambda: pk.verify_many(msgs, sigs, threads=1, backend="cpu"),
                        lambda: batch_cpu.verify_loop(p, key, data, offsets, rows, verdicts)),
             "sign": (lambda: sk.sign_many(msgs, threads=1, backend="cpu"), sign_loops)}
    res = {}
    for op, (whole, loops) in calls.items():
        w, c = least(whole), least(loops)
        res[op] = {"whole_us": w, "compiled_us": c, "gil_us": w - c}
    return res


def public_calls(alg, batch_size: int, rounds: int = 7, threads=None) -> dict:
    """Signatures and verifications per second through the public calls (default arguments,
    new random messages each round) and through the CPU backend directly on the same inputs,
    interleaved round by round; medians, their ratio, and the CPU seconds per wall second."""
    from ..mayo.engine.inputs import draw_randomness
    from ..mayo.engine.pool import check_threads
    from ..mayo.batch_cpu import CPU
    p = alg.params
    sk = alg.generate_private_key()
    pk = sk.public_key()
    th = check_threads(threads)
    timings = {name: [] for name in ("sign public", "sign engine", "verify public", "verify engine")}

    def timed(name, fn):
        w, c = time.perf_counter(), time.process_time()
        result = fn()
        dw = time.perf_counter() - w
        timings[name].append((batch_size / dw, (time.process_time() - c) / dw))
        return result

    for r in range(rounds + 1):                # round 0 warms up (compiles, expands the keys)
        msgs = [os.urandom(32) for _ in range(batch_size)]
        randomness, out = draw_randomness(None, batch_size, p.salt_bytes), [None] * batch_size
        good, verdicts = np.arange(batch_size), np.zeros(batch_size, np.bool_)
        sign = [("sign public", lambda: sk.sign_many(msgs, threads=threads)),
                ("sign engine", lambda: CPU.sign_one_key(p, sk, msgs, randomness, out, th))]
        verify = [("verify public", lambda: pk.verify_many(msgs, sigs, threads=threads)),
                  ("verify engine", lambda: CPU.verify_one_key(p, pk, msgs, sigs, good, verdicts, th))]
        for name, fn in sign[::1 - 2 * (r % 2)]:      # odd rounds: the engine first
            result = timed(name, fn)
            if name == "sign public":
                sigs = result
        for name, fn in verify[::1 - 2 * (r % 2)]:
            timed(name, fn)
        if r == 0:
            timings = {name: [] for name in timings}
    res = {name: {"per_s": float(np.median([v[0] for v in vals])),
                  "cpu_per_wall": float(np.median([v[1] for v in vals]))} for name, vals in timings.items()}
    for op in ("sign", "verify"):
        res[op + " ratio"] = res[op + " public"]["per_s"] / res[op + " engine"]["per_s"]
    return res


# -- the benchmark -------------------------------------------------------------------------------

def run(alg_names=None, batch_size=512, distinct=128, threads=None, seconds=0.2, progress=None,
        kernels_too=True, rounds=7) -> dict:
    from ..mayo.engine.pool import cpu_threads
    from ..mayo import ALGORITHMS, get
    from ..mayo import verify_many as verify_distinct, sign_many as sign_distinct
    threads = threads or cpu_threads()
    algs = [get(a) for a in (alg_names or ALGORITHMS)]
    rates = {"word": word_op_rate(seconds), "scalar": scalar_op_rate(seconds)}
    out = {"machine": machine(), "threads": threads, "batch": batch_size, "distinct": distinct,
           "word_ops_per_s": rates["word"], "scalar_ops_per_s": rates["scalar"], "sets": []}
    for alg in algs:
        p = alg.params
        say = progress or (lambda s: None)
        say(f"{alg.name}: keys and signatures")
        sk = alg.generate_private_key()
        pk = sk.public_key()
        sk.expanded(), pk.expanded()
        msgs = [os.urandom(32) for _ in range(batch_size)]
        sigs = sk.sign_many(msgs, backend="cpu")
        row = {"alg": alg.name, "same_key": {}, "distinct_keys": {}, "kernels": []}
        for th in sorted({1, threads}):
            say(f"{alg.name}: same key, {th} thread(s)")
            v, vc = _throughput(lambda: pk.verify_many(msgs, sigs, backend="cpu", threads=th), batch_size)
            s, sc = _throughput(lambda: sk.sign_many(msgs, backend="cpu", threads=th), batch_size, repeats=2)
            row["same_key"][th] = {"verify_per_s": v, "verify_cpu_per_wall": vc, "sign_per_s": s, "sign_cpu_per_wall": sc}
        say(f"{alg.name}: distinct keys")
        keys = alg.generate_private_keys(distinct, backend="cpu")
        d_msgs = msgs[:distinct] if distinct <= batch_size else [os.urandom(32) for _ in range(distinct)]
        csks = [key.private_bytes_raw() for key in keys]
        cpks = [key.public_key().public_bytes_raw() for key in keys]
        d_sigs = sign_distinct(alg, csks, d_msgs, backend="cpu")
        kg, _ = _throughput(lambda: alg.generate_private_keys(distinct, backend="cpu", threads=threads), distinct, 1)
        ds, _ = _throughput(lambda: sign_distinct(alg, csks, d_msgs, backend="cpu", threads=threads), distinct, 1)
        dv, _ = _throughput(lambda: verify_distinct(alg, cpks, d_msgs, d_sigs, backend="cpu", threads=threads),
                            distinct, 1)
        row["distinct_keys"] = {"keygen_per_s": kg, "sign_per_s": ds, "verify_per_s": dv}
        say(f"{alg.name}: public calls against the CPU backend, {rounds} rounds")
        row["public"] = public_calls(alg, batch_size, rounds, threads)
        row["gil_held"] = gil_held(alg, min(batch_size, 1024), rounds)
        if kernels_too:
            say(f"{alg.name}: kernels")
            counts = op_counts(p)
            for name, fn in _kernel_calls(p, sk, msgs[0]).items():
                kind, ops = counts[name]
                measured = _median_time(fn, seconds)
                model = ops / rates[kind]
                row["kernels"].append({"kernel": name, "ops": ops, "kind": kind, "model_us": model * 1e6,
                                       "measured_us": measured * 1e6, "pct_of_model": 100 * model / measured})
        out["sets"].append(row)
    return out


def table(res: dict) -> str:
    th = res["threads"]
    lines = [f"{res['machine']['date']}, {res['machine']['processor']}, {res['machine']['cpus']} CPUs; "
             f"batch {res['batch']} (same key, expanded key cached), {res['distinct']} distinct keys; "
             f"word-op rate {res['word_ops_per_s'] / 1e9:.2f} G/s, scalar-op rate {res['scalar_ops_per_s'] / 1e9:.2f} G/s",
             "",
             f"| set | verify/s 1 thr | verify/s {th} thr | sign/s 1 thr | sign/s {th} thr | "
             f"keygen/s distinct | sign/s distinct | verify/s distinct |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in res["sets"]:
        one, many = r["same_key"][1], r["same_key"][th]
        d = r["distinct_keys"]
        lines.append(f"| {r['alg']} | {one['verify_per_s']:,.0f} | {many['verify_per_s']:,.0f} "
                     f"(cpu x{many['verify_cpu_per_wall']:.2f}) | {one['sign_per_s']:,.0f} | {many['sign_per_s']:,.0f} "
                     f"(cpu x{many['sign_cpu_per_wall']:.2f}) | {d['keygen_per_s']:,.0f} | {d['sign_per_s']:,.0f} | "
                     f"{d['verify_per_s']:,.0f} |")
    lines += ["", f"Public calls with default arguments (new messages each round) against the CPU backend called "
              f"directly, interleaved, median of rounds, batch {res['batch']}:", "",
              "| set | sign/s public | sign/s engine | ratio | verify/s public | verify/s engine | ratio |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for r in res["sets"]:
        pc = r["public"]
        lines.append(f"| {r['alg']} | " + " | ".join(
            f"{pc[op + ' public']['per_s']:,.0f} (cpu x{pc[op + ' public']['cpu_per_wall']:.2f}) | "
            f"{pc[op + ' engine']['per_s']:,.0f} (cpu x{pc[op + ' engine']['cpu_per_wall']:.2f}) | {pc[op + ' ratio']:.2f}"
            for op in ("sign", "verify")) + " |")
    lines += ["", "CPU time per element on one thread (least of the rounds): the whole call, its compiled loops, "
              "and the difference, spent in Python holding the GIL:", "",
              "| set | sign µs whole | compiled | GIL-held | verify µs whole | compiled | GIL-held |",
              "|---|---:|---:|---:|---:|---:|---:|"]
    for r in res["sets"]:
        g = r["gil_held"]
        lines.append(f"| {r['alg']} | " + " | ".join(f"{g[op]['whole_us']:.1f} | {g[op]['compiled_us']:.1f} | "
                                                    f"{g[op]['gil_us']:.1f}" for op in ("sign", "verify")) + " |")
    if any(r["kernels"] for r in res["sets"]):
        lines += ["", "| set | kernel | ops (kind) | model µs | measured µs | % of model |", "|---|---|---:|---:|---:|---:|"]
        for r in res["sets"]:
            for kr in r["kernels"]:
                lines.append(f"| {r['alg']} | {kr['kernel']} | {kr['ops']:,.0f} ({kr['kind']}) | {kr['model_us']:,.1f} | "
                             f"{kr['measured_us']:,.1f} | {kr['pct_of_model']:.0f}% |")
    return "\n".join(lines)
