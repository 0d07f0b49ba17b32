"""Batched MAYO: many signatures or verifications per call, on all CPU cores or on a GPU.

    sigs = sk.sign_many(messages)                       # one key
    ok = pk.verify_many(messages, sigs)                 # numpy bool array
    ok = mayo.verify_many(MAYO2, pks, messages, sigs)   # one key per element
    sigs = mayo.sign_many(MAYO2, sks, messages)
    sks = MAYO2.generate_private_keys(1000)

Results are byte-identical to the one-at-a-time API for the same inputs and randomness.

Randomness order. Each MAYO signature draws exactly ``salt_bytes`` random bytes (the salt
randomness) and each key generation exactly ``sk_seed_bytes`` (the seed). A batch call draws all
of them up front, before any other work, element 0 first, then element 1, and so on: exactly the
calls a loop of single ``sign`` (or ``generate_private_key``) calls would make, in the same
order. So with a deterministic rng (``NistCtrDrbg``), ``sign_many(msgs, rng)`` returns
``[sign(msg, rng) for msg in msgs]``.

Backends. ``backend="cpu"`` runs compiled kernels on a pool of threads; ``"cuda"`` runs the
device kernels of ``pqforge.gpu`` (an optional extra, ``pip install pqforge[gpu]``, imported only
here and only when asked for); ``"auto"`` (the default, see :func:`set_default_backend`) takes
the GPU when one is usable and the batch has at least ``AUTO_GPU_MIN_BATCH`` elements, the CPU
otherwise. On the GPU, key generation, signing and verification run from the compact keys;
elements given with expanded-key byte strings are handled on the CPU.

Paths. Single-key calls (``sk.sign_many``, ``pk.verify_many``) also take ``path="tensor"``: the
big GF(16) products as exact binary GEMMs (``pqforge.gpu.tensor``; CuPy on the GPU backend, numpy
on the CPU one), with the key matrix prepared once per key object. Same bytes as the default
``path="bitsliced"``.

CPU parallelism. The compiled loops here (``_verify_chunk``, ``_sign_chunk``) run a whole chunk
of a batch through the per-instance cores of ``kernels.py`` (``evaluate_public``,
``sign_attempt``) without the GIL, so the threads of the pool run on separate cores; hashing
(hashlib) and byte handling stay in Python, per element, around the compiled chunk. Each
distinct key is expanded once per call and shared by its elements.

Bad input. Arguments are checked before any work and before any randomness is drawn: mismatched
list lengths, an unknown backend or path, a thread count that is not a positive int, and items
that are not bytes-like (the error names the index; numpy fixed-width ``S`` arrays are refused,
as they drop trailing zero bytes). In verification a signature or key that is malformed (wrong
length, or a key object of another parameter set) makes that element ``False``; the others are
unaffected. In signing and key generation a malformed element raises an error naming its index.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import os
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numba as nb
import numpy as np

from ..errors import BackendUnavailable, InvalidInput, InvalidKey, InvalidType, PQForgeError, require_bytes
from ..gf16.kernels import stream_words
from ..symmetric import aes128_ctr_into, shake256
from . import api, kernels, scheme
from .params import MayoParams
from .._compile_cache import JIT_CACHE

BACKENDS = ("auto", "cpu", "cuda")
PATHS = ("bitsliced", "tensor")
MAX_THREADS = 1024
AUTO_GPU_MIN_BATCH = 256
"""Smallest batch that ``backend="auto"`` sends to a GPU (below it, launch and transfer dominate)."""

_default_backend = "auto"
_lock = threading.Lock()


# -- backend selection ---------------------------------------------------------------------------

def set_default_backend(backend: str) -> None:
    """Process-wide default for batch calls made with ``backend=None``: "auto", "cpu" or "cuda"."""
    global _default_backend
    _default_backend = _check_backend(backend)


def get_default_backend() -> str:
    return _default_backend


def _check_backend(backend) -> str:
    if backend not in BACKENDS:
        raise InvalidInput(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    return backend


def gpu_usable() -> bool:
    """True when the optional GPU stack is installed and a CUDA device (not the simulator) answers."""
    from .. import gpu
    return gpu.available()


def choose_backend(backend, size: int, path: str = "bitsliced") -> str:
    """The backend ("cpu" or "cuda") a call of ``size`` elements on ``path`` runs on ("auto" takes
    the GPU for the tensor path only where CuPy is installed too)."""
    backend = _check_backend(_default_backend if backend is None else backend)
    if backend == "cuda":
        from .. import gpu
        if not gpu.stack_installed():
            raise BackendUnavailable("backend='cuda' needs the GPU extra (numba-cuda): pip install pqforge[gpu]")
        if not gpu.available(allow_simulator=True):
            raise BackendUnavailable("backend='cuda' requested but no CUDA device is usable; "
                                     "use backend='cpu' or 'auto'")
        return "cuda"
    if backend == "auto" and size >= AUTO_GPU_MIN_BATCH and gpu_usable():
        if path != "tensor" or _cupy_installed():
            return "cuda"
    return "cpu"


def _cupy_installed() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


# -- the tensor path (single-key calls) ----------------------------------------------------------

_prepared = weakref.WeakKeyDictionary()   # key object -> {array module name: prepared key matrix}


@contextlib.contextmanager
def _device_memory(backend: str, size: int):
    """On the GPU backend, the device running out of memory inside becomes DeviceOutOfMemory."""
    if backend != "cuda":
        yield
        return
    from ..gpu import out_of_memory_as_error
    with out_of_memory_as_error(size):
        yield


def _check_path(path) -> str:
    if path not in PATHS:
        raise InvalidInput(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    return path


def _array_module(backend: str):
    """(xp, GEMM dtype) for the tensor path: CuPy with fp16 on the GPU, numpy with fp32 on the CPU."""
    if backend == "cuda":
        try:
            import cupy
        except ImportError:
            raise BackendUnavailable("the tensor path on the GPU needs CuPy: pip install pqforge[gpu]") from None
        return cupy, np.float16
    return np, np.float32


def _prepared_key(owner, backend: str, build):
    """The key matrix of ``owner`` for this backend, built once per key object (kept while it lives)."""
    xp, dtype = _array_module(backend)
    with _lock:
        slot = _prepared.setdefault(owner, {}) if owner is not None else {}
    if xp.__name__ not in slot:
        slot[xp.__name__] = build(xp, dtype)
    return slot[xp.__name__]


# -- thread pool ---------------------------------------------------------------------------------

def cpu_threads() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def check_threads(threads) -> int:
    """The thread count of a call: all cores for None, else a positive int up to MAX_THREADS."""
    if threads is None:
        return cpu_threads()
    if isinstance(threads, bool) or not isinstance(threads, (int, np.integer)):
        raise InvalidType(f"threads must be a positive int or None, not {type(threads).__name__}")
    if not 1 <= threads <= MAX_THREADS:
        raise InvalidInput(f"threads must be between 1 and {MAX_THREADS}, got {threads}")
    return int(threads)


_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def _executor(threads: int) -> ThreadPoolExecutor:
    """The shared pool, with at least ``threads`` workers (call with ``_lock`` held). A call
    asking for more replaces it by a larger one; work already handed to the old pool still runs
    there, and nothing is handed to it afterwards (submissions happen under the same lock)."""
    global _pool, _pool_size
    if _pool is None or _pool_size < threads:
        if _pool is not None:
            _pool.shutdown(wait=False)
        _pool_size = max(threads, cpu_threads())
        _pool = ThreadPoolExecutor(max_workers=_pool_size, thread_name_prefix="pqforge-mayo")
    return _pool


def _chunks(size: int, threads: int, most: int | None = None):
    """Index ranges covering 0..size: a few per thread so that uneven chunks even out, and none
    longer than ``most``."""
    if size == 0:
        return []
    count = max(1, min(size, threads * 4), -(-size // most) if most else 1)
    bounds = np.linspace(0, size, count + 1).astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def start_chunks(fn, size: int, threads: int, most: int | None = None) -> list:
    """Start fn(lo, hi) over chunks of range(size) (at most ``most`` long) on ``threads`` workers
    of the shared pool, each taking the next chunk until none is left or one has failed; the
    futures to hand to ``finish_chunks``. One thread: run here."""
    parts = _chunks(size, threads, most)
    if threads == 1 or len(parts) <= 1:
        for lo, hi in parts:
            fn(lo, hi)
        return []
    todo, take, failed = iter(parts), threading.Lock(), threading.Event()

    def worker():
        while not failed.is_set():
            with take:
                part = next(todo, None)
            if part is None:
                return
            try:
                fn(*part)
            except BaseException:
                failed.set()              # the other workers take no further chunk
                raise

    with _lock:
        pool = _executor(threads)
        return [pool.submit(worker) for _ in range(min(threads, len(parts)))]


def finish_chunks(futures: list) -> None:
    """Wait for every worker of ``start_chunks``, then raise the first error if one failed (so no
    work of the call is still running when it returns or raises)."""
    concurrent.futures.wait(futures)
    for f in futures:
        f.result()


def _run_chunks(fn, size: int, threads: int, most: int | None = None):
    """fn(lo, hi) over chunks of range(size) on ``threads`` threads (``check_threads``'s count)."""
    finish_chunks(start_chunks(fn, size, threads, most))


# -- compiled chunk loops (nogil) ----------------------------------------------------------------

@nb.njit(nogil=True, cache=JIT_CACHE, inline="always")
def _verdict(s, P, encoded, f_tail, t, y) -> bool:
    """P*(s) == t, with y as scratch. Public data only: the verdict is public."""
    y[:] = 0
    kernels.evaluate_public(s, P, encoded, f_tail, y)
    same = True
    for e in range(y.shape[0]):
        same &= y[e] == t[e]
    return same


@nb.njit(nogil=True, cache=JIT_CACHE)
def _verify_chunk(P, encoded, S, T, f_tail, out):
    """out[b] = (P*(S[b]) == T[b]) for signature vectors S (B, k, n) and targets T (B, m); P
    bitsliced or, with ``encoded``, in its byte encoding (see ``kernels.evaluate_public``).

    Public data only (verification). Runs without the GIL.
    """
    y = np.zeros(T.shape[1], np.uint8)
    for b in range(S.shape[0]):
        out[b] = _verdict(S[b], P, encoded, f_tail, T[b], y)


@nb.njit(nogil=True, cache=JIT_CACHE)
def _verify_fresh_keys(P12, P3, to_p12, to_p3, first, S, T, f_tail, slots, slot_bytes, out):
    """Elements under keys that only a few of them share: for each key q, its P assembled from
    the encodings P12[q] (P1 || P2) and P3[q] (rows of m/2 bytes) into ``slots``, the one reused
    matrix in ``ExpandedPublicKey.nibbles`` form (``slot_bytes`` is its byte view; see
    ``scheme._assemble_public``), then out[b] = (P*(S[b]) == T[b]) for b in first[q] ..
    first[q+1]-1.

    Public data only (verification). Runs without the GIL.
    """
    y = np.zeros(T.shape[1], np.uint8)
    for q in range(P12.shape[0]):
        kernels.place_rows(slot_bytes, to_p12, P12[q])
        kernels.place_rows(slot_bytes, to_p3, P3[q])
        for b in range(first[q], first[q + 1]):
            out[b] = _verdict(S[b], slots, True, f_tail, T[b], y)


@nb.njit(nogil=True, cache=JIT_CACHE)
def _sign_chunk(O, P1, L, V, R, T, f_tail, n, S, ok):
    """One signing attempt per element: S[b] = s for vinegar V[b] (k, v), r = R[b], target T[b].

    ok[b] tells whether the system had full rank (public by design: it only decides a retry).
    Secret: O, P1, L, V, R, S before it is returned, and every intermediate; they pass only
    through the constant-time kernels of ``kernels.py`` (masks, public loop bounds and indices).
    Runs without the GIL.
    """
    B, k, v = V.shape
    o = O.shape[1]
    x = np.zeros(k * o, np.uint8)
    for b in range(B):
        ok[b] = kernels.sign_attempt(V[b], R[b], P1, L, T[b], f_tail, x)
        kernels.assemble_signature(V[b], O, x, n, S[b])


@nb.njit(nogil=True, cache=JIT_CACHE)
def _sign_fresh_keys(streams, O, first, V, R, T, f_tail, n, m, S, ok):
    """Elements under compact keys that only a few of them share: for each key q, P1 and L
    expanded from its keystream of P1 || P2 and its oil matrix O[q] into one buffer reused
    from key to key (``kernels.expand_secret_from_stream``), then one signing attempt for each
    of its elements b = first[q] .. first[q+1]-1 (``_sign_chunk``).

    Secret: O, L, V, R, S and every intermediate (constant-time kernels only); the rank bits
    ok are public. Runs without the GIL.
    """
    v, o = O.shape[1], O.shape[2]
    W = 4 * ((m + 63) // 64)
    e1 = v * (v + 1) // 2
    P1L = np.empty((e1 + v * o, W), np.uint64)
    P1, L = P1L[:e1], P1L[e1:].reshape(v, o, W)
    for q in range(streams.shape[0]):
        kernels.expand_secret_from_stream(streams[q], O[q], m, P1L)
        a, b = first[q], first[q + 1]
        _sign_chunk(O[q], P1, L, V[a:b], R[a:b], T[a:b], f_tail, n, S[a:b], ok[a:b])


@nb.njit(nogil=True, cache=JIT_CACHE)
def _public_keys_chunk(streams, O, m, out):
    """out[q] = the encoded P3 of key q from its keystream of P1 || P2 and its oil matrix
    (``kernels.public_key_from_stream``). Secret: O and all derived from it. Runs without the GIL.
    """
    for q in range(streams.shape[0]):
        kernels.public_key_from_stream(streams[q], O[q], m, out[q])


# -- byte handling shared by the backends --------------------------------------------------------

def nibbles_rows(rows: np.ndarray, count: int) -> np.ndarray:
    """(B, nbytes) nibble strings -> (B, count) elements."""
    out = np.empty((rows.shape[0], 2 * rows.shape[1]), np.uint8)
    out[:, 0::2] = rows & 0x0F
    out[:, 1::2] = rows >> 4
    return out[:, :count]


def pack_rows(elements: np.ndarray) -> np.ndarray:
    """(B, count) elements -> (B, ceil(count/2)) nibble-packed bytes."""
    B, count = elements.shape
    if count % 2:
        elements = np.concatenate([elements, np.zeros((B, 1), np.uint8)], axis=1)
    return (elements[:, 0::2] | (elements[:, 1::2] << 4)).astype(np.uint8)


def targets(p: MayoParams, messages, salts) -> np.ndarray:
    """t = Decode(SHAKE256(SHAKE256(M) || salt)) for each element, (B, m)."""
    digest_bytes, m_bytes = p.digest_bytes, p.m_bytes
    raw = b"".join(shake256(shake256(msg, digest_bytes) + salt, m_bytes) for msg, salt in zip(messages, salts))
    return np.ascontiguousarray(nibbles_rows(np.frombuffer(raw, np.uint8).reshape(-1, p.m_bytes), p.m))


def signature_vectors(p: MayoParams, sigs) -> np.ndarray:
    """The vectors s_1..s_k of each signature, (B, k, n)."""
    body = (p.k * p.n + 1) // 2
    raw = np.frombuffer(b"".join(s[:body] for s in sigs), np.uint8).reshape(-1, body)
    return np.ascontiguousarray(nibbles_rows(raw, p.k * p.n).reshape(-1, p.k, p.n))


# -- validation ----------------------------------------------------------------------------------

def _as_list(items, what: str) -> list:
    if isinstance(items, (bytes, bytearray, memoryview, str)):
        raise InvalidType(f"{what} must be a sequence of items, not a single {type(items).__name__}")
    if isinstance(items, np.ndarray) and items.dtype.kind == "S":
        raise InvalidType(f"{what}: a numpy array of dtype {items.dtype} drops trailing zero bytes; "
                          "pass a list of bytes (or an array of dtype object)")
    try:
        return list(items)
    except TypeError:
        raise InvalidType(f"{what} must be a sequence, not {type(items).__name__}") from None


def _same_length(**lists) -> int:
    sizes = {name: len(v) for name, v in lists.items()}
    if len(set(sizes.values())) > 1:
        raise InvalidInput("batch lists differ in length: " + ", ".join(f"{k}={v}" for k, v in sizes.items()))
    return next(iter(sizes.values()), 0)


def _byte_items(items: list, what: str) -> list[bytes]:
    """The items as bytes (bytearray and memoryview converted); any other type raises, naming
    the item's index. Lengths are judged by the caller. Plain bytes pass without a call."""
    out = list(items)
    for i, value in enumerate(out):
        if type(value) is not bytes:
            out[i] = require_bytes(value, f"{what} {i}")
    return out


def _public_key_bytes(p: MayoParams, pk, i: int):
    """The key object or its bytes; a key object of another parameter set gives None (its
    elements are then invalid, as a key of the wrong length is)."""
    from .keys import MayoPublicKey
    if isinstance(pk, MayoPublicKey):
        return pk if pk.algorithm.params is p else None
    return require_bytes(pk, f"public key {i}")


def _secret_key(p: MayoParams, sk, i: int):
    from .keys import MayoPrivateKey
    if isinstance(sk, MayoPrivateKey):
        if sk.algorithm.params is not p:
            raise InvalidKey(f"secret key {i} is a {sk.algorithm.name} key, not {p.name}")
        return sk
    try:
        return api.check_secret_key(p, sk)
    except PQForgeError as exc:
        raise type(exc)(f"element {i}: {exc}") from None


def draw_randomness(rng, size: int, nbytes: int) -> list[bytes]:
    """``size`` draws of ``nbytes`` each, in index order (the order a loop of single calls uses)."""
    draw = api.checked_rng(rng)
    return [draw(nbytes) for _ in range(size)]


# -- verification --------------------------------------------------------------------------------

def _verification_inputs(p: MayoParams, messages, sigs, idx):
    """(S, T): the signature vectors and targets of the well-formed elements idx."""
    chosen = [sigs[j] for j in idx]
    salt_at = p.sig_bytes - p.salt_bytes
    return signature_vectors(p, chosen), targets(p, [messages[j] for j in idx], [sig[salt_at:] for sig in chosen])


def _verify_indices(p: MayoParams, key, messages, sigs, out, idx):
    """out[idx] = the verdicts of the well-formed signatures sigs[idx] under one key, given as
    ``ExpandedPublicKey.for_verification``'s (matrix, encoded)."""
    S, T = _verification_inputs(p, messages, sigs, idx)
    res = np.zeros(len(idx), np.bool_)
    _verify_chunk(key[0], key[1], S, T, np.array(p.f_tail, np.int64), res)
    out[idx] = res


def _verify_one_key_cpu(p: MayoParams, epk: scheme.ExpandedPublicKey, messages, sigs, out, index, threads):
    """out[index[j]] = verdict of (messages[j], sigs[j]) for well-formed signatures under one key."""
    index = list(index)       # Python ints: indexing the lists with numpy integers is slower
    key = epk.for_verification(len(index))    # resolved once, before the threads share it
    _run_chunks(lambda lo, hi: _verify_indices(p, key, messages, sigs, out, index[lo:hi]), len(index), threads)


def verify_many_one_key(p: MayoParams, epk_source, messages, signatures, backend=None, threads=None,
                        cpk: bytes | None = None, path: str = "bitsliced", owner=None) -> np.ndarray:
    """Verdicts for one public key; ``epk_source()`` returns its ExpandedPublicKey (called at most once).

    ``cpk``, the compact key, lets the GPU backend expand the key on the device. ``path="tensor"``
    runs the products as GEMMs (CuPy on the GPU, numpy on the CPU) with the key matrix prepared
    once per key object ``owner``.
    """
    _check_path(path)
    messages = _byte_items(_as_list(messages, "messages"), "message")
    sigs = _byte_items(_as_list(signatures, "signatures"), "signature")
    size = _same_length(messages=messages, signatures=sigs)
    threads = check_threads(threads)
    backend = choose_backend(backend, size, path)
    out = np.zeros(size, np.bool_)
    sig_bytes = p.sig_bytes
    good = np.array([i for i, s in enumerate(sigs) if len(s) == sig_bytes], np.int64)
    if len(good) == 0:
        return out
    if path == "tensor":
        from ..gpu import tensor
        with _device_memory(backend, len(good)):
            prepared = _prepared_key(owner, backend, lambda xp, dt: tensor.PreparedPublicKey(p, epk_source().P, xp, dt))
            out[good] = tensor.verify_batch(p, prepared, [messages[j] for j in good], [sigs[j] for j in good])
        return out
    if backend == "cuda" and cpk is not None:
        from ..gpu import batch as gpu_batch
        return gpu_batch.verify_same_key(p, cpk, messages, sigs, out, good)
    _verify_one_key_cpu(p, epk_source(), messages, sigs, out, good, threads)
    return out


def verify_many(params, pks, messages, signatures, backend=None, threads=None) -> np.ndarray:
    """Verdicts (numpy bool array) for one (public key, message, signature) triple per element.

    Keys are compact or expanded byte strings or ``MayoPublicKey`` objects. Each distinct key is
    expanded once. An element whose key or signature has the wrong length, or whose key object
    belongs to another parameter set, is ``False``.
    """
    p = api.resolve(params)
    pks = _as_list(pks, "public keys")
    messages = _as_list(messages, "messages")
    signatures = _as_list(signatures, "signatures")
    size = _same_length(pks=pks, messages=messages, signatures=signatures)
    keys = [_public_key_bytes(p, pk, i) for i, pk in enumerate(pks)]
    messages = _byte_items(messages, "message")
    sigs = _byte_items(signatures, "signature")
    threads = check_threads(threads)
    backend = choose_backend(backend, size)
    out = np.zeros(size, np.bool_)
    groups: dict = {}
    for i, (key, sig) in enumerate(zip(keys, sigs)):
        if len(sig) != p.sig_bytes or key is None:
            continue
        if isinstance(key, bytes) and len(key) not in (p.cpk_bytes, p.epk_bytes):
            continue
        groups.setdefault(key if isinstance(key, bytes) else key.public_bytes_raw(), []).append((i, key))
    if not groups:
        return out
    if backend == "cuda":
        from ..gpu import batch as gpu_batch
        compact = {key: g for key, g in groups.items() if len(key) == p.cpk_bytes}
        gpu_batch.verify_distinct_keys(p, compact, messages, sigs, out)
        groups = {key: g for key, g in groups.items() if len(key) != p.cpk_bytes}  # expanded keys: CPU
    _verify_groups_cpu(p, groups, messages, sigs, out, threads)
    return out


def _expanded_public(p, key) -> scheme.ExpandedPublicKey:
    return key.expanded() if not isinstance(key, bytes) else api.expanded_public(p, key)


def _verify_groups_cpu(p, groups, messages, sigs, out, threads):
    items = list(groups.values())
    large = [g for g in items if len(g) >= 4 * cpu_threads()]
    small = [g for g in items if len(g) < 4 * cpu_threads()]
    for g in large:  # many elements under one key: split the elements across the threads
        idx = np.array([i for i, _ in g], np.int64)
        _verify_one_key_cpu(p, _expanded_public(p, g[0][1]), messages, sigs, out, idx, threads)
    objects = [g for g in small if not isinstance(g[0][1], bytes)]

    def work(lo, hi):  # key objects (they keep their expansion) with few elements each
        for g in objects[lo:hi]:
            _verify_indices(p, g[0][1].expanded().for_verification(len(g)), messages, sigs, out,
                            [i for i, _ in g])

    _run_chunks(work, len(objects), threads)
    _verify_fresh_keys_cpu(p, [g for g in small if isinstance(g[0][1], bytes)], messages, sigs, out, threads)


FRESH_KEY_BYTES = 4 << 20
"""Keystream bytes of the keys one chunk holds at a time (fresh-key verification, key generation)."""


def _verify_fresh_keys_cpu(p, groups, messages, sigs, out, threads):
    """Elements under key byte strings that few elements share (``groups``: [(index, key)] per
    key). Per chunk of keys, the encodings of P1 || P2 (AES from a compact key, copied from an
    expanded one) and the targets are made in Python, then one compiled loop assembles each key
    into a reused buffer and verifies its elements: no key object and no allocation per key."""
    p12, seed, mb = p.P1_bytes + p.P2_bytes, p.pk_seed_bytes, p.m_bytes
    to_p12, to_p3 = scheme._public_entry_places(p)
    f_tail = np.array(p.f_tail, np.int64)

    def work(lo, hi):
        part = groups[lo:hi]
        flat = np.empty(len(part) * p12 + 15, np.uint8)     # 15 spare bytes: aes128_ctr_into's rule
        P3 = np.empty((len(part), p.P3_bytes), np.uint8)
        idx, first = [], [0]
        for q, g in enumerate(part):
            key = g[0][1]
            if len(key) == p.cpk_bytes:
                aes128_ctr_into(key[:seed], p12, memoryview(flat)[q * p12:])
                P3[q] = np.frombuffer(key, np.uint8, offset=seed)
            else:    # expanded: P1 || P2 || P3
                flat[q * p12:(q + 1) * p12] = np.frombuffer(key, np.uint8, p12)
                P3[q] = np.frombuffer(key, np.uint8, offset=p12)
            idx += [i for i, _ in g]
            first.append(len(idx))
        S, T = _verification_inputs(p, messages, sigs, idx)
        slots = np.zeros((p.n * (p.n + 1) // 2, p.words), np.uint64)
        res = np.zeros(len(idx), np.bool_)
        _verify_fresh_keys(flat[:len(part) * p12].reshape(len(part), -1, mb), P3.reshape(len(part), -1, mb),
                           to_p12, to_p3, np.array(first, np.int64), S, T, f_tail, slots, slots.view(np.uint8), res)
        out[idx] = res

    _run_chunks(work, len(groups), threads, max(1, FRESH_KEY_BYTES // p12))


# -- signing -------------------------------------------------------------------------------------

def _replay(data: bytes):
    def rng(n):
        assert n == len(data)
        return data
    return rng


def _signing_inputs(p: MayoParams, messages, randomness, seeds):
    """Per element (message, salt randomness, seed_sk of its key): the salt, t, the vinegar
    vectors V (k, v) and r of the first attempt, as the specification hashes them.
    Returns (salts, T, V, R)."""
    k, o, v = p.k, p.o, p.v
    vr_len = k * p.v_bytes + p.r_bytes
    digests = [shake256(msg, p.digest_bytes) for msg in messages]
    salts = [shake256(d + rand + seed, p.salt_bytes) for d, rand, seed in zip(digests, randomness, seeds)]
    raw_t = b"".join(shake256(d + s, p.m_bytes) for d, s in zip(digests, salts))
    T = np.ascontiguousarray(nibbles_rows(np.frombuffer(raw_t, np.uint8).reshape(-1, p.m_bytes), p.m))
    raw_vr = np.frombuffer(b"".join(shake256(d + s + seed + b"\x00", vr_len)
                                    for d, s, seed in zip(digests, salts, seeds)), np.uint8).reshape(-1, vr_len)
    V = np.ascontiguousarray(nibbles_rows(raw_vr[:, :k * p.v_bytes].reshape(-1, p.v_bytes), v).reshape(-1, k, v))
    R = np.ascontiguousarray(nibbles_rows(raw_vr[:, k * p.v_bytes:], k * o))
    return salts, T, V, R


def _finish_signatures(p: MayoParams, idx, S, ok, salts, messages, randomness, out, esk_of):
    """out[j] = encoded s || salt for the elements j = idx[row] whose first attempt had full
    rank; the others (rare) go through ``scheme.sign`` with their expanded key ``esk_of(row)``,
    which retries as the specification does."""
    packed = pack_rows(S)
    for row, j in enumerate(idx):
        if ok[row]:
            out[j] = packed[row].tobytes() + salts[row]
        else:
            try:
                out[j] = scheme.sign(p, esk_of(row), messages[j], _replay(randomness[j]))
            except InvalidKey as exc:
                raise InvalidKey(f"element {j}: {exc}") from None


def _sign_one_key_cpu(p: MayoParams, esk: scheme.ExpandedSecretKey, messages, randomness, out, index, threads):
    """out[index[j]] = signature of messages[j] with salt randomness randomness[j], one secret key."""
    f_tail = np.array(p.f_tail, np.int64)

    def work(lo, hi):
        idx = index[lo:hi]
        salts, T, V, R = _signing_inputs(p, [messages[j] for j in idx], [randomness[j] for j in idx],
                                         [esk.seed_sk] * len(idx))
        S = np.zeros((len(idx), p.k * p.n), np.uint8)
        ok = np.zeros(len(idx), np.bool_)
        _sign_chunk(esk.O, esk.P1, esk.L, V, R, T, f_tail, p.n, S, ok)
        _finish_signatures(p, idx, S, ok, salts, messages, randomness, out, lambda row: esk)

    _run_chunks(work, len(index), threads)


def _seed_streams(p: MayoParams, seeds):
    """(seed_pks, keystreams of P1 || P2 (K, words), oil matrices (K, v, o)) of secret seeds."""
    streams = np.zeros((len(seeds), stream_words(p.P1_bytes + p.P2_bytes)), np.uint64)
    O = np.empty((len(seeds), p.v, p.o), np.uint8)
    seed_pks = []
    for q, seed in enumerate(seeds):
        seed_pk, o_bytes = scheme._seed_expansion(p, seed)
        scheme.public_stream(p, seed_pk, streams[q])
        O[q] = scheme.decode_oil(p, o_bytes)
        seed_pks.append(seed_pk)
    return seed_pks, streams, O


def _sign_fresh_keys_cpu(p: MayoParams, groups, messages, randomness, out, threads):
    """Elements under compact secret keys that few elements share (``groups``: [(index, seed)]
    per key). Per chunk of keys the hashing and the keystreams are done in Python, then one
    compiled loop (``_sign_fresh_keys``) expands each key and signs its elements: one GIL-free
    stretch per chunk instead of several per key."""
    f_tail = np.array(p.f_tail, np.int64)

    def work(lo, hi):
        part = groups[lo:hi]
        _, streams, O = _seed_streams(p, [g[0][1] for g in part])
        idx, seeds, first = [], [], [0]
        for g in part:
            idx += [i for i, _ in g]
            seeds += [g[0][1]] * len(g)
            first.append(len(idx))
        salts, T, V, R = _signing_inputs(p, [messages[j] for j in idx], [randomness[j] for j in idx], seeds)
        S = np.zeros((len(idx), p.k * p.n), np.uint8)
        ok = np.zeros(len(idx), np.bool_)
        _sign_fresh_keys(streams, O, np.array(first, np.int64), V, R, T, f_tail, p.n, p.m, S, ok)
        _finish_signatures(p, idx, S, ok, salts, messages, randomness, out,
                           lambda row: scheme.expand_sk(p, seeds[row]))

    _run_chunks(work, len(groups), threads, max(1, FRESH_KEY_BYTES // (p.P1_bytes + p.P2_bytes)))


def sign_many_one_key(p: MayoParams, esk_source, messages, rng=None, backend=None, threads=None,
                      csk: bytes | None = None, path: str = "bitsliced", owner=None) -> list[bytes]:
    """Signatures under one secret key; ``esk_source()`` gives its expanded form (CPU), ``csk`` its seed (GPU).

    ``path="tensor"``: the products as GEMMs (see ``verify_many_one_key``), the rest on the CPU.
    """
    _check_path(path)
    messages = _byte_items(_as_list(messages, "messages"), "message")
    size = len(messages)
    threads = check_threads(threads)
    backend = choose_backend(backend, size, path)
    randomness = draw_randomness(rng, size, p.salt_bytes)
    out: list = [None] * size
    if size == 0:
        return out
    if path == "tensor":
        from ..gpu import tensor
        esk = esk_source()
        with _device_memory(backend, size):
            prepared = _prepared_key(owner, backend, lambda xp, dt: tensor.PreparedSecretKey(p, esk.L, esk.P1, xp, dt))
            return tensor.sign_batch(p, esk, prepared, messages, randomness, threads=threads)
    if backend == "cuda" and csk is not None:
        from ..gpu import batch as gpu_batch
        gpu_batch.sign_groups(p, [(csk, list(range(size)))], messages, randomness, out)
        return out
    _sign_one_key_cpu(p, esk_source(), messages, randomness, out, np.arange(size), threads)
    return out


def sign_many(params, sks, messages, rng=None, backend=None, threads=None) -> list[bytes]:
    """Signatures, one (secret key, message) pair per element; keys compact/expanded bytes or key objects."""
    p = api.resolve(params)
    sks = _as_list(sks, "secret keys")
    messages = _as_list(messages, "messages")
    size = _same_length(secret_keys=sks, messages=messages)
    keys = [_secret_key(p, sk, i) for i, sk in enumerate(sks)]
    messages = _byte_items(messages, "message")
    threads = check_threads(threads)
    backend = choose_backend(backend, size)
    randomness = draw_randomness(rng, size, p.salt_bytes)
    out: list = [None] * size
    groups: dict = {}
    for i, key in enumerate(keys):
        ident = key if isinstance(key, bytes) else id(key)
        groups.setdefault(ident, []).append((i, key))
    if backend == "cuda":
        from ..gpu import batch as gpu_batch
        device, host = [], {}
        for ident, g in groups.items():
            key = g[0][1]
            seed = key if isinstance(key, bytes) else key.private_bytes_raw()
            if len(seed) == p.csk_bytes:
                device.append((seed, [i for i, _ in g]))
            else:            # expanded secret keys are signed on the CPU
                host[ident] = g
        gpu_batch.sign_groups(p, device, messages, randomness, out)
        groups = host
    items = list(groups.values())
    large = [g for g in items if len(g) >= 4 * cpu_threads()]
    small = [g for g in items if len(g) < 4 * cpu_threads()]
    for g in large:
        _sign_one_key_cpu(p, _expanded_secret(p, g[0][1]), messages, randomness, out,
                          np.array([i for i, _ in g], np.int64), threads)

    fresh, kept = [], []        # compact keys; expanded keys and key objects (they keep their expansion)
    for g in small:
        (fresh if isinstance(g[0][1], bytes) and len(g[0][1]) == p.csk_bytes else kept).append(g)

    def work(lo, hi):
        for g in kept[lo:hi]:
            _sign_one_key_cpu(p, _expanded_secret(p, g[0][1]), messages, randomness, out,
                              np.array([i for i, _ in g], np.int64), 1)

    _run_chunks(work, len(kept), threads)
    _sign_fresh_keys_cpu(p, fresh, messages, randomness, out, threads)
    return out


def _expanded_secret(p, key) -> scheme.ExpandedSecretKey:
    return key.expanded() if not isinstance(key, bytes) else api.expanded_secret(p, key)


# -- key generation ------------------------------------------------------------------------------

def generate_keys(p: MayoParams, n, rng=None, backend=None, threads=None) -> tuple[list[bytes], list[bytes]]:
    """(seeds, compact public keys) of ``n`` new keys, the seeds drawn from ``rng`` in order
    after every argument has been checked."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InvalidType(f"number of keys must be an int, not {type(n).__name__}")
    if n < 0:
        raise InvalidInput(f"number of keys must be non-negative, got {n}")
    threads = check_threads(threads)
    backend = choose_backend(backend, int(n))
    seeds = draw_randomness(rng, int(n), p.sk_seed_bytes)
    return seeds, public_keys_from_seeds(p, seeds, backend, threads)


def public_keys_from_seeds(p: MayoParams, seeds, backend: str, threads: int) -> list[bytes]:
    """cpk for each secret seed (the heavy half of key generation) on ``backend``. On the CPU,
    per chunk of seeds on the pool, the hashing and the keystreams in Python, then one compiled
    loop (``_public_keys_chunk``) for the rest: one GIL-free stretch per chunk, not per key."""
    out: list = [None] * len(seeds)
    if seeds and backend == "cuda":
        from ..gpu import batch as gpu_batch
        return gpu_batch.keygen(p, seeds)

    def work(lo, hi):
        seed_pks, streams, O = _seed_streams(p, seeds[lo:hi])
        encoded = np.empty((hi - lo, p.P3_bytes), np.uint8)
        _public_keys_chunk(streams, O, p.m, encoded)
        for q, seed_pk in enumerate(seed_pks):
            out[lo + q] = seed_pk + encoded[q].tobytes()

    _run_chunks(work, len(seeds), threads, max(1, FRESH_KEY_BYTES // (p.P1_bytes + p.P2_bytes)))
    return out
