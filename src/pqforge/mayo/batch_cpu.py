"""The CPU backend of batched MAYO: chunks of a batch on the engine's thread pool.

Per chunk, the hashing and byte handling run in Python (``batch_data``), then one compiled loop
(``batch_kernels``) runs the whole chunk without the GIL. Each distinct key is expanded once per
call and shared by its elements; keys that only a few elements share are expanded inside the
compiled loops, one after another into reused buffers. With an encoded kernel set (GFNI or AVX2,
``gf16.sets``) every loop runs on the keys' encodings (the ``*_encoded`` loops).
"""

from __future__ import annotations

import numpy as np

from .engine import pool
from .engine.backends import SignatureBackend
from ..gf16 import sets
from ..symmetric import aes128_ctr_into
from . import batch_data, kernels, scheme
from .kernels import batch as batch_kernels
from ._checks import expanded_public, expanded_secret
from .params import MayoParams

FRESH_KEY_BYTES = 4 << 20
"""Keystream bytes of the keys one chunk holds at a time (fresh-key verification and signing,
key generation)."""


def _many_elements(group) -> bool:
    """Enough elements under one key to split them across the threads (else: one key per task)."""
    return len(group) >= 4 * pool.cpu_threads()


def _keys_per_chunk(p: MayoParams) -> int:
    return max(1, FRESH_KEY_BYTES // (p.P1_bytes + p.P2_bytes))


# -- verification --------------------------------------------------------------------------------

def verification_form(epk: scheme.ExpandedPublicKey, count: int) -> tuple:
    """What the compiled loop reads for ``count`` verifications: (the encoding P1 || P2 || P3,
    None) for the encoded kernel sets (GFNI, AVX2), else ``ExpandedPublicKey.for_verification``'s (matrix, encoded)."""
    return (epk.encoded, None) if sets.ENCODED else epk.for_verification(count)


def _verify_indices(p: MayoParams, key, messages, sigs, out, idx):
    """out[idx] = the verdicts of the well-formed signatures sigs[idx] under one key, given in
    its ``verification_form``."""
    data, offsets, rows = batch_data.verification_arrays(p, messages, sigs, idx)
    res = np.zeros(len(idx), np.bool_)
    verify_loop(p, key, data, offsets, rows, res)
    out[idx] = res


def verify_loop(p: MayoParams, key, data, offsets, rows, res) -> None:
    """The compiled loop of a one-key chunk: res = the verdicts of the signature rows over the
    messages data[offsets[b]:offsets[b+1]], the key in its ``verification_form``."""
    f_tail = p.f_tail_array
    if key[1] is None:
        batch_kernels.verify_chunk_encoded(key[0], p.v, p.zero_chunks, sets.FORMS, data, offsets, rows, f_tail,
                                           p.k, p.n, p.m, p.digest_bytes, res, kernels.verify_units())
    else:
        batch_kernels.verify_chunk(key[0], p.zero_limbs, (0,) if key[1] else (), data, offsets, rows, f_tail, p.k,
                                   p.n, p.m, p.digest_bytes, res, kernels.verify_units())


def sign_loop(p: MayoParams, esk: scheme.ExpandedSecretKey, V, R, T, S, ok) -> None:
    """The compiled loop of a one-key chunk: one signing attempt per element (``sign_chunk``), on
    the key's encoding with an encoded kernel set where it runs."""
    f_tail = p.f_tail_array
    if sets.ENCODED and esk.slots is not None:
        batch_kernels.sign_chunk_encoded(esk.O, esk.slots, V, R, T, f_tail, p.n, p.zero_chunks, sets.FORMS, S, ok,
                                         kernels.units())
    else:
        batch_kernels.sign_chunk(esk.O, esk.P1, esk.L, V, R, T, f_tail, p.n, S, ok, kernels.units())


def _verify_one_key(p: MayoParams, epk: scheme.ExpandedPublicKey, messages, sigs, out, index, threads):
    """out[index[j]] = verdict of (messages[j], sigs[j]) for well-formed signatures under one key."""
    index = np.asarray(index).tolist()    # Python ints: indexing the lists with numpy integers is slower
    key = verification_form(epk, len(index))    # resolved once, before the threads share it
    pool.run_chunks(lambda lo, hi: _verify_indices(p, key, messages, sigs, out, index[lo:hi]), len(index), threads)


def _verify_fresh_keys(p, groups, messages, sigs, out, threads):
    """Elements under key byte strings that few elements share (``groups``: [(index, key)] per
    key). Per chunk of keys, the encodings of P1 || P2 (AES from a compact key, copied from an
    expanded one) are made in Python, then one compiled loop assembles each key
    into a reused buffer and verifies its elements: no key object and no allocation per key."""
    p12, seed, mb = p.P1_bytes + p.P2_bytes, p.pk_seed_bytes, p.m_bytes
    to_p12, to_p3 = scheme.public_entry_places(p)
    f_tail = p.f_tail_array

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
        data, offsets, rows = batch_data.verification_arrays(p, messages, sigs, idx)
        res = np.zeros(len(idx), np.bool_)
        if sets.ENCODED:     # each key's P1 || P2 || P3 and spare bytes as one row, read in place
            epks = np.zeros((len(part), p.epk_bytes + scheme.spare_bytes(p)), np.uint8)
            epks[:, :p12] = flat[:len(part) * p12].reshape(len(part), p12)
            epks[:, p12:p.epk_bytes] = P3
            batch_kernels.verify_fresh_keys_encoded(epks, p.v, p.zero_chunks, sets.FORMS, np.array(first, np.int64), data,
                                                    offsets, rows, f_tail, p.k, p.n, p.m, p.digest_bytes, res,
                                                    kernels.verify_units())
        else:
            slots = np.zeros((p.n * (p.n + 1) // 2, p.words), np.uint64)
            batch_kernels.verify_fresh_keys(flat[:len(part) * p12].reshape(len(part), -1, mb),
                                            P3.reshape(len(part), -1, mb), to_p12, to_p3, np.array(first, np.int64),
                                            data, offsets, rows, f_tail, p.k, p.n, p.m, p.digest_bytes,
                                            slots, slots.view(np.uint8), p.zero_limbs, res, kernels.verify_units())
        out[idx] = res

    pool.run_chunks(work, len(groups), threads, _keys_per_chunk(p))


# -- signing -------------------------------------------------------------------------------------

def _sign_one_key(p: MayoParams, esk: scheme.ExpandedSecretKey, messages, randomness, out, index, threads):
    """out[index[j]] = signature of messages[j] with salt randomness randomness[j], one secret key."""
    def work(lo, hi):
        idx = index[lo:hi]
        salts, T, V, R = batch_data.signing_inputs(p, [messages[j] for j in idx], [randomness[j] for j in idx],
                                                   [esk.seed_sk])
        S = np.zeros((len(idx), p.k * p.n), np.uint8)
        ok = np.zeros(len(idx), np.bool_)
        sign_loop(p, esk, V, R, T, S, ok)
        batch_data.finish_signatures(p, idx, S, ok, salts, messages, randomness, out, lambda row: esk)

    pool.run_chunks(work, len(index), threads)


def _sign_fresh_keys(p: MayoParams, groups, messages, randomness, out, threads):
    """Elements under compact secret keys that few elements share (``groups``: [(index, seed)]
    per key). Per chunk of keys the seed expansion and the keystreams are done in Python and the
    elements hashed in compiled code (``batch_data.signing_inputs``), then one compiled loop
    (``batch_kernels.sign_fresh_keys``) expands each key and signs its elements: one GIL-free
    stretch per chunk instead of several per key."""
    f_tail = p.f_tail_array

    def work(lo, hi):
        part = groups[lo:hi]
        seeds = [g[0][1] for g in part]
        idx, first, key_of = [], [0], []
        for q, g in enumerate(part):
            idx += [i for i, _ in g]
            key_of += [q] * len(g)
            first.append(len(idx))
        salts, T, V, R = batch_data.signing_inputs(p, [messages[j] for j in idx], [randomness[j] for j in idx],
                                                   seeds, first)
        S = np.zeros((len(idx), p.k * p.n), np.uint8)
        ok = np.zeros(len(idx), np.bool_)
        if sets.ENCODED:
            _, slots, _, O = batch_data.seed_slots(p, seeds)
            batch_kernels.sign_fresh_keys_encoded(slots, O, np.array(first, np.int64), V, R, T, f_tail, p.n,
                                                  p.zero_chunks, sets.FORMS, S, ok, kernels.units())
        else:
            _, streams, O = batch_data.seed_streams(p, seeds)
            batch_kernels.sign_fresh_keys(streams, O, np.array(first, np.int64), V, R, T, f_tail, p.n, p.m, S, ok,
                                          kernels.units())
        batch_data.finish_signatures(p, idx, S, ok, salts, messages, randomness, out,
                                     lambda row: scheme.expand_sk(p, seeds[key_of[row]]))

    pool.run_chunks(work, len(groups), threads, _keys_per_chunk(p))


# -- the backend ---------------------------------------------------------------------------------

class CpuBackend(SignatureBackend):
    name = "cpu"

    def verify_one_key(self, p, key, messages, sigs, good, out, threads) -> None:
        _verify_one_key(p, key.expanded(), messages, sigs, out, good, threads)

    def verify_groups(self, p, groups, messages, sigs, out, threads) -> dict:
        items = list(groups.values())
        for g in filter(_many_elements, items):   # many elements under one key: split them across the threads
            _verify_one_key(p, expanded_public(p, g[0][1]), messages, sigs, out, [i for i, _ in g], threads)
        small = [g for g in items if not _many_elements(g)]
        objects = [g for g in small if not isinstance(g[0][1], bytes)]

        def work(lo, hi):  # key objects (they keep their expansion) with few elements each
            for g in objects[lo:hi]:
                _verify_indices(p, verification_form(g[0][1].expanded(), len(g)), messages, sigs, out,
                                [i for i, _ in g])

        pool.run_chunks(work, len(objects), threads)
        _verify_fresh_keys(p, [g for g in small if isinstance(g[0][1], bytes)], messages, sigs, out, threads)
        return {}

    def sign_one_key(self, p, key, messages, randomness, out, threads) -> None:
        _sign_one_key(p, key.expanded(), messages, randomness, out, np.arange(len(messages)), threads)

    def sign_groups(self, p, groups, messages, randomness, out, threads) -> dict:
        items = list(groups.values())
        for g in filter(_many_elements, items):
            _sign_one_key(p, expanded_secret(p, g[0][1]), messages, randomness, out,
                          np.array([i for i, _ in g], np.int64), threads)
        fresh, kept = [], []        # compact keys; expanded keys and key objects (they keep their expansion)
        for g in items:
            if not _many_elements(g):
                (fresh if isinstance(g[0][1], bytes) and len(g[0][1]) == p.csk_bytes else kept).append(g)

        def work(lo, hi):
            for g in kept[lo:hi]:
                _sign_one_key(p, expanded_secret(p, g[0][1]), messages, randomness, out,
                              np.array([i for i, _ in g], np.int64), 1)

        pool.run_chunks(work, len(kept), threads)
        _sign_fresh_keys(p, fresh, messages, randomness, out, threads)
        return {}

    def public_keys(self, p, seeds, threads) -> list[bytes]:
        """Per chunk of seeds on the pool, the hashing and the keystreams in Python, then one
        compiled loop (``batch_kernels.public_keys_chunk``) for the rest: one GIL-free stretch
        per chunk, not per key."""
        out: list = [None] * len(seeds)

        def work(lo, hi):
            encoded = np.empty((hi - lo, p.P3_bytes), np.uint8)
            if sets.ENCODED:
                seed_pks, slots, oils, _ = batch_data.seed_slots(p, seeds[lo:hi])
                batch_kernels.public_keys_chunk_encoded(slots, oils, p.v, p.o, p.zero_chunks, sets.FORMS, encoded)
            else:
                seed_pks, streams, O = batch_data.seed_streams(p, seeds[lo:hi])
                batch_kernels.public_keys_chunk(streams, O, p.m, encoded)
            for q, seed_pk in enumerate(seed_pks):
                out[lo + q] = seed_pk + encoded[q].tobytes()

        pool.run_chunks(work, len(seeds), threads, _keys_per_chunk(p))
        return out


CPU = CpuBackend()
