"""The device kernels against the official vectors and the specification's primitives.

These tests need ``numba.cuda``: they run in a subprocess under the CUDA simulator
(``test_simulator.py`` starts it, with a reduced set of vectors) or on a real GPU
(``scripts/gpu_check.sh``, all 100 vectors per set). Environment:
  PQFORGE_DEVICE_TESTS  "sim" or "cuda" (unset: this module is skipped)
  PQFORGE_GPU_KATS      official entries per parameter set (default 1 under the simulator, 100 on a GPU)
Under the simulator the full AES expansion of a key costs about ten seconds (MAYO-2; a minute for
MAYO-5), so there the other kernels are fed the keystream of the reference AES (the AES kernel
itself is checked on keystream prefixes of every set), except in the end-to-end MAYO-2
verification, where every step runs on the (simulated) device.
"""

import hashlib
import os

import numpy as np
import pytest

MODE = os.environ.get("PQFORGE_DEVICE_TESTS")
if MODE not in ("sim", "cuda"):
    pytest.skip("device tests run in a subprocess under the simulator (test_simulator.py) or on a GPU "
                "(scripts/gpu_check.sh)", allow_module_level=True)

from numba import cuda  # noqa: E402

from pqforge import kat, mayo  # noqa: E402
from pqforge.mayo import cuda as gpu  # noqa: E402
from pqforge.errors import DeviceOutOfMemory  # noqa: E402
from pqforge.mayo.cuda import aes, keccak  # noqa: E402
from pqforge.mayo.cuda import batch as gpu_batch  # noqa: E402
from pqforge.mayo import scheme  # noqa: E402
from pqforge.symmetric import aes128_ctr  # noqa: E402

from ...known_answers import MAYO_FILES as FILES, mayo_entries  # noqa: E402

SIM = MODE == "sim"
KATS = int(os.environ.get("PQFORGE_GPU_KATS", "1" if SIM else "100"))
_cache = {}


def entries(kat_root, name):
    return mayo_entries(name)[:KATS]


def device_keys(p, cpks):
    """P on the device for the compact keys: all on the device on a GPU; reference keystream under the simulator."""
    key = (p.name, tuple(cpks))
    if key not in _cache:
        if SIM:
            ks = np.stack([np.frombuffer(aes128_ctr(c[:p.pk_seed_bytes], p.P1_bytes + p.P2_bytes), np.uint8)
                           for c in cpks])
            raw = np.stack([np.frombuffer(c, np.uint8) for c in cpks])
            _cache[key] = gpu_batch.assemble_from_keystream(p, cuda.to_device(ks), cuda.to_device(raw))
        else:
            _cache[key] = gpu_batch.expand_public_keys(p, list(cpks))
    return _cache[key]


@pytest.fixture()
def reference_aes_in_sim(monkeypatch):
    """Under the simulator: the reference keystream instead of the AES kernel (checked on its own above)."""
    if SIM:
        monkeypatch.setattr(aes, "keystreams", lambda keys, n: cuda.to_device(np.stack(
            [np.frombuffer(aes128_ctr(bytes(k), n), np.uint8) for k in
             (keys.copy_to_host() if hasattr(keys, "copy_to_host") else keys)])))


def test_shake256_matches_hashlib():
    inputs = [b"", b"abc", bytes(range(135)), bytes(range(136)), bytes(137), os.urandom(500)]
    for outlen in (32, 300):
        got = keccak.shake256_many(inputs, outlen)
        for x, g in zip(inputs, got):
            assert g.tobytes() == hashlib.shake_256(x).digest(outlen)


@pytest.mark.parametrize("name", FILES)
def test_aes_ctr_matches_the_specification(name, kat_root):
    p = mayo.ALGORITHMS[name].params
    es = entries(kat_root, name)
    n = 2100 if SIM else p.P1_bytes + p.P2_bytes        # a partial group of 64 blocks at the end
    seeds = np.stack([np.frombuffer(e["pk"][:p.pk_seed_bytes], np.uint8) for e in es])
    got = aes.keystreams(seeds, n).copy_to_host()
    for e, g in zip(es, got):
        assert g.tobytes() == aes128_ctr(e["pk"][:p.pk_seed_bytes], n)


# under the simulator one set per vector size (MAYO-2: 1 limb, MAYO-1: 2, MAYO-5: 3); MAYO-3 has
# MAYO-1's size (PQFORGE_SIM_ALL_SETS=1 includes it)
SIZE_SETS = [n for n in FILES if not SIM or n != "MAYO-3" or os.environ.get("PQFORGE_SIM_ALL_SETS") == "1"]


@pytest.mark.parametrize("name", SIZE_SETS)
def test_assembled_public_key_matches_expansion(name, kat_root):
    p = mayo.ALGORITHMS[name].params
    es = entries(kat_root, name)
    cpks = tuple(e["pk"] for e in es)
    P = device_keys(p, cpks).copy_to_host()
    for q in sorted({0, len(es) - 1}):
        assert np.array_equal(P[q], scheme.dense_upper(scheme.expand_pk(p, cpks[q]).P, p.n))


@pytest.mark.parametrize("name", SIZE_SETS)
def test_verify_kernel_on_official_vectors(name, kat_root):
    p = mayo.ALGORITHMS[name].params
    es = entries(kat_root, name)
    cpks = tuple(e["pk"] for e in es)
    P = device_keys(p, cpks)
    msgs, sigs, key_of, want = [], [], [], []
    for q, e in enumerate(es):
        sig = e["sm"][:p.sig_bytes]
        msgs.append(e["msg"]), sigs.append(sig), key_of.append(q), want.append(True)
        if q % 2 == 0:     # a flipped bit in the signature vectors
            bad = sig[:q % 40] + bytes([sig[q % 40] ^ 1]) + sig[q % 40 + 1:]
        else:              # a flipped bit in the salt
            bad = sig[:-1] + bytes([sig[-1] ^ 0x80])
        msgs.append(e["msg"]), sigs.append(bad), key_of.append(q), want.append(False)
        if not SIM:        # another key's message
            msgs.append(es[(q + 1) % len(es)]["msg"]), sigs.append(sig), key_of.append(q), want.append(len(es) == 1)
    got = gpu_batch.run_verify(p, P, np.array(key_of), msgs, sigs)
    assert got.tolist() == want


@pytest.mark.parametrize("name", ["MAYO-2"] if SIM else list(FILES))
def test_batch_api_on_the_device_equals_cpu(name, kat_root):
    """pk.verify_many(backend="cuda") from the compact key: every step on the device."""
    alg = mayo.ALGORITHMS[name]
    p = alg.params
    e = entries(kat_root, name)[0]
    pk = alg.public_key_from_bytes(e["pk"])
    sig = e["sm"][:p.sig_bytes]
    msgs = [e["msg"], e["msg"] + b"x", e["msg"], e["msg"]]
    sigs = [sig, sig, sig[:-1], sig[:10] + bytes([sig[10] ^ 2]) + sig[11:]]
    got = pk.verify_many(msgs, sigs, backend="cuda")
    assert got.tolist() == [True, False, False, False]
    assert got.tolist() == pk.verify_many(msgs, sigs, backend="cpu").tolist()


def test_distinct_keys_on_the_device(kat_root, reference_aes_in_sim):
    name = "MAYO-1"
    alg = mayo.ALGORITHMS[name]
    p = alg.params
    es = mayo_entries(name)[:2 if SIM else KATS]
    pks = [e["pk"] for e in es] + [es[0]["pk"], es[0]["pk"][:-1], mayo.expand_pk(alg, es[1]["pk"])]
    msgs = [e["msg"] for e in es] + [es[1]["msg"], es[0]["msg"], es[1]["msg"]]
    sigs = [e["sm"][:p.sig_bytes] for e in es] + [es[0]["sm"][:p.sig_bytes]] * 2 + [es[1]["sm"][:p.sig_bytes]]
    got = mayo.verify_many(alg, pks, msgs, sigs, backend="cuda")
    assert got.tolist() == [True] * len(es) + [False, False, True]


def test_out_of_memory_is_a_clear_error_and_the_cpu_still_works(monkeypatch):
    try:
        cuda.device_array(1 << 50, np.uint8)   # 1 PiB: no device (or simulator host) has it
    except BaseException as exc:  # noqa: BLE001 - whatever the driver raises
        assert gpu.is_out_of_memory(exc), repr(exc)
    sk = mayo.MAYO2.generate_private_key()
    pk = sk.public_key()
    sigs = sk.sign_many([b"a", b"b"])

    def no_memory(*args, **kwargs):
        raise cuda.cudadrv.driver.CudaAPIError(2, "CUDA_ERROR_OUT_OF_MEMORY") if hasattr(cuda, "cudadrv") \
            else MemoryError("out of memory")
    monkeypatch.setattr(gpu_batch, "expand_public_keys", no_memory)
    with pytest.raises(DeviceOutOfMemory, match="smaller batch"):
        pk.verify_many([b"a", b"b"], sigs, backend="cuda")
    assert pk.verify_many([b"a", b"b"], sigs, backend="cpu").tolist() == [True, True]


# sets whose key generation and signing run under the simulator (MAYO-3 and MAYO-5 take about 40 s
# and 2 minutes there; PQFORGE_SIM_ALL_SETS=1 includes them)
SIGN_SETS = list(FILES) if not SIM or os.environ.get("PQFORGE_SIM_ALL_SETS") == "1" else ["MAYO-1", "MAYO-2"]


@pytest.mark.parametrize("name", SIGN_SETS)
def test_keygen_and_sign_on_the_device_reproduce_official_vectors(name, kat_root, reference_aes_in_sim):
    """Each official entry: the DRBG feeds key generation then signing, here on the device."""
    from pqforge.drbg import NistCtrDrbg
    alg = mayo.ALGORITHMS[name]
    for e in entries(kat_root, name):
        rng = NistCtrDrbg(e["seed"])
        (sk,) = alg.generate_private_keys(1, rng=rng, backend="cuda")
        assert sk.private_bytes_raw() == e["sk"]
        assert sk.public_key().public_bytes_raw() == e["pk"]
        (sig,) = sk.sign_many([e["msg"]], rng=rng, backend="cuda")
        assert sig + e["msg"] == e["sm"]


@pytest.mark.parametrize("name", ["MAYO-2"] if SIM else list(FILES))
def test_device_signing_equals_single_signatures(name, reference_aes_in_sim):
    from pqforge.drbg import NistCtrDrbg
    alg = mayo.ALGORITHMS[name]
    count, nkeys = (2, 1) if SIM else (300, 7)     # one key expansion costs seconds in the simulator
    keys = alg.generate_private_keys(nkeys, rng=NistCtrDrbg(bytes(range(48))), backend="cpu")
    sks = [keys[i % nkeys].private_bytes_raw() for i in range(count)]
    msgs = [bytes([i % 256]) * (i % 50) for i in range(count)]
    got = mayo.sign_many(alg, sks, msgs, rng=NistCtrDrbg(bytes(48)), backend="cuda")
    ref = NistCtrDrbg(bytes(48))
    assert got == [mayo.sign(alg, k, m_, rng=ref) for k, m_ in zip(sks, msgs)]


@pytest.mark.parametrize("name", list(FILES))
def test_tensor_path_on_the_device(name, kat_root):
    """CuPy GEMMs (fp16, exact) against the official vectors and the single-signature API; GPU only."""
    if SIM:
        pytest.skip("CuPy does not run under the simulator (the numpy GEMMs are tested in test_tensor.py)")
    pytest.importorskip("cupy")
    from pqforge.drbg import NistCtrDrbg
    alg = mayo.ALGORITHMS[name]
    p = alg.params
    es = entries(kat_root, name)[:20]
    for e in es[:3]:
        pk = alg.public_key_from_bytes(e["pk"])
        sig = e["sm"][:p.sig_bytes]
        got = pk.verify_many([e["msg"], e["msg"] + b"!"], [sig, sig], backend="cuda", path="tensor")
        assert got.tolist() == [True, False]
    sk = alg.private_key_from_bytes(es[0]["sk"])
    msgs = [e["msg"] for e in es]
    got = sk.sign_many(msgs, rng=NistCtrDrbg(bytes(48)), backend="cuda", path="tensor")
    ref = NistCtrDrbg(bytes(48))
    assert got == [sk.sign(m_, rng=ref) for m_ in msgs]
