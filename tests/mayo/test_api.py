"""Round trips, compact and expanded paths, tampering and bad input for all four sets."""

import os
import random

import pytest

import pqforge
from pqforge import mayo
from pqforge.drbg import NistCtrDrbg
from pqforge.errors import InvalidInput, InvalidKey, InvalidSignature, InvalidType, UnknownAlgorithm
from .conftest import RUNNABLE, use_kernel_set

ALGS = list(mayo.ALGORITHMS.values())


@pytest.fixture(scope="module", params=ALGS, ids=lambda a: a.name)
def keyed(request):
    alg = request.param
    sk = alg.generate_private_key()
    return alg, sk, sk.public_key()


def test_sizes_match_the_specification():
    expected = {"MAYO-1": (24, 1420, 454), "MAYO-2": (24, 4912, 186),
                "MAYO-3": (32, 2986, 681), "MAYO-5": (40, 5554, 964)}
    for alg in ALGS:
        assert (alg.private_key_size, alg.public_key_size, alg.signature_size) == expected[alg.name]


def test_round_trip_with_fresh_randomness(keyed):
    alg, sk, pk = keyed
    for msg in (b"", b"data", os.urandom(1000)):
        sig = sk.sign(msg)
        assert len(sig) == alg.signature_size
        assert pk.verify(sig, msg) is None
    assert sk.sign(b"x") != sk.sign(b"x")  # fresh salt randomness


def test_keys_round_trip_through_bytes(keyed):
    alg, sk, pk = keyed
    sk2 = alg.private_key_from_bytes(sk.private_bytes_raw())
    pk2 = alg.public_key_from_bytes(pk.public_bytes_raw())
    assert sk2.public_key() == pk == pk2
    pk2.verify(sk2.sign(b"m"), b"m")


def test_expanded_and_compact_paths_agree(keyed):
    alg, sk, pk = keyed
    csk, cpk = sk.private_bytes_raw(), pk.public_bytes_raw()
    esk, epk = mayo.expand_sk(alg, csk), mayo.expand_pk(alg, cpk)
    assert len(esk) == alg.params.esk_bytes and len(epk) == alg.params.epk_bytes
    seed = bytes(range(48))
    sig_c = mayo.sign(alg, csk, b"msg", rng=NistCtrDrbg(seed))
    sig_e = mayo.sign(alg, esk, b"msg", rng=NistCtrDrbg(seed))
    sig_o = sk.sign(b"msg", rng=NistCtrDrbg(seed))
    assert sig_c == sig_e == sig_o
    for key in (cpk, epk):
        assert mayo.verify(alg, key, b"msg", sig_c)
        assert not mayo.verify(alg, key, b"msh", sig_c)


def test_nist_api_forms(keyed):
    alg, sk, pk = keyed
    sm = alg.sign_nist(sk.private_bytes_raw(), b"hello")
    assert sm[alg.signature_size:] == b"hello"
    assert alg.open_nist(pk.public_bytes_raw(), sm) == b"hello"
    bad = bytearray(sm)
    bad[-1] ^= 1
    with pytest.raises(InvalidSignature):
        alg.open_nist(pk.public_bytes_raw(), bytes(bad))


def _flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def test_any_single_bit_flip_fails(keyed):
    alg, sk, pk = keyed
    rnd = random.Random(alg.name)
    msg = b"the message that was signed"
    sig = sk.sign(msg)
    cpk = pk.public_bytes_raw()
    sig_bits = len(sig) * 8
    # both ends of the signature (first nibbles, salt), plus random positions
    positions = [0, 1, 4, sig_bits - 1, sig_bits - 8 * alg.params.salt_bytes] + rnd.sample(range(sig_bits), 20)
    for bit in positions:
        assert not mayo.verify(alg, cpk, msg, _flip(sig, bit)), f"signature bit {bit}"
    for bit in rnd.sample(range(len(msg) * 8), 10):
        assert not mayo.verify(alg, cpk, _flip(msg, bit), sig), f"message bit {bit}"
    for bit in [0, 127, 128, len(cpk) * 8 - 1] + rnd.sample(range(len(cpk) * 8), 10):
        assert not mayo.verify(alg, _flip(cpk, bit), msg, sig), f"public key bit {bit}"


def test_wrong_lengths_and_types_raise_clear_errors(keyed):
    alg, sk, pk = keyed
    sig = sk.sign(b"m")
    with pytest.raises(InvalidSignature, match=f"{alg.signature_size} bytes"):
        pk.verify(sig[:-1], b"m")
    # a function documented to return a bool returns False for a malformed signature
    for bad in (sig + b"\0", sig[:-1], b"", bytearray(sig[:10])):
        assert mayo.verify(alg, pk.public_bytes_raw(), b"m", bad) is False
        assert alg.verify(pk.public_bytes_raw(), b"m", bad) is False
    with pytest.raises(InvalidKey, match=f"{alg.public_key_size} bytes"):
        mayo.verify(alg, pk.public_bytes_raw()[:-1], b"m", sig)
    with pytest.raises(InvalidKey, match=f"{alg.private_key_size} bytes"):
        mayo.sign(alg, b"short", b"m")
    # one mistake, one class: a short key is InvalidKey from the key objects and the functional layer
    with pytest.raises(InvalidKey, match=f"{alg.private_key_size} bytes"):
        alg.private_key_from_bytes(bytes(alg.private_key_size + 1))
    with pytest.raises(InvalidKey, match=f"{alg.public_key_size} bytes"):
        alg.public_key_from_bytes(b"")
    with pytest.raises(InvalidKey, match=f"{alg.public_key_size} bytes"):
        alg.public_key_from_bytes(pk.public_bytes_raw()[:-1])
    with pytest.raises(InvalidKey, match=f"{alg.public_key_size} bytes"):
        mayo.expand_pk(alg, pk.public_bytes_raw()[:-1])
    with pytest.raises(InvalidKey, match=f"{alg.private_key_size} bytes"):
        mayo.expand_sk(alg, b"short")
    with pytest.raises(InvalidKey, match=f"{alg.private_key_size} bytes"):
        mayo.sign_many(alg, [b"short"], [b"m"], backend="cpu")
    with pytest.raises(InvalidType, match="bytes, not str"):
        sk.sign("text")
    with pytest.raises(InvalidType, match="bytes, not str"):
        pk.verify("sig", b"m")
    with pytest.raises(InvalidType):
        mayo.verify(alg, pk.public_bytes_raw(), None, sig)


def test_malformed_signature_of_right_length_just_fails(keyed):
    alg, sk, pk = keyed
    for junk in (bytes(alg.signature_size), b"\xff" * alg.signature_size, os.urandom(alg.signature_size)):
        assert not mayo.verify(alg, pk.public_bytes_raw(), b"m", junk)
        with pytest.raises(InvalidSignature):
            pk.verify(junk, b"m")


def test_bad_rng_and_names():
    with pytest.raises(InvalidInput, match="expected 24 bytes"):
        mayo.MAYO2.generate_private_key(rng=lambda n: b"\0" * (n - 1))
    with pytest.raises(InvalidType, match="callable"):
        mayo.MAYO2.generate_private_key(rng=42)
    with pytest.raises(UnknownAlgorithm, match="MAYO-2"):
        mayo.get("MAYO-4")
    with pytest.raises(UnknownAlgorithm):
        mayo.keypair("mayo-7")
    for spelling in ("MAYO-2", "mayo-2", "MAYO2", "mayo_2", "Mayo 2"):
        assert mayo.get(spelling) is mayo.MAYO2
        assert pqforge.algorithms.get(spelling) is mayo.MAYO2
        assert mayo.keypair(spelling, rng=lambda n: bytes(n)) == mayo.keypair(mayo.MAYO2, rng=lambda n: bytes(n))
    assert isinstance(InvalidKey("x"), ValueError) and isinstance(InvalidType("x"), TypeError)
    assert issubclass(InvalidSignature, pqforge.PQForgeError)


@pytest.mark.parametrize("kernels", RUNNABLE)
def test_a_key_in_steady_use_verifies_from_bit_planes_with_the_same_verdicts(keyed, kernels, monkeypatch):
    # portable kernels: the first verifications use the key's byte encoding, later ones its decoded
    # bit planes; the encoded sets (GFNI, AVX2): always the encoding
    from pqforge.gf16 import sets
    use_kernel_set(monkeypatch, kernels)
    alg, sk, _ = keyed
    pk = alg.public_key_from_bytes(sk.public_key().public_bytes_raw())
    msgs = [bytes([i]) * 5 for i in range(10)]
    for msg in msgs:
        sig = sk.sign(msg)
        pk.verify(sig, msg)
        with pytest.raises(InvalidSignature):
            pk.verify(sig, msg + b"!")
    assert pk.expanded().has_bitsliced is not sets.ENCODED


def _secret_arrays(esk):
    return [a for a in (esk.O, esk.planes, esk.slots) if a is not None]


@pytest.mark.parametrize("kernels", RUNNABLE)
def test_closing_a_private_key_zeroes_its_expanded_secret_key_and_refuses_later_use(kernels, monkeypatch):
    use_kernel_set(monkeypatch, kernels)
    sk = mayo.MAYO2.generate_private_key()
    with sk as key:
        assert key is sk
        sig = sk.sign(b"m")
        esk = sk.expanded()
        esk.L                                       # the bit planes too, where the set signs from slots
        arrays = _secret_arrays(esk)
        assert arrays and all(a.any() for a in arrays)
    assert sk.closed and "closed" in repr(sk)
    assert all(not a.any() for a in arrays)         # zeroed in place, also through the references handed out
    for use in (lambda: sk.sign(b"m"), sk.expanded, sk.public_key, sk.private_bytes_raw,
                lambda: sk.sign_many([b"m"]), sk.__enter__):
        with pytest.raises(InvalidKey, match="MAYO-2 private key has been closed"):
            use()
    sk.close()                                      # again: nothing happens
    assert len(sig) == mayo.MAYO2.signature_size


def test_a_collected_private_key_zeroes_its_expanded_secret_key():
    import gc
    sk = mayo.MAYO2.generate_private_key()
    arrays = _secret_arrays(sk.expanded())
    del sk
    gc.collect()
    assert arrays and all(not a.any() for a in arrays)


def test_closing_zeroes_the_tensor_paths_matrices_made_from_the_key():
    tensor = pytest.importorskip("pqforge.mayo.tensor")
    sk = mayo.MAYO1.generate_private_key()
    sk.sign_many([b"a", b"b"], backend="cpu", path="tensor")
    prepared = list(tensor._prepared[sk].values())
    matrices = [m for p in prepared for m in (p.KL, *[block[-1] for block in p.P1_blocks])]
    assert matrices and all(m.any() for m in matrices)
    sk.close()
    assert sk not in tensor._prepared
    assert all(not m.any() for m in matrices)


def test_keys_alive_at_interpreter_exit_are_zeroed_without_errors():
    import subprocess
    import sys
    code = ("from pqforge.mayo import MAYO2\n"
            "sk = MAYO2.generate_private_key()\n"
            "sk.sign(b'exit')\n"
            "keys = [sk, MAYO2.private_key_from_bytes(sk.private_bytes_raw())]\n"
            "keys[1].expanded()\n"
            "keys.append(keys)                     # a cycle, collected (if at all) late in shutdown\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "Exception ignored" not in proc.stderr and "Error" not in proc.stderr, proc.stderr


def test_an_expanded_key_the_caller_keeps_outlives_its_key_object_and_is_zeroed_when_dropped():
    import gc
    esk = mayo.MAYO2.generate_private_key().expanded()     # the key object is gone at once
    gc.collect()
    arrays = _secret_arrays(esk)
    assert all(a.any() for a in arrays)
    from pqforge.mayo import scheme
    assert len(scheme.sign(mayo.MAYO2.params, esk, b"m", os.urandom)) == mayo.MAYO2.signature_size
    del esk
    gc.collect()
    assert all(not a.any() for a in arrays)


def test_benchmark_ops_sign_with_the_expanded_key_after_the_key_object_is_gone():
    ops = mayo.MAYO2.benchmark_ops()
    ops["sign (expanded sk)"]()
