"""Where MAYO's time goes: each step of expansion, signing and verification timed alone.

The steps are the calls that ``pqforge.mayo.scheme`` makes, on prepared inputs, so the figures
add up (up to interpreter overhead) to the whole operations that ``pqforge bench`` reports. The
"whole" rows run the kernels this CPU uses; the steps of the portable (bit-plane) kernels are
listed always, those of the GFNI kernels (rows "GFNI: ...") where they run.
Times are per-thread CPU time (``time.thread_time``), the minimum of many runs, which keeps
other processes on a busy machine out of the figures.
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..gf16 import decode_nibbles, sets
from ..gf16.kernels import bitslice_stream
from ..mayo import kernels, scheme
from ..mayo.kernels import encoded
from ..mayo.params import MayoParams
from ..symmetric import shake256


def _cpu_us(fn, runs: int = 30) -> float:
    fn()
    best = float("inf")
    for _ in range(runs):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best * 1e6


def steps(p: MayoParams) -> dict:
    """Microseconds per step for one parameter set."""
    csk = os.urandom(p.sk_seed_bytes)
    k, o, v, m, W = p.k, p.o, p.v, p.m, p.words
    seed_pk, o_bytes = scheme.seed_expansion(p, csk)
    O = scheme.decode_oil(p, o_bytes)
    stream = scheme.public_stream(p, seed_pk)
    P12 = np.empty((v * (v + 1) // 2 + v * o, p.words), np.uint64)
    bitslice_stream(stream, 2 * p.m_bytes, P12)
    P1 = P12[:v * (v + 1) // 2]
    esk = scheme.expand_sk(p, csk)
    cpk = scheme.public_key_from_seed(p, csk)
    epk = scheme.expand_pk(p, cpk)
    sig = scheme.sign(p, esk, b"m", os.urandom)
    vr = os.urandom(k * p.v_bytes + p.r_bytes)
    nib = decode_nibbles(vr, 2 * len(vr))
    V = np.ascontiguousarray(nib[:2 * k * p.v_bytes].reshape(k, 2 * p.v_bytes)[:, :v])
    r = nib[2 * k * p.v_bytes:2 * k * p.v_bytes + k * o].copy()
    Vt = np.ascontiguousarray(V.T)
    M = np.zeros((k, o, W), np.uint64)
    kernels.mul_transposed(Vt, esk.L, False, M)
    U = np.zeros((k, k, W), np.uint64)
    kernels.quadratic_pairs(V, esk.P1, U)
    f_tail = p.f_tail_array
    A = np.zeros((W, k * o), np.uint64)
    y = np.zeros(W, np.uint64)
    kernels.whip_bitsliced(U, M, m, f_tail, y, A)
    x = np.zeros(k * o, np.uint8)
    s = decode_nibbles(sig, k * p.n).reshape(k, p.n).copy()
    out = {
        "AES-128-CTR P1,P2": _cpu_us(lambda: scheme.public_stream(p, seed_pk, stream)),
        "decode P1,P2": _cpu_us(lambda: bitslice_stream(stream, 2 * p.m_bytes, P12)),
        "O^T P1": _cpu_us(lambda: kernels.mul_transposed_packed(O, P1, np.zeros((o, v, W), np.uint64))),
        "P1 O": _cpu_us(lambda: kernels.mul_packed_rows(P1, O, np.zeros((v, o, W), np.uint64))),
        "keygen (whole)": _cpu_us(lambda: scheme.public_key_from_seed(p, csk)),
        "expand sk (whole)": _cpu_us(lambda: scheme.expand_sk(p, csk)),
        "expand pk (whole)": _cpu_us(lambda: scheme.expand_pk(p, cpk)),
        "sign: v^T L": _cpu_us(lambda: kernels.mul_transposed(Vt, esk.L, False, np.zeros((k, o, W), np.uint64))),
        "sign: v^T P1 v": _cpu_us(lambda: kernels.quadratic_pairs(V, esk.P1, np.zeros((k, k, W), np.uint64))),
        "sign: whip": _cpu_us(lambda: kernels.whip_bitsliced(U, M, m, f_tail, y.copy(), np.zeros((W, k * o), np.uint64))),
        "sign: sample solution": _cpu_us(lambda: kernels.sample_solution_bitsliced(A, y, m, r, x)),
        "sign (whole, expanded)": _cpu_us(lambda: scheme.sign(p, esk, b"m", os.urandom)),
        "verify: s^T P s": _cpu_us(lambda: kernels.public_pairs(s, epk.P, np.zeros((k, k, W), np.uint64))),
        "verify (whole, expanded)": _cpu_us(lambda: scheme.verify(p, epk, b"m", sig)),
        "SHAKE256 (one call)": _cpu_us(lambda: shake256(vr, k * p.v_bytes + p.r_bytes)),
    }
    if sets.ENCODED:
        slots = scheme.public_slots(p, seed_pk)
        chunks, forms = p.zero_chunks, sets.FORMS
        pk_out = np.zeros(p.P3_bytes, np.uint8)
        out.update({
            "encoded: keygen products": _cpu_us(lambda: encoded.public_key_from_slots(
                slots.copy(), np.frombuffer(o_bytes, np.uint8), v, o, chunks, forms, pk_out)),
            "encoded: expansion products": _cpu_us(lambda: encoded.expand_secret_slots(slots.copy(), O, chunks,
                                                                                             forms)),
            "encoded: sign v^T L, v^T P1 v": _cpu_us(lambda: encoded.sign_products(
                V, esk.slots, o, chunks, forms, np.zeros(k * o * W, np.uint64), np.zeros(k * k * W, np.uint64))),
            "encoded: verify P*(s)": _cpu_us(lambda: encoded.evaluate_public(
                s, epk.encoded, v, chunks, forms, f_tail, np.zeros(m, np.uint8), kernels.verify_units())),
        })
    return out


def table(results: dict) -> str:
    names = list(results)
    rows = list(next(iter(results.values())))
    lines = ["| step (µs, CPU time, min) | " + " | ".join(names) + " |", "|---|" + "---:|" * len(names)]
    for row in rows:
        lines.append(f"| {row} | " + " | ".join(f"{results[n][row]:,.0f}" for n in names) + " |")
    return "\n".join(lines)
