"""The CUDA backend of batched MAYO (``CUDA``, the engine's ``SignatureBackend``): batching,
transfers, device-memory limits, errors.

Keys are expanded on the device once per distinct key and shared by its elements; batches are
cut into launches that keep the per-element scratch near 1 GiB. Randomness is drawn on the host
(in the order ``pqforge.mayo.batch`` documents) and passed in per element.
"""

from __future__ import annotations

import numpy as np
from numba import cuda

from ..engine.backends import SignatureBackend
from ...errors import InvalidKey
from ..scheme import NO_FULL_RANK
from . import aes, keccak, out_of_memory_as_error
from .verify import kernels_for

THREADS_PER_BLOCK = 64
SIMULATOR_THREADS_PER_BLOCK = 8
# Block size of the per-instance kernels (verification, signing) where another one measured
# better. H200, kernels alone, batch 16384 (BENCHMARKS.md): MAYO-2 verification 4.5 M/s with 32
# threads against 2.8 M/s with 64, signing 347 k/s against 203 k/s. Not measured for the other sets.
INSTANCE_THREADS = {"MAYO-2": 32}


def _tpb() -> int:
    from . import simulator_enabled
    return SIMULATOR_THREADS_PER_BLOCK if simulator_enabled() else THREADS_PER_BLOCK


def _instance_tpb(p) -> int:
    from . import simulator_enabled
    return SIMULATOR_THREADS_PER_BLOCK if simulator_enabled() else INSTANCE_THREADS.get(p.name, THREADS_PER_BLOCK)


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


def _messages_on_device(messages: list[bytes]):
    """The messages as one device byte array and their offsets (the kernels' input form)."""
    offsets = np.zeros(len(messages) + 1, np.int64)
    offsets[1:] = np.cumsum([len(m) for m in messages])
    data = np.frombuffer(b"".join(messages) + b"\0", np.uint8)
    return cuda.to_device(data), cuda.to_device(offsets)


def verify_launch(p, P_d, key_of: np.ndarray, messages: list[bytes], sigs: list[bytes]):
    """(launch, out): inputs copied to the device, and ``launch(threads=None)``, which runs the
    verification kernel into the device array ``out`` (split so that the benchmark can time the
    kernel alone, with any number of threads per block)."""
    _, verify = kernels_for(p)
    B = len(sigs)
    data, offsets = _messages_on_device(messages)
    args = (P_d, cuda.to_device(key_of.astype(np.int32)), data, offsets,
            cuda.to_device(np.frombuffer(b"".join(sigs), np.uint8).reshape(B, p.sig_bytes)),
            cuda.device_array((B, p.k, p.n, p.words), np.uint64))
    out = cuda.device_array(B, np.uint8)
    rho, rc = cuda.to_device(keccak.RHO), cuda.to_device(keccak.RC)
    return (lambda threads=None: verify[B, threads or _instance_tpb(p)](*args, out, rho, rc)), out


def run_verify(p, P_d, key_of: np.ndarray, messages: list[bytes], sigs: list[bytes]) -> np.ndarray:
    """Verdicts (bool) for signatures under the device keys P_d[key_of[i]]."""
    launch, out = verify_launch(p, P_d, key_of, messages, sigs)
    launch()
    return out.copy_to_host().astype(bool)


def _chunk_size(p) -> int:
    """Signatures per launch: the PS scratch (k n W words each) kept near 1 GiB."""
    return max(1, (1 << 30) // (8 * p.k * p.n * p.words))


def _verify_in_chunks(p, P_d, idx, key_of: np.ndarray, messages, sigs, out) -> None:
    """out[idx[i]] = verdict of element idx[i] under the device key P_d[key_of[i]], in launches
    of ``_chunk_size`` signatures."""
    step = _chunk_size(p)
    for lo in range(0, len(idx), step):
        sl = idx[lo:lo + step]
        out[sl] = run_verify(p, P_d, key_of[lo:lo + step], [messages[j] for j in sl], [sigs[j] for j in sl])


def verify_same_key(p, cpk: bytes, messages, sigs, out, good) -> np.ndarray:
    """Verdicts for the well-formed elements ``good`` under one compact key, expanded once on the device."""
    with out_of_memory_as_error(len(good)):
        _verify_in_chunks(p, expand_public_keys(p, [cpk]), good, np.zeros(len(good), np.int64), messages, sigs, out)
    return out


def verify_distinct_keys(p, groups, messages, sigs, out) -> np.ndarray:
    """Verdicts for elements grouped by compact key (key bytes -> [(index, key)]), keys in chunks."""
    items = list(groups.items())
    keys_per_launch = max(1, (1 << 31) // (8 * p.n * p.n * p.words + p.P1_bytes + p.P2_bytes))
    with out_of_memory_as_error(len(out)):
        for lo in range(0, len(items), keys_per_launch):
            part = items[lo:lo + keys_per_launch]
            cpks = [ident for ident, _ in part]
            P_d = expand_public_keys(p, cpks)
            idx, key_of = [], []
            for q, (_, members) in enumerate(part):
                for i, _ in members:
                    idx.append(i)
                    key_of.append(q)
            _verify_in_chunks(p, P_d, idx, np.array(key_of, np.int64), messages, sigs, out)
    return out


# -- key generation and signing ------------------------------------------------------------------

def prepare_secret_keys(p, seeds: list[bytes]) -> dict:
    """Device arrays of the expanded secret keys (O, P1, P2, L, seed_pk) of the compact keys ``seeds``."""
    from .sign import kernels_for as sign_kernels
    seed_expand, expand_secret, _, _ = sign_kernels(p)
    K = len(seeds)
    seeds_d = cuda.to_device(np.frombuffer(b"".join(seeds), np.uint8).reshape(K, p.sk_seed_bytes))
    seed_pk = cuda.device_array((K, p.pk_seed_bytes), np.uint8)
    O = cuda.device_array((K, p.v, p.o), np.uint8)
    seed_expand[(K + 31) // 32, 32](seeds_d, seed_pk, O, cuda.to_device(keccak.RHO), cuda.to_device(keccak.RC))
    ks = aes.keystreams(seed_pk, p.P1_bytes + p.P2_bytes)
    P1 = cuda.device_array((K, p.v, p.v, p.words), np.uint64)
    P2 = cuda.device_array((K, p.v, p.o, p.words), np.uint64)
    L = cuda.device_array((K, p.v, p.o, p.words), np.uint64)
    expand_secret[K, _tpb() * 4](ks, O, P1, P2, L)
    return {"seeds": seeds_d, "seed_pk": seed_pk, "O": O, "P1": P1, "P2": P2, "L": L}


def keygen(p, seeds: list[bytes]) -> list[bytes]:
    """Compact public keys of the secret seeds, computed on the device (chunks of keys)."""
    from .sign import kernels_for as sign_kernels
    kg = sign_kernels(p)[2]
    out = []
    step = max(1, (1 << 30) // (8 * p.words * (p.v * p.v + 3 * p.v * p.o + p.o * p.o) + p.P1_bytes + p.P2_bytes))
    with out_of_memory_as_error(len(seeds)):
        for lo in range(0, len(seeds), step):
            part = seeds[lo:lo + step]
            d = prepare_secret_keys(p, part)
            K = len(part)
            X = cuda.device_array((K, p.v, p.o, p.words), np.uint64)
            P3 = cuda.device_array((K, p.o, p.o, p.words), np.uint64)
            cpk = cuda.device_array((K, p.cpk_bytes), np.uint8)
            kg[K, _tpb() * 4](d["seed_pk"], d["O"], d["P1"], d["P2"], X, P3, cpk)
            out += [row.tobytes() for row in cpk.copy_to_host()]
    return out


def sign_launch(p, keys: dict, key_of: np.ndarray, messages: list[bytes], randomness: list[bytes]):
    """(launch, out, status): inputs copied to the device, and ``launch(threads=None)``, which runs
    the signing kernel into the device arrays ``out`` (signatures) and ``status`` (negative: no
    solution)."""
    from .sign import kernels_for as sign_kernels
    sign = sign_kernels(p)[3]
    B = len(messages)
    data, offsets = _messages_on_device(messages)
    rand = np.frombuffer(b"".join(randomness), np.uint8).reshape(B, p.salt_bytes)
    E = p.k * (p.k + 1) // 2
    KO = p.k * p.o
    scratch = (cuda.device_array((B, p.k, p.v, p.words), np.uint64),                 # v_i^T P1
               cuda.device_array((B, p.m + E, KO + 1), np.uint8),                    # the linear system
               cuda.device_array((B, p.m, 4 * ((KO + 64) // 64)), np.uint64))        # its bitsliced rows
    out = cuda.device_array((B, p.sig_bytes), np.uint8)
    status = cuda.device_array(B, np.int64)
    args = (cuda.to_device(key_of.astype(np.int32)), keys["seeds"], keys["O"], keys["P1"], keys["L"],
            data, offsets, cuda.to_device(rand), *scratch, out, status,
            cuda.to_device(keccak.RHO), cuda.to_device(keccak.RC))
    return (lambda threads=None: sign[B, threads or _instance_tpb(p)](*args)), out, status


def run_sign(p, keys: dict, key_of: np.ndarray, messages: list[bytes], randomness: list[bytes],
             elements=None) -> list[bytes]:
    """Signatures under the prepared device keys keys[...][key_of[i]], salt randomness given per
    message; ``elements[i]`` is message i's index in the caller's batch (for error messages)."""
    launch, out, status = sign_launch(p, keys, key_of, messages, randomness)
    launch()
    st = status.copy_to_host()
    if (st < 0).any():   # for keys made by key generation the chance is below 2^-256, as on the CPU
        first = int(np.argmax(st < 0))
        raise InvalidKey(f"element {first if elements is None else elements[first]}: {NO_FULL_RANK}")
    return [row.tobytes() for row in out.copy_to_host()]


def sign_chunk_size(p) -> int:
    """Signatures per signing launch: the per-element scratch kept near 1 GiB."""
    per = 8 * p.k * p.v * p.words + (p.m + p.k * (p.k + 1) // 2) * (p.k * p.o + 1) + 8 * p.m * 4 * ((p.k * p.o + 64) // 64)
    return max(1, (1 << 30) // per)


def sign_groups(p, groups: list[tuple[bytes, list[int]]], messages, randomness, out) -> None:
    """out[i] for every index i of each (compact secret key, indices) group; keys prepared once each."""
    keys_per_launch = max(1, (1 << 30) // (8 * p.words * (p.v * p.v + 2 * p.v * p.o) + p.P1_bytes + p.P2_bytes))
    with out_of_memory_as_error(len(out)):
        for lo in range(0, len(groups), keys_per_launch):
            part = groups[lo:lo + keys_per_launch]
            dev = prepare_secret_keys(p, [seed for seed, _ in part])
            idx, key_of = [], []
            for q, (_, members) in enumerate(part):
                idx += members
                key_of += [q] * len(members)
            step = sign_chunk_size(p)
            for a in range(0, len(idx), step):
                sl = idx[a:a + step]
                sigs = run_sign(p, dev, np.array(key_of[a:a + step]), [messages[j] for j in sl],
                                [randomness[j] for j in sl], sl)
                for j, sig in zip(sl, sigs):
                    out[j] = sig


# -- the backend ---------------------------------------------------------------------------------

class CudaBackend(SignatureBackend):
    """Compact keys run on the device; groups under expanded keys are left to the CPU."""

    name = "cuda"

    def verify_one_key(self, p, key, messages, sigs, good, out, threads) -> None:
        verify_same_key(p, key.public_bytes_raw(), messages, sigs, out, good)

    def verify_groups(self, p, groups, messages, sigs, out, threads) -> dict:
        verify_distinct_keys(p, {key: g for key, g in groups.items() if len(key) == p.cpk_bytes}, messages, sigs, out)
        return {key: g for key, g in groups.items() if len(key) != p.cpk_bytes}

    def sign_one_key(self, p, key, messages, randomness, out, threads) -> None:
        sign_groups(p, [(key.private_bytes_raw(), list(range(len(messages))))], messages, randomness, out)

    def sign_groups(self, p, groups, messages, randomness, out, threads) -> dict:
        device, host = [], {}
        for ident, g in groups.items():
            key = g[0][1]
            seed = key if isinstance(key, bytes) else key.private_bytes_raw()
            if len(seed) == p.csk_bytes:
                device.append((seed, [i for i, _ in g]))
            else:
                host[ident] = g
        sign_groups(p, device, messages, randomness, out)
        return host

    def public_keys(self, p, seeds, threads) -> list[bytes]:
        return keygen(p, seeds) if seeds else []


CUDA = CudaBackend()
