"""The pqforge command end to end: keys, signatures, tampering, refusals, KAT regeneration."""

import gzip
import os
import stat
import subprocess
import sys

import pytest

from pqforge.cli import main

from .known_answers import require


def run(*args):
    return subprocess.run([sys.executable, "-m", "pqforge.cli", *args], capture_output=True, text=True)


@pytest.fixture()
def alice(tmp_path):
    assert main(["keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "alice")]) == 0
    return tmp_path


def test_keygen_sign_verify_and_tamper(alice, capsys):
    d = alice
    assert stat.S_IMODE(os.stat(d / "alice.sk").st_mode) == 0o600
    doc = d / "doc.txt"
    doc.write_bytes(b"contract text\n")
    assert main(["sign", "--key", str(d / "alice.sk"), str(doc)]) == 0
    assert (d / "doc.txt.sig").stat().st_size == 186
    assert main(["verify", "--key", str(d / "alice.pk"), str(doc), str(d / "doc.txt.sig")]) == 0
    doc.write_bytes(b"contract text!\n")
    assert main(["verify", "--key", str(d / "alice.pk"), str(doc), str(d / "doc.txt.sig")]) == 1
    assert "invalid" in capsys.readouterr().out


def test_refuses_to_overwrite_without_force(alice, capsys):
    d = alice
    before = (d / "alice.sk").read_text()
    assert main(["keygen", "--alg", "MAYO-2", "--out", str(d / "alice")]) == 2
    assert "exists" in capsys.readouterr().err
    assert (d / "alice.sk").read_text() == before
    assert main(["keygen", "--alg", "MAYO-2", "--out", str(d / "alice"), "--force"]) == 0
    assert (d / "alice.sk").read_text() != before
    (d / "f").write_bytes(b"x")
    (d / "f.sig").write_bytes(b"old")
    assert main(["sign", "--key", str(d / "alice.sk"), str(d / "f")]) == 2
    assert (d / "f.sig").read_bytes() == b"old"


def test_bad_inputs_exit_2_with_one_line(alice):
    d = alice
    (d / "m").write_bytes(b"m")
    r = run("sign", "--key", str(d / "alice.sk"), str(d / "m"), "-o", str(d / "m.sig"))
    assert r.returncode == 0, r.stderr
    cases = []
    truncated = d / "trunc.pk"
    truncated.write_text((d / "alice.pk").read_text()[:300])
    cases.append(("verify", "--key", str(truncated), str(d / "m"), str(d / "m.sig")))
    cases.append(("verify", "--key", str(d / "alice.sk"), str(d / "m"), str(d / "m.sig")))  # wrong key type
    short = d / "short.sig"
    short.write_bytes((d / "m.sig").read_bytes()[:-1])
    cases.append(("verify", "--key", str(d / "alice.pk"), str(d / "m"), str(short)))
    cases.append(("verify", "--key", str(d / "missing.pk"), str(d / "m"), str(d / "m.sig")))
    cases.append(("keygen", "--alg", "MAYO-4", "--out", str(d / "x")))
    binary = d / "bin.sk"
    binary.write_bytes(os.urandom(64))
    cases.append(("sign", "--key", str(binary), str(d / "m"), "-o", str(d / "y.sig")))
    for args in cases:
        r = run(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1 and "error" in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr


def test_kat_command_matches_official_first_entry(tmp_path):
    out = tmp_path / "mayo2.rsp"
    reference = require("mayo/PQCsignKAT_24_MAYO_2.rsp")       # plain or gzipped
    r = run("kat", "--alg", "MAYO-2", "--count", "1", "--out", str(out), "--reference", str(reference))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "MATCH" in r.stdout and "all match" in r.stdout
    opener = gzip.open if reference.suffix == ".gz" else open
    with opener(reference, "rt") as f:
        official = f.read()
    assert official.startswith(out.read_text())


def test_bench_json_runs(capsys):
    import json
    assert main(["bench", "--alg", "MAYO-2", "--json", "--seconds", "0.01"]) == 0
    rows = json.loads(capsys.readouterr().out)["results"]
    assert {r["op"] for r in rows} >= {"keygen", "sign", "verify"}
    assert all(r["median_us"] > 0 for r in rows)


def test_bench_steps_reports_every_step(capsys):
    import json
    assert main(["bench", "--steps", "--alg", "MAYO-2", "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["MAYO-2"]
    assert {"decode P1,P2", "sign: sample solution", "verify (whole, expanded)"} <= set(steps)
    assert all(t > 0 for t in steps.values())
