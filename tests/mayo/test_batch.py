"""Batched MAYO on the CPU: official vectors, equality with the single-instance API, bad input."""

import subprocess
import sys

import numpy as np
import pytest

from pqforge import kat, mayo
from pqforge.drbg import NistCtrDrbg
from pqforge.errors import BackendUnavailable, InvalidInput, InvalidKey, InvalidType
from pqforge.mayo.engine import backends, pool
from pqforge.mayo import batch, batch_cpu
from pqforge.mayo.kernels import batch as batch_kernels

from ..known_answers import MAYO_FILES as FILES, mayo_entries
from .conftest import RUNNABLE, use_kernel_set

ALGS = list(mayo.ALGORITHMS.values())


@pytest.fixture(scope="module")
def official():
    return {name: mayo_entries(name) for name in FILES}


@pytest.fixture(scope="module", params=ALGS, ids=lambda a: a.name)
def keyed(request):
    alg = request.param
    sk = alg.generate_private_key(rng=NistCtrDrbg(bytes(range(48))))
    return alg, sk, sk.public_key()


def in_fresh_interpreter(code: str, timeout: int = 600) -> None:
    """Run ``code`` in a new Python process; fail with its error output if it fails."""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]


class CountingRng:
    def __init__(self, seed=bytes(48)):
        self.inner = NistCtrDrbg(seed)
        self.calls = []

    def __call__(self, n):
        self.calls.append(n)
        return self.inner(n)


@pytest.mark.parametrize("name", FILES)
def test_verify_many_accepts_official_signatures_and_rejects_tampered(name, official):
    alg = mayo.ALGORITHMS[name]
    entries = official[name][:12]
    p = alg.params
    pks = [e["pk"] for e in entries]
    msgs = [e["msg"] for e in entries]
    sigs = [e["sm"][:p.sig_bytes] for e in entries]
    assert batch.verify_many(alg, pks, msgs, sigs, backend="cpu").tolist() == [True] * len(entries)
    # one flipped bit per element, at different places: message, signature body, salt, key
    bad_msgs = [m if i % 4 else bytes([m[0] ^ 1]) + m[1:] for i, m in enumerate(msgs)]
    bad_sigs = [s if i % 4 != 1 else s[:5] + bytes([s[5] ^ 0x10]) + s[6:] for i, s in enumerate(sigs)]
    bad_sigs = [s if i % 4 != 2 else s[:-1] + bytes([s[-1] ^ 1]) for i, s in enumerate(bad_sigs)]
    bad_pks = [k if i % 4 != 3 else k[:-1] + bytes([k[-1] ^ 1]) for i, k in enumerate(pks)]
    got = batch.verify_many(alg, bad_pks, bad_msgs, bad_sigs, backend="cpu", threads=2)
    assert got.tolist() == [False] * len(entries)


@pytest.mark.parametrize("name", FILES)
def test_batch_keygen_and_sign_reproduce_official_vectors(name, official):
    """Each official entry: keygen then sign from one DRBG, here as batches of one."""
    alg = mayo.ALGORITHMS[name]
    for e in official[name][:3]:
        rng = NistCtrDrbg(e["seed"])
        (sk,) = alg.generate_private_keys(1, rng=rng)
        assert sk.private_bytes_raw() == e["sk"]
        assert sk.public_key().public_bytes_raw() == e["pk"]
        (sig,) = sk.sign_many([e["msg"]], rng=rng)
        assert sig + e["msg"] == e["sm"]


def test_sign_many_consumes_rng_like_a_loop_of_single_signs(keyed):
    alg, sk, pk = keyed
    msgs = [bytes([i]) * (7 * i) for i in range(9)]
    r1, r2 = CountingRng(), CountingRng()
    got = sk.sign_many(msgs, rng=r1, threads=2)
    want = [sk.sign(m, rng=r2) for m in msgs]
    assert got == want
    assert r1.calls == r2.calls == [alg.params.salt_bytes] * len(msgs)
    assert pk.verify_many(msgs, got).tolist() == [True] * len(msgs)
    for m, s in zip(msgs, got):
        pk.verify(s, m)


@pytest.mark.parametrize("kernels", RUNNABLE)
def test_one_key_batches_equal_single_calls_on_every_kernel_set(keyed, kernels, monkeypatch):
    """The one-key loops run an encoded set (GFNI, AVX2) on the key's encoding where the CPU has it; the
    portable loops (bit planes, made from the encoding on demand) give the same results."""
    use_kernel_set(monkeypatch, kernels)
    alg, sk, pk = keyed
    msgs = [bytes([i]) * 3 for i in range(12)]
    got = sk.sign_many(msgs, rng=NistCtrDrbg(bytes(48)), threads=2)
    single = NistCtrDrbg(bytes(48))
    assert got == [sk.sign(m, rng=single) for m in msgs]
    got[3] = got[4]
    assert pk.verify_many(msgs, got, threads=2).tolist() == [i != 3 for i in range(12)]


def test_verify_many_one_key_matches_single_verify(keyed):
    alg, sk, pk = keyed
    msgs = [bytes([i, 1, 2]) for i in range(10)]
    sigs = [sk.sign(m) for m in msgs]
    sigs[2] = sigs[2][:-1]                                    # wrong length
    sigs[4] = bytes([sigs[4][0] ^ 4]) + sigs[4][1:]           # tampered
    sigs[7] = sigs[8]                                         # signature of another message
    want = [mayo.verify(alg, pk.public_bytes_raw(), m, s) if len(s) == alg.signature_size else False
            for m, s in zip(msgs, sigs)]
    for threads in (1, 2):
        got = pk.verify_many(msgs, sigs, threads=threads)
        assert got.dtype == np.bool_ and got.tolist() == want
    assert want.count(True) == 7


def test_distinct_keys_equal_loops_of_single_calls(keyed):
    alg, _, _ = keyed
    keys = alg.generate_private_keys(3, rng=NistCtrDrbg(bytes(range(1, 49))))
    ref = NistCtrDrbg(bytes(range(1, 49)))
    assert [k.public_key() for k in keys] == [alg.generate_private_key(rng=ref).public_key() for _ in range(3)]
    # compact bytes, expanded bytes and key objects, with repeats (shared expansion)
    esk = mayo.expand_sk(alg, keys[1].private_bytes_raw())
    sks = [keys[0].private_bytes_raw(), esk, keys[2], keys[0].private_bytes_raw(), keys[2]]
    msgs = [b"a", b"bb", b"", b"dddd", b"e" * 100]
    got = mayo.sign_many(alg, sks, msgs, rng=NistCtrDrbg(bytes(48)), threads=2)
    ref = NistCtrDrbg(bytes(48))
    singles = [mayo.sign(alg, k if isinstance(k, bytes) else k.private_bytes_raw(), m, rng=ref)
               for k, m in zip(sks, msgs)]
    assert got == singles
    pks = [keys[0].public_key().public_bytes_raw(), mayo.expand_pk(alg, keys[1].public_key().public_bytes_raw()),
           keys[2].public_key(), keys[0].public_key(), keys[2].public_key().public_bytes_raw()]
    assert mayo.verify_many(alg, pks, msgs, got).tolist() == [True] * 5
    swapped = mayo.verify_many(alg, pks, msgs[1:] + msgs[:1], got)
    assert swapped.tolist() == [False] * 5


@pytest.mark.parametrize("kernels", RUNNABLE)
@pytest.mark.parametrize("chunk_bytes", [1, 1 << 30], ids=["one key per chunk", "one chunk"])
def test_fresh_key_chunks_give_the_single_verdicts(monkeypatch, chunk_bytes, kernels):
    """Key byte strings shared by few elements are assembled one after another in one buffer per
    chunk (``_verify_fresh_keys``): every element gets its own key's verdict, however the keys
    fall into chunks, with either kernel set."""
    use_kernel_set(monkeypatch, kernels)
    monkeypatch.setattr(batch_cpu, "FRESH_KEY_BYTES", chunk_bytes)
    alg = mayo.MAYO1
    keys = alg.generate_private_keys(5, rng=NistCtrDrbg(bytes(range(2, 50))))
    msgs = [b"m%d" % i for i in range(10)]
    sks = [keys[i % 5] for i in range(10)]
    sigs = mayo.sign_many(alg, sks, msgs, rng=NistCtrDrbg(bytes(48)))
    cpks = [k.public_key().public_bytes_raw() for k in keys]
    pks = [cpks[i % 5] if i != 7 else mayo.expand_pk(alg, cpks[2]) for i in range(10)]
    sigs[3] = sigs[4]                        # another key's signature
    msgs[6] = b"changed"                     # another message
    want = [mayo.verify(alg, pk, m, s) for pk, m, s in zip(pks, msgs, sigs)]
    assert want == [True, True, True, False, True, True, False, True, True, True]
    assert mayo.verify_many(alg, pks, msgs, sigs, threads=2).tolist() == want
    assert mayo.verify_many(alg, pks, msgs, sigs, threads=1).tolist() == want


@pytest.mark.parametrize("kernels", RUNNABLE)
@pytest.mark.parametrize("chunk_bytes", [1, 1 << 30], ids=["one key per chunk", "one chunk"])
def test_fresh_secret_keys_give_the_single_signatures(monkeypatch, chunk_bytes, kernels):
    """Compact secret keys shared by few elements are expanded one after another into reused
    buffers (``_sign_fresh_keys``): the same signatures as single calls, however the keys fall
    into chunks, with either kernel set, and the same again when every first attempt is taken
    as rank-deficient (the retry path)."""
    use_kernel_set(monkeypatch, kernels)
    monkeypatch.setattr(batch_cpu, "FRESH_KEY_BYTES", chunk_bytes)
    alg = mayo.MAYO1
    seeds = [k.private_bytes_raw() for k in alg.generate_private_keys(4, rng=NistCtrDrbg(bytes(range(3, 51))))]
    sks = [seeds[i % 4] for i in range(7)]
    msgs = [b"n%d" % i for i in range(7)]
    ref = NistCtrDrbg(bytes(48))
    singles = [mayo.sign(alg, sk, m, rng=ref) for sk, m in zip(sks, msgs)]
    assert mayo.sign_many(alg, sks, msgs, rng=NistCtrDrbg(bytes(48)), threads=2) == singles
    for loop in ("sign_fresh_keys", "sign_fresh_keys_encoded"):                   # every ok stays False
        monkeypatch.setattr(batch_kernels, loop, lambda *args: None)
    assert mayo.sign_many(alg, sks, msgs, rng=NistCtrDrbg(bytes(48)), threads=1) == singles


def test_malformed_elements():
    alg = mayo.MAYO2
    sk = alg.generate_private_key()
    pk = sk.public_key()
    msgs = [b"x", b"y", b"z"]
    sigs = sk.sign_many(msgs)
    # verification: a wrong-length key or signature is just that element invalid
    pks = [pk.public_bytes_raw(), pk.public_bytes_raw()[:-1], pk.public_bytes_raw()]
    assert mayo.verify_many(alg, pks, msgs, sigs).tolist() == [True, False, True]
    assert mayo.verify_many(alg, [pk] * 3, msgs, [sigs[0], sigs[1] + b"\0", sigs[2]]).tolist() == [True, False, True]
    with pytest.raises(InvalidType, match="signature 1"):   # a wrong type is the caller's error
        pk.verify_many(msgs, [sigs[0], "text", sigs[2]])
    # signing: a malformed key or message raises naming its index, before drawing randomness
    rng = CountingRng()
    with pytest.raises(InvalidKey, match="element 1"):
        mayo.sign_many(alg, [sk, b"short", sk], msgs, rng=rng)
    with pytest.raises(InvalidKey, match="secret key 2"):
        mayo.sign_many(alg, [sk, sk, mayo.MAYO1.generate_private_key()], msgs, rng=rng)
    with pytest.raises(InvalidType, match="message 2"):
        sk.sign_many([b"a", b"b", "c"], rng=rng)
    assert rng.calls == []
    with pytest.raises(InvalidInput):
        alg.generate_private_keys(-1)
    with pytest.raises(InvalidType):
        alg.generate_private_keys(2.5)


def test_key_of_another_set_is_an_invalid_element_in_any_form():
    alg = mayo.MAYO2
    sk = alg.generate_private_key()
    pk, other = sk.public_key(), mayo.MAYO1.generate_private_key().public_key()
    sigs = sk.sign_many([b"a", b"b"])
    for foreign in (other, other.public_bytes_raw()):
        assert mayo.verify_many(alg, [pk, foreign], [b"a", b"b"], sigs).tolist() == [True, False]


def test_numpy_fixed_width_bytes_are_refused():
    """numpy's S dtype drops trailing zero bytes, which would silently change signatures and messages."""
    sk = mayo.MAYO2.generate_private_key()
    pk = sk.public_key()
    sig = sk.sign(b"abc\x00")
    with pytest.raises(InvalidType, match="trailing zero bytes"):
        sk.sign_many(np.array([b"abc\x00"]))
    with pytest.raises(InvalidType, match="trailing zero bytes"):
        pk.verify_many(np.array([b"abc\x00"]), [sig])
    with pytest.raises(InvalidType, match="message 1 is a numpy.bytes_"):
        sk.sign_many([b"x", np.bytes_(b"abc")])
    with pytest.raises(InvalidType, match="numpy.bytes_"):
        pk.verify(np.bytes_(sig), b"abc\x00")
    # an array of dtype object keeps the bytes as they are
    assert pk.verify_many(np.array([b"abc\x00"], dtype=object), np.array([sig], dtype=object)).tolist() == [True]


@pytest.mark.parametrize("threads, error", [("2", InvalidType), (1.5, InvalidType), (True, InvalidType),
                                            ([2], InvalidType), (0, InvalidInput), (-1, InvalidInput),
                                            (pool.MAX_THREADS + 1, InvalidInput)])
def test_bad_thread_counts_raise_before_any_work(threads, error):
    alg = mayo.MAYO2
    sk = alg.generate_private_key()
    pk = sk.public_key()
    rng = CountingRng()
    calls = [lambda: sk.sign_many([b"a"], rng=rng, threads=threads),
             lambda: sk.sign_many([b"a"], rng=rng, threads=threads, path="tensor"),
             lambda: sk.sign_many([], rng=rng, threads=threads),
             lambda: mayo.sign_many(alg, [sk], [b"a"], rng=rng, threads=threads),
             lambda: alg.generate_private_keys(1, rng=rng, threads=threads),
             lambda: pk.verify_many([b"a"], [b"not a signature"], threads=threads),
             lambda: mayo.verify_many(alg, [pk], [b"a"], [b"x"], threads=threads)]
    for call in calls:
        with pytest.raises(error, match="threads"):
            call()
    assert rng.calls == []


def test_bad_backend_raises_before_any_work_even_for_empty_batches():
    alg = mayo.MAYO2
    sk = alg.generate_private_key()
    rng = CountingRng()
    for call in (lambda: sk.sign_many([b"a"], rng=rng, backend="gpu"),
                 lambda: sk.sign_many([], rng=rng, backend="gpu"),
                 lambda: mayo.sign_many(alg, [sk], [b"a"], rng=rng, backend="gpu"),
                 lambda: alg.generate_private_keys(0, rng=rng, backend="gpu"),
                 lambda: sk.public_key().verify_many([b"a"], [b"x"], backend="gpu")):
        with pytest.raises(InvalidInput, match="backend"):
            call()
    assert rng.calls == []


def test_one_shared_thread_pool_whatever_the_thread_counts():
    import threading
    sk = mayo.MAYO2.generate_private_key()
    msgs = [b"m%d" % i for i in range(24)]
    sk.sign_many(msgs, threads=2)
    before = threading.active_count()
    for t in range(2, 9):
        assert sk.public_key().verify_many(msgs, sk.sign_many(msgs, threads=t), threads=t).all()
    # one pool, grown to 8 workers at most, instead of a pool per count (2 + 3 + ... + 8 threads)
    assert threading.active_count() - before <= 8


def test_malformed_expanded_secret_key_is_an_invalid_key_naming_its_element():
    """An expanded secret key of the right length but not from key generation never yields a
    full-rank system: a clear InvalidKey, not a bare RuntimeError."""
    alg = mayo.MAYO2
    sk = alg.generate_private_key()
    garbage = b"\xff" * alg.params.esk_bytes
    with pytest.raises(InvalidKey, match="element 1: the secret key is malformed"):
        mayo.sign_many(alg, [sk, garbage], [b"a", b"b"], backend="cpu")
    with pytest.raises(InvalidKey, match="malformed"):
        alg.sign(garbage, b"a")


def test_device_out_of_memory_is_recognised_and_host_memory_errors_pass(monkeypatch):
    from pqforge.mayo import cuda as gpu
    from pqforge.errors import DeviceOutOfMemory
    monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
    assert gpu.is_out_of_memory(RuntimeError("[2] Call to cuMemAlloc results in CUDA_ERROR_OUT_OF_MEMORY"))
    assert gpu.is_out_of_memory(MemoryError("Out of memory allocating 1,024 bytes (allocated so far: 0 bytes)."))
    assert not gpu.is_out_of_memory(MemoryError("Unable to allocate 8.00 PiB for an array"))
    with pytest.raises(DeviceOutOfMemory, match="smaller batch"):
        with gpu.out_of_memory_as_error(10):
            raise RuntimeError("CUDA_ERROR_OUT_OF_MEMORY")
    with pytest.raises(MemoryError, match="Unable to allocate") as info:
        with gpu.out_of_memory_as_error(10):
            raise MemoryError("Unable to allocate 8.00 PiB for an array")
    assert not isinstance(info.value, DeviceOutOfMemory)


def test_auto_takes_the_gpu_for_the_tensor_path_only_with_cupy(monkeypatch):
    monkeypatch.setattr(backends, "gpu_usable", lambda: True)
    monkeypatch.setattr(backends, "cupy_installed", lambda: False)
    assert backends.choose_backend("auto", 10 ** 6, "bitsliced") == "cuda"
    assert backends.choose_backend("auto", 10 ** 6, "tensor") == "cpu"
    monkeypatch.setattr(backends, "cupy_installed", lambda: True)
    assert backends.choose_backend("auto", 10 ** 6, "tensor") == "cuda"


def test_mismatched_lengths_raise_before_any_work():
    alg = mayo.MAYO2
    sk = alg.generate_private_key()
    pk = sk.public_key()
    rng = CountingRng()
    with pytest.raises(InvalidInput, match="differ in length"):
        pk.verify_many([b"a", b"b"], [bytes(alg.signature_size)])
    with pytest.raises(InvalidInput, match="differ in length"):
        mayo.verify_many(alg, [pk], [b"a", b"b"], [bytes(alg.signature_size)] * 2)
    with pytest.raises(InvalidInput, match="differ in length"):
        mayo.sign_many(alg, [sk, sk], [b"a"], rng=rng)
    assert rng.calls == []
    with pytest.raises(InvalidType):
        pk.verify_many(b"abc", [b"a", b"b", b"c"])


def test_empty_batches():
    alg = mayo.MAYO2
    sk = alg.generate_private_key()
    assert sk.sign_many([]) == []
    assert sk.public_key().verify_many([], []).shape == (0,)
    assert mayo.verify_many(alg, [], [], []).shape == (0,)
    assert mayo.sign_many(alg, [], []) == []
    assert alg.generate_private_keys(0) == []


def test_backend_selection(monkeypatch):
    with pytest.raises(InvalidInput):
        mayo.set_default_backend("tpu")
    assert mayo.get_default_backend() == "auto"
    assert backends.choose_backend("cpu", 10 ** 6) == "cpu"
    assert backends.choose_backend("auto", 1) == "cpu"
    if not backends.gpu_usable():
        assert backends.choose_backend("auto", 10 ** 6) == "cpu"
        monkeypatch.delenv("NUMBA_ENABLE_CUDASIM", raising=False)
        from pqforge.mayo import cuda as gpu
        if not gpu.available(allow_simulator=True):
            with pytest.raises(BackendUnavailable):
                mayo.MAYO2.generate_private_key().sign_many([b"x"], backend="cuda")
    mayo.set_default_backend("cpu")
    try:
        assert backends.choose_backend(None, 10 ** 6) == "cpu"
    finally:
        mayo.set_default_backend("auto")


def test_cpu_batches_need_no_gpu_packages():
    """With numba.cuda (and CuPy) unimportable, importing pqforge and every CPU batch call still work."""
    code = (
        "import sys\n"
        "sys.modules['numba.cuda'] = None\n"
        "sys.modules['cupy'] = None\n"
        "from pqforge import mayo\n"
        "from pqforge.errors import BackendUnavailable\n"
        "keys = mayo.MAYO2.generate_private_keys(2)\n"
        "sigs = keys[0].sign_many([b'a', b'b'], backend='auto')\n"
        "assert keys[0].public_key().verify_many([b'a', b'b'], sigs).all()\n"
        "assert mayo.verify_many(mayo.MAYO2, [keys[0].public_key()] * 2, [b'a', b'b'], sigs).all()\n"
        "try:\n"
        "    keys[0].sign_many([b'a'], backend='cuda')\n"
        "    raise SystemExit('cuda backend without numba.cuda did not fail')\n"
        "except BackendUnavailable as exc:\n"
        "    assert 'pqforge[gpu]' in str(exc)\n"
        "assert 'numba.cuda' not in sys.modules or sys.modules['numba.cuda'] is None\n"
    )
    in_fresh_interpreter(code)


def test_tensor_path_through_the_api_equals_bitsliced(keyed):
    alg, sk, pk = keyed
    msgs = [b"t", b"u" * 40, b""]
    r1, r2 = CountingRng(), CountingRng()
    got = sk.sign_many(msgs, rng=r1, backend="cpu", path="tensor")
    assert got == [sk.sign(m, rng=r2) for m in msgs] and r1.calls == r2.calls
    sigs = got + [got[0], got[1][:-1]]
    msgs2 = msgs + [b"other", msgs[1]]
    want = pk.verify_many(msgs2, sigs, backend="cpu")
    assert want.tolist() == [True, True, True, False, False]
    assert pk.verify_many(msgs2, sigs, backend="cpu", path="tensor").tolist() == want.tolist()
    assert pk.verify_many(msgs2, sigs, backend="cpu", path="tensor").tolist() == want.tolist()   # prepared once
    with pytest.raises(InvalidInput):
        pk.verify_many(msgs, got, path="gemm")


def test_warm_up_compiles_everything_the_calls_use():
    """After ``warm_up()`` (what ``pqforge precompile`` runs) in a fresh interpreter, single and
    batch calls with new keys and messages compile no further numba specialisation."""
    code = (
        "import os, sys\n"
        "from numba.core.dispatcher import Dispatcher\n"
        "from pqforge import mayo\n"
        "alg = mayo.MAYO2\n"
        "alg.warm_up()\n"
        "def compiled():\n"
        "    found = {}\n"
        "    for name, module in list(sys.modules.items()):\n"
        "        if name.startswith('pqforge'):\n"
        "            for attr, obj in vars(module).items():\n"
        "                if isinstance(obj, Dispatcher):\n"
        "                    found[f'{name}.{attr}'] = len(obj.overloads)\n"
        "    return found\n"
        "before = compiled()\n"
        "sk = alg.generate_private_key(); pk = sk.public_key()\n"
        "msgs = [os.urandom(n) for n in range(40)]\n"
        "sigs = sk.sign_many(msgs, backend='cpu')\n"
        "assert pk.verify_many(msgs[:3], sigs[:3], backend='cpu').all()\n"
        "assert pk.verify_many(msgs, sigs, backend='cpu').all()\n"
        "assert pk.verify_many(msgs, sigs[:-1] + [sigs[0]], backend='cpu').sum() == 39\n"
        "pk.verify(sk.sign(b'one'), b'one')\n"
        "keys = alg.generate_private_keys(3, backend='cpu')\n"
        "d_sigs = mayo.sign_many(alg, keys, msgs[:3], backend='cpu')\n"
        "assert mayo.verify_many(alg, [k.public_key() for k in keys], msgs[:3], d_sigs, backend='cpu').all()\n"
        "cpks = [k.public_key().public_bytes_raw() for k in keys]\n"
        "d_sigs = mayo.sign_many(alg, [k.private_bytes_raw() for k in keys], msgs[:3], backend='cpu')\n"
        "assert mayo.verify_many(alg, cpks, msgs[:3], d_sigs, backend='cpu').all()\n"
        "after = compiled()\n"
        "new = {k: after[k] - before.get(k, 0) for k in after if after[k] != before.get(k, 0)}\n"
        "assert not new, f'compiled after warm_up: {new}'\n"
        "assert len(before) > 20, sorted(before)\n"
    )
    in_fresh_interpreter(code, timeout=900)


def test_a_failing_chunk_stops_the_call_with_no_work_left_running():
    """The first error is raised once every worker has stopped; the workers take no chunk after it."""
    import threading
    import time
    done, lock = [], threading.Lock()

    def work(lo, hi):
        time.sleep(0.002)
        if lo == 0:
            raise InvalidInput("chunk 0 failed")
        with lock:
            done.append(lo)

    with pytest.raises(InvalidInput, match="chunk 0 failed"):
        pool.run_chunks(work, 64, 2, most=1)
    finished = len(done)
    time.sleep(0.05)
    assert len(done) == finished < 63


def test_chunks_are_few_when_small_and_the_calling_thread_takes_one():
    """A chunk pays for its inputs and its compiled call: small batches get one chunk per thread
    (one on one thread), large ones up to four per thread; the caller works on one itself."""
    import threading
    import time
    sizes = lambda parts: [hi - lo for lo, hi in parts]
    assert sizes(pool.chunks(8, 2)) == [4, 4]
    assert sizes(pool.chunks(32, 2)) == [16, 16]
    assert sizes(pool.chunks(256, 2)) == [32] * 8
    assert sizes(pool.chunks(100, 1)) == [100]
    assert sizes(pool.chunks(100, 1, most=30)) == [25] * 4
    assert sizes(pool.chunks(1, 4)) == [1]
    seen = []

    def work(lo, hi):
        seen.append(threading.get_ident())
        time.sleep(0.02)

    pool.run_chunks(work, 2, 2)
    assert len(seen) == 2 and threading.get_ident() in seen


def test_without_the_driver_library_there_is_no_gpu_and_numba_cuda_stays_unimported():
    """``backend="auto"`` asks for a GPU on every large batch; with no NVIDIA driver the answer
    must come without importing numba-cuda (a cost of tenths of a second on the first call)."""
    in_fresh_interpreter(
        "import os, sys\n"
        "os.environ.pop('NUMBA_ENABLE_CUDASIM', None)\n"
        "from pqforge import mayo\nfrom pqforge.mayo import cuda as gpu\n"
        "gpu.DRIVER_LIBRARY = 'libpqforge-no-such-driver.so'\n"
        "from pqforge.mayo.engine import choose_backend\n"
        "assert choose_backend('auto', 10 ** 6) == 'cpu'\n"
        "sk = mayo.MAYO2.generate_private_key()\n"
        "assert len(sk.sign_many([b'm'] * 300)) == 300\n"
        "assert 'numba.cuda' not in sys.modules, 'numba.cuda was imported'\n")
