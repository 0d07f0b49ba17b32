"""The engine's job entry point against the official vectors, and its argument errors."""

import pytest

from pqforge import kat, mayo
from pqforge.drbg import NistCtrDrbg
from pqforge.jobs import run_job
from pqforge.errors import InvalidInput, InvalidType


@pytest.fixture(scope="module")
def entries(kat_root):
    """The first official MAYO-2 entries (the file plain or gzipped, as the KAT folder keeps it)."""
    name = "PQCsignKAT_24_MAYO_2.rsp"
    path = next((p for p in (kat_root / "mayo" / name, kat_root / "mayo" / (name + ".gz")) if p.exists()), None)
    assert path is not None, f"{name} not found under {kat_root / 'mayo'}"
    return kat.read_rsp(path)[:3]


def test_sign_job_reproduces_the_official_signatures(entries):
    p = mayo.MAYO2.params
    for e in entries:
        drbg = NistCtrDrbg(e["seed"])
        pk, sk = mayo.keypair(mayo.MAYO2, rng=drbg)       # the KAT generator's draws: key, then salt
        assert (pk, sk) == (e["pk"], e["sk"])
        sig, = run_job("MAYO-2", "sign", sk, [e["msg"]], rng=drbg, backend="cpu")
        assert sig == e["sm"][:p.sig_bytes]


def test_verify_job_accepts_official_signatures_and_rejects_a_changed_message(entries):
    p = mayo.MAYO2.params
    pk = mayo.MAYO2.public_key_from_bytes(entries[0]["pk"])
    msgs = [e["msg"] for e in entries]
    sigs = [e["sm"][:p.sig_bytes] for e in entries]
    assert run_job(mayo.MAYO2, "verify", entries[0]["pk"], msgs[:1], sigs[:1]).tolist() == [True]
    got = run_job("mayo-2", "verify", pk, [msgs[0], msgs[0] + b"!"], [sigs[0], sigs[0]], threads=2)
    assert got.tolist() == [True, False]


def test_job_arguments_are_checked():
    sk = mayo.MAYO2.generate_private_key()
    with pytest.raises(InvalidInput, match="operation"):
        run_job("MAYO-2", "encrypt", sk, [b"m"])
    with pytest.raises(InvalidInput, match="signature algorithms"):
        run_job("Classic-McEliece-348864", "sign", b"k", [b"m"])
    with pytest.raises(InvalidInput, match="needs the signatures"):
        run_job("MAYO-2", "verify", sk.public_key(), [b"m"])
    with pytest.raises(InvalidType, match="private key"):
        run_job("MAYO-2", "sign", sk.public_key(), [b"m"])
    with pytest.raises(InvalidType, match="MAYO-1 private key"):
        run_job("MAYO-1", "sign", sk, [b"m"])
    with pytest.raises(InvalidInput, match="no signatures"):
        run_job("MAYO-2", "sign", sk, [b"m"], [b"s"])
