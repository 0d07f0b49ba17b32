"""Host side of the GPU backend: batching, transfers, device-memory limits, errors.

Only verification runs on the device (keys expanded there once and shared); signing and key
generation requested with ``backend="cuda"`` run on the CPU backend.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..errors import DeviceOutOfMemory
from . import aes, keccak
from .verify import kernels_for

THREADS_PER_BLOCK = 64
SIMULATOR_THREADS_PER_BLOCK = 8


def _tpb() -> int:
    from . import simulator_enabled
    return SIMULATOR_THREADS_PER_BLOCK if simulator_enabled() else THREADS_PER_BLOCK


def _is_oom(exc: BaseException) -> bool:
    text = f"{type(exc).__name__} {exc}".upper()
    return "OUT_OF_MEMORY" in text or "OUT OF MEMORY" in text or isinstance(exc, MemoryError)


def _oom(size: int) -> DeviceOutOfMemory:
    return DeviceOutOfMemory(f"the GPU ran out of memory for a batch of {size}; use a smaller batch "
                             f"or backend='cpu' (the CPU backend is unaffected)")


def expand_public_keys(p, cpks: list[bytes]):
    """Device array (K, n, n, W): the bitsliced P of each compact public key, built on the device."""
    K = len(cpks)
    raw = np.frombuffer(b"".join(cpks), np.uint8).reshape(K, p.cpk_bytes)
    cpk_d = cuda.to_device(raw)
    ks = aes.keystreams(np.ascontiguousarray(raw[:, :p.pk_seed_bytes]), p.P1_bytes + p.P2_bytes)
    return assemble_from_keystream(p, ks, cpk_d)


def assemble_from_keystream(p, ks, cpk_d):
    assemble, _ = kernels_for(p)
    K = cpk_d.shape[0]
    P = cuda.device_array((K, p.n, p.n, p.words), np.uint64)
    assemble[K, _tpb() * 4](ks, cpk_d, P)
    return P


def run_verify(p, P_d, key_of: np.ndarray, messages: list[bytes], sigs: list[bytes]) -> np.ndarray:
    """Verdicts (bool) for signatures under the device keys P_d[key_of[i]]."""
    _, verify = kernels_for(p)
    B = len(sigs)
    offsets = np.zeros(B + 1, np.int64)
    offsets[1:] = np.cumsum([len(m) for m in messages])
    data = np.frombuffer(b"".join(messages) + b"\0", np.uint8)
    S = np.frombuffer(b"".join(sigs), np.uint8).reshape(B, p.sig_bytes)
    PS = cuda.device_array((B, p.k, p.n, p.words), np.uint64)
    out = cuda.device_array(B, np.uint8)
    verify[B, _tpb()](P_d, cuda.to_device(key_of.astype(np.int32)), cuda.to_device(data), cuda.to_device(offsets),
                      cuda.to_device(S), PS, out, cuda.to_device(keccak.RHO), cuda.to_device(keccak.RC))
    return out.copy_to_host().astype(bool)


def _chunk_size(p) -> int:
    """Signatures per launch: the PS scratch (k n W words each) kept near 1 GiB."""
    return max(1, (1 << 30) // (8 * p.k * p.n * p.words))


def verify_same_key(p, cpk: bytes, messages, sigs, out, good) -> np.ndarray:
    """Verdicts for the well-formed elements ``good`` under one compact key, expanded once on the device."""
    try:
        P_d = expand_public_keys(p, [cpk])
        step = _chunk_size(p)
        for lo in range(0, len(good), step):
            idx = good[lo:lo + step]
            out[idx] = run_verify(p, P_d, np.zeros(len(idx), np.int64), [messages[j] for j in idx],
                                  [sigs[j] for j in idx])
    except Exception as exc:
        if _is_oom(exc):
            raise _oom(len(good)) from exc
        raise
    return out


def verify_distinct_keys(p, groups, messages, sigs, out) -> np.ndarray:
    """Verdicts for elements grouped by compact key (key bytes -> [(index, key)]), keys in chunks."""
    items = list(groups.items())
    keys_per_launch = max(1, (1 << 31) // (8 * p.n * p.n * p.words + p.P1_bytes + p.P2_bytes))
    try:
        for lo in range(0, len(items), keys_per_launch):
            part = items[lo:lo + keys_per_launch]
            cpks = [ident for ident, _ in part]
            P_d = expand_public_keys(p, cpks)
            idx, key_of = [], []
            for q, (_, members) in enumerate(part):
                for i, _ in members:
                    idx.append(i)
                    key_of.append(q)
            step = _chunk_size(p)
            for a in range(0, len(idx), step):
                sl = idx[a:a + step]
                out[sl] = run_verify(p, P_d, np.array(key_of[a:a + step]), [messages[j] for j in sl],
                                     [sigs[j] for j in sl])
    except Exception as exc:
        if _is_oom(exc):
            raise _oom(len(out)) from exc
        raise
    return out
