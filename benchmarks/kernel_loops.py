"""Single kernels timed inside compiled loops (no interpreter or dispatcher in the timed region):
MAYO's solution sampling, the compiled Keccak and SHAKE256 (beside hashlib's, called from
Python), Classic McEliece's bitsliced product, decoding steps and whole compiled decapsulation.

    python benchmarks/kernel_loops.py [--rounds 7] [--calls 500]

Prints one JSON object: microseconds per call, the least over the rounds. It imports whichever
pqforge is first on the path, so ``PYTHONPATH=<other checkout>/src`` times another commit with
the same script (interleave the two, several times: the machines are noisy).
"""

import argparse
import hashlib
import json
import time

import numba as nb
import numpy as np

import pqforge
from pqforge import mceliece, shake
from pqforge.mayo import kernels as mk
from pqforge.mceliece import decode, fft, gf, scheme


def _loop(kernel):
    if getattr(kernel, "targetoptions", {}).get("inline") == "always":
        kernel = nb.njit(kernel.py_func)    # numba inlines no call with *args: a compiled copy of its own
    @nb.njit
    def run(calls, args):
        for _ in range(calls):
            kernel(*args)
    return run


def _least(run, args, rounds, calls):
    run(1, args)                                    # compile
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        run(calls, args)
        best = min(best, (time.perf_counter() - start) / calls)
    return round(best * 1e6, 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=500)
    a = ap.parse_args()
    pqforge.retain_freed_heap()     # the allocator as the command line sets it
    rng = np.random.default_rng(1)
    out = {}

    # MAYO-2's system: m = 64 equations, k o = 68 unknowns (random over all 64 bits of each word, so full rank)
    m, ko = 64, 68
    system = (rng.integers(0, 2**64, (4, ko), dtype=np.uint64), rng.integers(0, 2**64, 4, dtype=np.uint64), m,
              rng.integers(0, 16, ko, dtype=np.uint8), np.zeros(ko, np.uint8))
    out["mayo2 sample_solution_bitsliced"] = _least(_loop(mk.sample_solution_bitsliced), system, a.rounds, a.calls)

    # SHAKE256: one permutation, a 56-byte input (M_digest || salt) to 32 bytes, and 1 MiB (µs per MiB)
    state, short, mib = np.zeros(25, np.uint64), rng.integers(0, 256, 56, dtype=np.uint8), np.zeros(1 << 20, np.uint8)
    out["keccak_f1600"] = _least(_loop(shake.keccak_f1600), (state,), a.rounds, a.calls * 20)
    out["shake256 56 -> 32 bytes"] = _least(_loop(shake.shake256_into), (short, np.empty(32, np.uint8), state),
                                            a.rounds, a.calls * 20)
    out["shake256 1 MiB"] = _least(_loop(shake.shake256_into), (mib, np.empty(32, np.uint8), state), a.rounds, 3)
    for label, data, calls in (("56 -> 32 bytes", short.tobytes(), a.calls * 20), ("1 MiB", mib.tobytes(), 3)):
        best = float("inf")
        for _ in range(a.rounds):
            start = time.perf_counter()
            for _ in range(calls):
                hashlib.shake_256(data).digest(32)
            best = min(best, (time.perf_counter() - start) / calls)
        out[f"hashlib shake_256 {label} (a call from Python)"] = round(best * 1e6, 2)

    taps = {12: np.array([3, 0], np.int64), 13: np.array([4, 3, 1, 0], np.int64)}
    for planes, words in ((12, 32), (12, 64), (13, 64), (13, 128)):
        x, y = (rng.integers(-2**63, 2**63, (planes, words), dtype=np.int64) for _ in range(2))
        out[f"vec_mul ({planes}, {words})"] = _least(_loop(gf.vec_mul), (np.empty_like(x), x, y, planes, taps[planes]),
                                                     a.rounds, a.calls)

    p = mceliece.get("Classic-McEliece-348864").params
    _, sk = mceliece.keypair(p.name)
    g, _, _ = scheme.secret_key_parts(p, sk)
    fpoly, ftaps, ev_powers, ev_Uw, ev_Ub, xt, sy_powers, sy_Uw, sy_Ub = scheme.decoding_constants(p)
    values = np.empty((p.m, (1 << p.m) >> 6), np.int64)
    decode._monic_values(g, ev_powers, ev_Uw, ev_Ub, xt, p.m, values)
    consts = fft.fft_coefficients(g, ev_powers, p.m)
    steps = {
        "348864 g at every element (_monic_values)": (decode._monic_values,
                                                      (g, ev_powers, ev_Uw, ev_Ub, xt, p.m, np.empty_like(values))),
        "348864 1/g^2 (_inverse_square_12)": (decode._inverse_square_12, (values, ftaps, np.empty_like(values))),
        "348864 fft_evaluate": (fft.fft_evaluate, (consts, ev_Uw, ev_Ub, p.m)),
        # the transposed FFT overwrites its input: time it on a fresh copy each call
        "348864 error locator (_locator_12: Berlekamp-Massey, made monic)": (
            decode._locator_12, (rng.integers(0, 1 << p.m, 2 * p.t, dtype=np.int64), p.t, fpoly, np.empty(p.t, np.int64))),
        "348864 power sums (copy + fft_transposed)": (
            nb.njit(lambda E, Uw, Ub, powers, m: fft.fft_transposed(E.copy(), Uw, Ub, powers, m)),
            (values, sy_Uw, sy_Ub, sy_powers, p.m)),
    }
    # the whole compiled decapsulation (private key parsed, decoding, the hash input selected)
    for name in ("Classic-McEliece-348864", "Classic-McEliece-8192128"):
        q = mceliece.get(name).params
        pk, sk = mceliece.keypair(name)
        ct, _ = mceliece.encapsulate(name, pk)
        steps[f"{name[17:]} decapsulation core (decap_preimage_bytes)"] = (
            decode.decap_preimage_bytes, (ct, sk, q.m, q.n, q.t, q.semi_systematic, *scheme.decoding_constants(q),
                                          decode.units(q.m)))
    for name, (kernel, args) in steps.items():
        out[name] = _least(_loop(kernel), args, a.rounds, a.calls)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
