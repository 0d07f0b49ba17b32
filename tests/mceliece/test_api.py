"""Public interface of pqforge.mceliece: round trips, sizes, key objects and bad input."""

import os

import pytest

import pqforge.algorithms
import pqforge.mceliece as mc
from pqforge.drbg import NistCtrDrbg
from pqforge.errors import InvalidInput, InvalidKey, InvalidType, UnknownAlgorithm

from ..known_answers import kem_entry0

SIZES = {  # (pk, sk, ct) from the submission's parameter table
    "Classic-McEliece-348864": (261120, 6492, 96),
    "Classic-McEliece-460896": (524160, 13608, 156),
    "Classic-McEliece-6688128": (1044992, 13932, 208),
    "Classic-McEliece-6960119": (1047319, 13948, 194),
    "Classic-McEliece-8192128": (1357824, 14120, 208),
}


@pytest.mark.parametrize("name", list(mc.ALGORITHMS))
def test_sizes_and_attributes(name):
    alg = mc.get(name)
    pk, sk, ct = SIZES[name.rstrip("f")]
    assert (alg.public_key_size, alg.private_key_size, alg.ciphertext_size, alg.shared_secret_size) == (pk, sk, ct, 32)
    assert alg.name == name and alg.kind == "kem"
    assert pqforge.algorithms.get(name) is alg


def test_named_objects_and_get():
    assert mc.McEliece348864 is mc.get("Classic-McEliece-348864")
    assert mc.McEliece8192128f is mc.get("classic-mceliece-8192128f")
    for spelling in ("McEliece-460896f", "mceliece460896f", "CLASSIC_MCELIECE_460896F"):
        assert mc.get(spelling) is mc.McEliece460896f
        assert pqforge.algorithms.get(spelling) is mc.McEliece460896f
    assert len(mc.ALGORITHMS) == 10
    with pytest.raises(UnknownAlgorithm):
        mc.get("Classic-McEliece-1")


@pytest.fixture(scope="module")
def keys348864():
    sk = mc.McEliece348864.generate_private_key()
    return sk


@pytest.mark.parametrize("name", ["Classic-McEliece-348864", "Classic-McEliece-460896f", "Classic-McEliece-6960119"])
def test_round_trip_key_objects(name):
    alg = mc.get(name)
    sk = alg.generate_private_key()
    pk = sk.public_key()
    assert len(pk.public_bytes_raw()) == alg.public_key_size
    assert len(sk.private_bytes_raw()) == alg.private_key_size
    for _ in range(3):
        ct, ss = pk.encapsulate()
        assert len(ct) == alg.ciphertext_size and len(ss) == 32
        assert sk.decapsulate(ct) == ss
    again = alg.private_key_from_bytes(sk.private_bytes_raw())
    assert again.public_key() == pk
    ct, ss = alg.public_key_from_bytes(pk.public_bytes_raw()).encapsulate()
    assert again.decapsulate(ct) == ss


def test_functional_layer_and_custom_rng():
    rng = NistCtrDrbg(bytes(48))
    pk, sk = mc.keypair("Classic-McEliece-348864f", rng=rng)
    ct, ss = mc.encapsulate(mc.McEliece348864f, pk, rng=rng)
    assert mc.decapsulate(mc.McEliece348864f.params, sk, ct) == ss
    # the same seed gives the same keys: the rng is the only source of randomness
    assert mc.keypair("Classic-McEliece-348864f", rng=NistCtrDrbg(bytes(48))) == (pk, sk)


def test_system_generator_draws_attempts_together_as_if_one_at_a_time(monkeypatch):
    """Without an rng, one call of os.urandom gives several FixedWeight attempts; the first that
    succeeds is taken, exactly as drawing them one at a time with a caller's rng."""
    from pqforge.mceliece import scheme
    from pqforge.mceliece.matrix import fixed_weight_indices
    p = mc.McEliece348864.params
    official = kem_entry0(p.name)
    pk = official["pk"]
    draw = 4 * p.t                                  # n < 2^m: 2t words of two bytes
    bad = bytes(draw)                               # every index 0: a repeat, rejected
    rng = NistCtrDrbg(bytes(range(48)))
    good = rng(draw)
    while not fixed_weight_indices(good, p.n, p.t, p.m)[0]:
        good = rng(draw)
    one_at_a_time = iter([bad, good])
    expected = mc.encapsulate(p, pk, rng=lambda n: next(one_at_a_time))
    calls, stream = [], bytearray(bad + good + rng(2 * draw))

    def urandom(n):                                 # the same bytes in whatever portions asked
        calls.append(n)
        taken = bytes(stream[:n])
        del stream[:n]
        return taken
    monkeypatch.setattr(scheme.os, "urandom", urandom)
    assert mc.encapsulate(p, pk) == expected
    assert calls == [draw * scheme.ATTEMPTS_AT_ONCE]
    ct, ss = expected                               # and the official secret key agrees
    assert mc.decapsulate(p, official["sk"], ct) == ss


def test_system_rng_gives_fresh_keys():
    assert mc.keypair(mc.McEliece348864)[1] != mc.keypair(mc.McEliece348864)[1]


def test_benchmark_ops_are_callable():
    ops = mc.McEliece348864.benchmark_ops()
    assert set(ops) == {"keygen", "encaps", "decaps"}
    assert len(ops["decaps"]()) == 32


# -- bad input ------------------------------------------------------------------------------

def test_wrong_lengths_and_types(keys348864):
    alg = mc.McEliece348864
    sk = keys348864
    pk = sk.public_key().public_bytes_raw()
    ct, _ = sk.public_key().encapsulate()
    with pytest.raises(InvalidInput, match="ciphertext must be 96 bytes"):
        sk.decapsulate(ct[:-1])
    with pytest.raises(InvalidInput, match="96 bytes"):
        alg.decapsulate(sk.private_bytes_raw(), ct + b"\0")
    with pytest.raises(InvalidType, match="bytes"):
        sk.decapsulate(ct.hex())
    with pytest.raises(InvalidType):
        sk.decapsulate(None)
    with pytest.raises(InvalidKey, match="public key must be 261120 bytes"):
        alg.encapsulate(pk[:-1])
    with pytest.raises(InvalidKey, match="private key must be 6492 bytes"):
        alg.decapsulate(sk.private_bytes_raw()[:100], ct)
    with pytest.raises(InvalidKey):
        alg.private_key_from_bytes(b"")
    with pytest.raises(InvalidKey):
        alg.public_key_from_bytes(pk + b"\0")
    with pytest.raises(InvalidType):
        alg.public_key_from_bytes("00" * alg.public_key_size)
    # bytearray and memoryview are accepted
    assert sk.decapsulate(bytearray(ct)) == sk.decapsulate(memoryview(ct))


def test_corrupt_private_key_fields(keys348864):
    alg = mc.McEliece348864
    raw = bytearray(keys348864.private_bytes_raw())
    bad = bytearray(raw)
    bad[36] = 1                        # pivot field of a plain set is fixed
    with pytest.raises(InvalidKey, match="pivot"):
        alg.private_key_from_bytes(bytes(bad))
    bad = bytearray(raw)
    bad[41] |= 0xF0                    # a Goppa coefficient above 2^12
    with pytest.raises(InvalidKey, match="Goppa"):
        alg.private_key_from_bytes(bytes(bad))
    ct, _ = keys348864.public_key().encapsulate()
    for at in (41, 40 + 2 * alg.params.t - 1):          # the first and the last coefficient
        bad = bytearray(raw)
        bad[at] |= 0x10
        with pytest.raises(InvalidKey, match="Goppa"):
            mc.decapsulate(alg.name, bytes(bad), ct)    # the functional layer checks it in the kernel
    bad = bytearray(raw)
    bad[36] = 1
    with pytest.raises(InvalidKey, match="pivot"):
        mc.decapsulate(alg.name, bytes(bad), ct)


def test_corrupt_private_key_body_never_crashes(keys348864):
    alg = mc.McEliece348864
    raw = keys348864.private_bytes_raw()
    ct, _ = keys348864.public_key().encapsulate()
    # random Goppa coefficients (kept below 2^12), random control bits, or both
    for start, stop in [(40, 168), (168, 6056), (40, 6056)]:
        bad = bytearray(raw)
        bad[start:stop] = os.urandom(stop - start)
        for i in range(41, 168, 2):
            bad[i] &= 0x0F
        bad = bytes(bad)
        assert len(alg.decapsulate(bad, ct)) == 32
        try:
            alg.private_key_from_bytes(bad).public_key()
        except InvalidKey:
            pass


def test_padding_bits_of_6960119():
    alg = mc.McEliece6960119
    official = kem_entry0(alg.name)
    ct = bytearray(official["ct"])
    ct[-1] |= 0x80                     # mt = 1547: the top 5 bits of the last byte are padding
    with pytest.raises(InvalidInput, match="padding"):
        alg.decapsulate(official["sk"], bytes(ct))
    pk = bytearray(official["pk"])
    pk[alg.params.pk_row_bytes - 1] |= 0x80   # k = 5413: the top 3 bits of each row's last byte
    with pytest.raises(InvalidKey, match="padding"):
        alg.encapsulate(bytes(pk))
    with pytest.raises(InvalidKey, match="padding"):
        alg.public_key_from_bytes(bytes(pk))
    pk = bytearray(official["pk"])
    pk[-1] |= 0x20                             # the last row
    with pytest.raises(InvalidKey, match="padding"):
        alg.encapsulate(bytes(pk))


def test_a_closed_private_key_refuses_every_use(keys348864):
    key = mc.McEliece348864.private_key_from_bytes(keys348864.private_bytes_raw())
    with key as same:
        assert same is key
        ct, ss = key.public_key().encapsulate()
        assert key.decapsulate(ct) == ss
    assert key.closed and "closed" in repr(key)
    for use in (lambda: key.decapsulate(ct), key.public_key, key.private_bytes_raw, key.__enter__):
        with pytest.raises(InvalidKey, match="Classic-McEliece-348864 private key has been closed"):
            use()
    key.close()                                     # again: nothing happens


def test_the_secret_arrays_made_in_python_are_zeroed_after_use(keys348864, monkeypatch):
    from pqforge.mceliece import scheme
    pk, sk = keys348864.public_key().public_bytes_raw(), keys348864.private_bytes_raw()
    made = []

    def keep(fn, pick):
        def call(*args, **kwargs):
            result = fn(*args, **kwargs)
            made.extend(pick(result))
            return result
        return call
    def keep_output(fn, pick):       # the array a compiled call writes its secret into (once: calls may repeat)
        def call(*args, **kwargs):
            result = fn(*args, **kwargs)
            if not any(a is pick(args) for a in made):
                made.append(pick(args))
            return result
        return call
    monkeypatch.setattr(scheme, "encapsulation", keep_output(scheme.encapsulation, lambda a: a[-1]))
    monkeypatch.setattr(scheme, "decapsulation", keep_output(scheme.decapsulation, lambda a: a[-1]))
    monkeypatch.setattr(scheme, "secret_key_parts", keep(scheme.secret_key_parts, lambda r: r[:2]))
    monkeypatch.setattr(scheme, "support_from_control_bits", keep(scheme.support_from_control_bits, lambda r: [r]))
    ct, ss = mc.encapsulate(mc.McEliece348864, pk)
    assert mc.decapsulate(mc.McEliece348864, sk, ct) == ss
    assert scheme.public_key_from_private(mc.McEliece348864.params, sk) == pk
    # C || K, K, g, the control bits, the support (the hash inputs never leave the compiled calls)
    assert len(made) == 5 and all(a.size for a in made)
    assert all(not a.any() for a in made)
