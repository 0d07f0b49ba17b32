"""The pqforge command end to end: keys, signatures, tampering, refusals, KAT regeneration."""

import gzip
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

import pqforge
import pqforge.algorithms
from pqforge.cli import main

from .known_answers import require


def run(*args):
    return subprocess.run([sys.executable, "-m", "pqforge.cli", *args], capture_output=True, text=True)


@pytest.fixture()
def alice(tmp_path):
    assert main(["keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "alice")]) == 0
    return tmp_path


@pytest.fixture()
def alice_armoured(tmp_path):
    """Alice's keys in pqforge's own key file format."""
    assert main(["keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "alice"), "--format", "pqforge"]) == 0
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


def test_a_wrong_key_is_reported_before_an_existing_output(alice, capsys):
    # the key is the first thing to fix; --force would not have helped
    d = alice
    (d / "f").write_bytes(b"x")
    (d / "f.sig").write_bytes(b"old")
    assert main(["sign", "--key", str(d / "alice.pk"), str(d / "f")]) == 2
    err = capsys.readouterr().err
    assert "public key; a private key is expected" in err and "exists" not in err
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


def test_an_unknown_name_lists_the_algorithms_of_the_command(tmp_path, capsys):
    for args, listed, absent in ((["keygen", "--alg", "MAYO-4"], "MAYO-1, MAYO-2, MAYO-3, MAYO-5", "McEliece"),
                                 (["kem", "keygen", "--alg", "McEliece-34886"], "Classic-McEliece-348864,", "MAYO")):
        with pytest.raises(SystemExit) as exit_:
            main(args + ["--out", str(tmp_path / "x")])
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert f"expected one of: {listed}" in err and absent not in err.split("expected one of:")[1], err
    assert pqforge.algorithms.names("kem") + pqforge.algorithms.names("signature") == \
        sorted(pqforge.algorithms.names(), key=lambda name: name.startswith("MAYO"))


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


def test_kat_output_is_the_official_text_also_on_standard_output(tmp_path):
    out = tmp_path / "mayo2.rsp"
    assert main(["kat", "--alg", "MAYO-2", "--count", "3", "--out", str(out)]) == 0
    reference = require("mayo/PQCsignKAT_24_MAYO_2.rsp")
    with (gzip.open if reference.suffix == ".gz" else open)(reference, "rt") as f:
        official = f.read()
    assert official.startswith(out.read_text()) and out.read_text().count("count = ") == 3
    r = run("kat", "--alg", "MAYO-2", "--count", "3", "--out", "-")
    assert r.returncode == 0 and r.stdout == out.read_text(), r.stderr


def test_kat_regenerates_one_entry_at_a_time(monkeypatch):
    # NIST's generator draws every seed and message first; regenerating one entry must not
    from pqforge import kat

    draws = []

    class Counted(kat.NistCtrDrbg):
        def __call__(self, n):
            draws.append(n)
            return super().__call__(n)

    class Fake:
        kind = "signature"

        def keypair(self, rng):
            return rng(4), rng(4)

        def sign_nist(self, sk, msg, rng):
            return msg + rng(8)

        def encapsulate(self, pk, rng):
            ct = rng(8)
            return ct, ct[:4]

        def decapsulate(self, sk, ct):
            return ct[:4]
    monkeypatch.setattr(kat, "NistCtrDrbg", Counted)
    entries = kat.signature_kat_entries(Fake(), 100_000)
    first = next(entries)      # seed and message of entry 0, then its own draws (key pair, signature)
    assert first["mlen"] == 33 and draws == [48, 33, 4, 4, 8], draws
    next(entries)
    assert draws[5:7] == [48, 66] and len(draws) == 10, draws
    draws.clear()
    next(kat.kem_kat_entries(Fake(), 100_000))
    assert draws == [48, 4, 4, 8], draws        # one seed, then the entry's own draws


def test_kat_reads_the_reference_as_it_compares(tmp_path, monkeypatch):
    from pqforge import kat
    reference = require("mayo/PQCsignKAT_24_MAYO_2.rsp")
    read = []
    real_iter, real_entries = kat.iter_rsp, kat.kat_entries

    def iter_rsp(path):
        for entry in real_iter(path):
            read.append(entry["count"])
            yield entry

    def kat_entries(alg, count):
        for entry in real_entries(alg, count):
            assert read == list(range(max(entry["count"], 1))), read      # the first, then as compared
            yield entry
    monkeypatch.setattr(kat, "iter_rsp", iter_rsp)
    monkeypatch.setattr(kat, "kat_entries", kat_entries)
    assert main(["kat", "--alg", "MAYO-2", "--count", "3", "--reference", str(reference)]) == 0
    assert read == [0, 1, 2]


def test_a_kat_reference_for_another_set_is_named_not_a_mismatch(tmp_path):
    mayo1 = require("mayo/PQCsignKAT_24_MAYO_1.rsp")
    r = run("kat", "--alg", "MAYO-2", "--count", "1", "--out", str(tmp_path / "x.rsp"), "--reference", str(mayo1))
    _one_line_error(r)
    assert f"{mayo1} is a KAT file for MAYO-1" in r.stderr and "not MAYO-2" in r.stderr, r.stderr
    assert "MISMATCH" not in r.stdout + r.stderr and list(tmp_path.iterdir()) == []
    kem = require("mceliece/Classic-McEliece-348864.count0.rsp")
    r = run("kat", "--alg", "Classic-McEliece-460896", "--count", "1", "--reference", str(kem))
    _one_line_error(r)
    assert "for Classic-McEliece-348864 or Classic-McEliece-348864f" in r.stderr, r.stderr


def test_an_output_is_never_one_of_the_inputs_even_with_force(alice, bob, tmp_path):
    d = alice
    doc = d / "doc.txt"
    doc.write_bytes(b"keep me")
    (d / "link.txt").symlink_to(doc)
    key = (d / "alice.sk").read_bytes()
    cases = [(["sign", "--key", str(d / "alice.sk"), str(doc), "-o", str(doc)], "message"),
             (["sign", "--key", str(d / "alice.sk"), str(doc), "-o", str(d / "link.txt")], "message"),
             (["sign", "--key", str(d / "alice.sk"), str(doc), "-o", str(d / "." / "alice.sk")], "key"),
             (["kem", "encap", "--key", str(bob / "bob.pk"), "-o", str(bob / "bob.pk"), "--secret", "-"], "key"),
             (["kem", "decap", "--key", str(bob / "bob.sk"), str(doc), "--secret", str(doc)], "ciphertext"),
             (["kat", "--alg", "MAYO-2", "--count", "1", "--reference", str(doc), "--out", str(d / "link.txt")],
              "reference")]
    bob_pk = (bob / "bob.pk").read_bytes()
    for args, what in cases:
        r = run(*args, "--force")
        _one_line_error(r)
        assert f"is also the {what} (input)" in r.stderr, (args, r.stderr)
    assert doc.read_bytes() == b"keep me" and (d / "alice.sk").read_bytes() == key
    assert (bob / "bob.pk").read_bytes() == bob_pk


def test_bench_json_runs(capsys):
    import json
    from pqforge.gf16 import sets
    assert main(["bench", "--alg", "MAYO-2", "--json", "--seconds", "0.01"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = out["results"]
    assert {r["op"] for r in rows} >= {"keygen", "sign", "verify"}
    assert all(r["median_us"] > 0 for r in rows)
    assert out["machine"]["gf16_kernels"] == sets.NAME       # which kernels ran is part of a result


def test_bench_says_which_kernels_ran(capsys, monkeypatch):
    from tests.mayo.conftest import use_kernel_set
    use_kernel_set(monkeypatch, "portable")
    assert main(["bench", "--alg", "MAYO-2", "--seconds", "0.01"]) == 0
    assert "GF(16) kernels portable" in capsys.readouterr().out


def test_bench_steps_reports_every_step(capsys):
    import json
    assert main(["bench", "--steps", "--alg", "MAYO-2", "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["MAYO-2"]
    assert {"decode P1,P2", "sign: sample solution", "verify (whole, expanded)"} <= set(steps)
    assert all(t > 0 for t in steps.values())


# -- exit codes and one-line errors -----------------------------------------------------------

def _one_line_error(r, code=2):
    assert r.returncode == code, (r.args, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "error" in r.stderr, r.stderr


def test_wrong_length_signature_is_invalid_not_an_error(alice):
    """Decision: for ``verify`` a signature of the wrong length is invalid (1), like any other
    signature that does not verify, so a script checking validity need not tell them apart."""
    d = alice
    (d / "m").write_bytes(b"m")
    assert main(["sign", "--key", str(d / "alice.sk"), str(d / "m")]) == 0
    sig = (d / "m.sig").read_bytes()
    for bad in (sig[:-1], sig + b"\0", b""):
        (d / "bad.sig").write_bytes(bad)
        r = run("verify", "--key", str(d / "alice.pk"), str(d / "m"), str(d / "bad.sig"))
        assert r.returncode == 1, (r.stdout, r.stderr)
        assert r.stdout.startswith("invalid") and "186 bytes" in r.stdout and r.stderr == ""


def test_usage_mistakes_are_one_line_exit_2(tmp_path):
    binary = tmp_path / "official.rsp"
    binary.write_bytes(bytes(range(256)) * 4)
    not_kat = tmp_path / "notes.rsp"
    not_kat.write_text("just some notes\n")
    cases = [
        ("bench-batch", "--alg", "MAYO-4"),
        ("bench-batch", "--batch", "0"),
        ("bench-batch", "--batch", "99999999999"),
        ("bench-batch", "--distinct", "100000"),
        ("bench-batch", "--threads", "-1"),
        ("bench-batch", "--seconds", "nan"),
        ("bench", "--seconds", "0"),
        ("ct", "run", "--target", "gf16_mul", "--threshold", "-1"),
        ("ct", "run", "--target", "gf16_mul", "--measurements", "0"),
        ("bench", "--alg", "mayo-9"),
        ("kat", "--alg", "MAYO-2", "--count", "0"),
        ("kat", "--alg", "MAYO-2", "--count", "many"),
        ("kat", "--alg", "MAYO-2", "--count", "1", "--reference", str(binary)),
        ("kat", "--alg", "MAYO-2", "--count", "1", "--reference", str(not_kat)),
        ("kat", "--alg", "MAYO-2", "--count", "1", "--out", ""),
        ("keygen", "--alg", "MAYO-2", "--out", ""),
        ("keygen", "--alg", "MAYO-2", "--out", "-"),
        ("keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "no-such-dir" / "k")),
        ("kem", "keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "k")),
        ("keygen", "--alg", "Classic-McEliece-1", "--out", str(tmp_path / "k")),
        ("keygen",),
        ("frobnicate",),
    ]
    for args in cases:
        _one_line_error(run(*args))
    assert not any(p.name.startswith("k") for p in tmp_path.iterdir())


def test_version_and_help_list_the_algorithms():
    r = run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"pqforge {pqforge.__version__}"
    r = subprocess.run([sys.executable, "-m", "pqforge.cli", "--help"], capture_output=True, text=True,
                       env=dict(os.environ, COLUMNS="1000"))      # no wrapping inside a name
    assert r.returncode == 0
    text = " ".join(r.stdout.split())
    for name in pqforge.algorithms.names():
        assert name in text, name
    assert "1 an invalid signature" in text


def test_listed_names_are_the_implemented_algorithms():
    """``names()`` reads the shipped KAT hashes (no scheme import): it must list every algorithm
    the schemes implement, and nothing else."""
    from pqforge.mayo import ALGORITHMS as MAYO
    from pqforge.mceliece import ALGORITHMS as MCELIECE
    assert sorted(pqforge.algorithms.names()) == sorted([*MAYO, *MCELIECE])


def test_algorithm_names_in_any_spelling(tmp_path):
    for i, spelling in enumerate(("mayo-2", "MAYO2", "Mayo_2")):
        r = run("keygen", "--alg", spelling, "--out", str(tmp_path / f"k{i}"))
        assert r.returncode == 0, r.stderr
        assert pqforge.load_pem_public_key((tmp_path / f"k{i}.pk").read_bytes()).algorithm.name == "MAYO-2"
    r = run("kat", "--alg", "mceliece348864", "--count", "1")
    assert r.returncode == 0 and "MATCH: official Classic-McEliece-348864 KAT" in r.stdout, r.stdout + r.stderr


def test_bench_batch_takes_a_lower_case_name():
    r = run("bench-batch", "--alg", "mayo-1", "--batch", "2", "--distinct", "1", "--threads", "1",
            "--seconds", "0.001", "--no-kernels")
    assert r.returncode == 0, r.stderr
    assert "| MAYO-1 |" in r.stdout


def test_unexpected_error_is_one_line(monkeypatch, capsys):
    import pqforge.cli as cli

    def broken(args):
        raise RuntimeError("boom")
    monkeypatch.setattr(cli, "cmd_precompile", broken)
    assert cli.main(["precompile", "--alg", "MAYO-2"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unexpected RuntimeError: boom" in err


def test_ctrl_c_during_a_benchmark_exits_130_quietly():
    proc = subprocess.Popen([sys.executable, "-m", "pqforge.cli", "bench", "--alg", "MAYO-2", "--seconds", "60"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = proc.stderr.readline()          # the benchmark has started its first operation
    assert "MAYO-2" in first, first
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    # quietly: no table and no traceback; a fast operation (10,000 runs in under 0.5 s) may have
    # handed over to the next one, whose progress line is all that may follow
    assert out == "" and all(line.startswith("  MAYO-2 ") for line in err.splitlines()), err


_HELPER_THEN_WAIT = """
import sys, time
from pqforge import cli
from pqforge.jit import units
units._WORKER = "import time; time.sleep(600)"          # a helper that takes its time

def command(args):
    units._start_helper([])             # as a first use's prefetch starts one
    print(*units.running_helpers(), flush=True)
    time.sleep(600)
cli.cmd_keygen = command
sys.exit(cli.main(["keygen", "--alg", "MAYO-2", "--out", "k"]))
"""


@pytest.mark.parametrize("sig, status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_command_stopped_by_a_signal_ends_its_compile_helpers(tmp_path, sig, status):
    proc = subprocess.Popen([sys.executable, "-c", _HELPER_THEN_WAIT], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    helper = int(proc.stdout.readline())
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    alive = Path(f"/proc/{helper}").exists() and Path(f"/proc/{helper}/stat").read_text().split(") ")[1][0] != "Z"
    if alive:
        os.kill(helper, signal.SIGKILL)     # (not ours to reap: an orphan, reaped by init)
    assert proc.returncode == status, err
    assert not alive, f"helper {helper} outlived the command"
    assert "Traceback" not in err and "helper" not in err, err     # ended: not mentioned as running


# -- output files --------------------------------------------------------------------------------

def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture(scope="module")
def bob(tmp_path_factory):
    d = tmp_path_factory.mktemp("bob")
    r = run("kem", "keygen", "--alg", "Classic-McEliece-348864", "--out", str(d / "bob"))
    assert r.returncode == 0, r.stderr
    return d


def test_secrets_get_mode_0600_also_over_an_existing_file(bob, tmp_path):
    ss, ct = tmp_path / "ss.bin", tmp_path / "msg.ct"
    ss.write_bytes(b"old")
    os.chmod(ss, 0o644)
    r = run("kem", "encap", "--key", str(bob / "bob.pk"), "-o", str(ct), "--secret", str(ss), "--force")
    assert r.returncode == 0, r.stderr
    assert _mode(ss) == 0o600 and len(ss.read_bytes()) == 32
    secret = ss.read_bytes()
    out = tmp_path / "ss2.bin"
    out.write_bytes(b"old")
    os.chmod(out, 0o666)
    r = run("kem", "decap", "--key", str(bob / "bob.sk"), str(ct), "--secret", str(out), "--force")
    assert r.returncode == 0, r.stderr
    assert _mode(out) == 0o600 and out.read_bytes() == secret
    key = tmp_path / "k.sk"
    key.write_text("old")
    os.chmod(key, 0o644)
    r = run("keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "k"), "--force")
    assert r.returncode == 0, r.stderr
    assert _mode(key) == 0o600 and _mode(tmp_path / "k.pk") & 0o044 == 0o044
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k.pk", "k.sk", "msg.ct", "ss.bin", "ss2.bin"]  # no temporaries


def test_a_failing_output_check_writes_nothing(bob, tmp_path):
    ct = tmp_path / "msg.ct"
    cases = [("--secret", str(tmp_path / "missing-dir" / "ss.bin")),   # a directory that is not there
             ("--secret", str(tmp_path)),                               # a directory, not a file
             ("--secret", str(ct))]                                     # the same file twice
    for args in cases:
        _one_line_error(run("kem", "encap", "--key", str(bob / "bob.pk"), "-o", str(ct), *args))
        assert not ct.exists()
    taken = tmp_path / "ss.bin"
    taken.write_bytes(b"keep")
    r = run("kem", "encap", "--key", str(bob / "bob.pk"), "-o", str(ct), "--secret", str(taken))
    _one_line_error(r)
    assert "exists" in r.stderr and not ct.exists() and taken.read_bytes() == b"keep"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ss.bin"]


def _read_only_directory(base: Path):
    """(a directory this test's subprocess cannot write, subprocess arguments). Root may write
    anywhere, so as root the command runs as 'nobody' when that can run Python here; otherwise a
    read-only system directory stands in (root cannot write there either)."""
    ro = base / "ro"
    ro.mkdir()
    os.chmod(ro, 0o555)
    if os.geteuid() != 0:
        return ro, {}
    nobody = {"user": 65534, "group": 65534, "extra_groups": []}
    try:
        subprocess.run([sys.executable, "-c", "import pqforge.cli"], check=True, capture_output=True, **nobody)
        return ro, nobody
    except (OSError, subprocess.CalledProcessError):
        if not os.access("/proc/sys", os.W_OK):
            return Path("/proc/sys"), {}
    pytest.skip("running as root, Python cannot run as another user here and no read-only directory was found")


def test_read_only_directory_leaves_nothing_half_written(bob):
    base = Path(tempfile.mkdtemp(prefix="pqforge-ro-"))   # reachable by another user, unlike tmp_path
    try:
        out = base / "out"
        out.mkdir()
        pk = base / "bob.pk"
        pk.write_bytes((bob / "bob.pk").read_bytes())
        for p, mode in ((base, 0o755), (out, 0o777), (pk, 0o644)):
            os.chmod(p, mode)
        ro, user = _read_only_directory(base)
        before = sorted(os.listdir(ro))
        r = subprocess.run([sys.executable, "-m", "pqforge.cli", "kem", "encap", "--key", str(pk),
                            "-o", str(out / "msg.ct"), "--secret", str(ro / "ss.bin")],
                           capture_output=True, text=True, **user)
        _one_line_error(r)
        assert "not writable" in r.stderr
        assert list(out.iterdir()) == [] and sorted(os.listdir(ro)) == before
    finally:
        shutil.rmtree(base)


def test_outputs_are_both_written_or_neither(tmp_path, monkeypatch):
    """A failure while putting the second output in place takes the first back."""
    from pqforge import files
    outputs = [files.Output(str(tmp_path / "a.ct")), files.Output(str(tmp_path / "b.ss"), secret=True)]
    real = os.link
    calls = []

    def link(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(src, dst)
    monkeypatch.setattr(os, "link", link)
    files.check_outputs(outputs, force=False)
    with pytest.raises(OSError, match="No space"):
        files.write_outputs(outputs, [b"ct", b"ss"], force=False)
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


def test_dash_means_standard_output(alice, bob, tmp_path):
    d = alice
    (d / "m").write_bytes(b"message")
    r = subprocess.run([sys.executable, "-m", "pqforge.cli", "sign", "--key", str(d / "alice.sk"), str(d / "m"),
                        "-o", "-"], capture_output=True)
    assert r.returncode == 0 and len(r.stdout) == 186, r.stderr
    (d / "m.sig").write_bytes(r.stdout)
    assert run("verify", "--key", str(d / "alice.pk"), str(d / "m"), str(d / "m.sig")).returncode == 0
    r = subprocess.run([sys.executable, "-m", "pqforge.cli", "kem", "encap", "--key", str(bob / "bob.pk"),
                        "-o", str(tmp_path / "c"), "--secret", "-"], capture_output=True)
    assert r.returncode == 0 and len(r.stdout) == 32, r.stderr
    r2 = subprocess.run([sys.executable, "-m", "pqforge.cli", "kem", "decap", "--key", str(bob / "bob.sk"),
                         "-", "--secret", "-"], input=(tmp_path / "c").read_bytes(), capture_output=True)
    assert r2.returncode == 0 and r2.stdout == r.stdout, r2.stderr
    _one_line_error(run("kem", "encap", "--key", str(bob / "bob.pk"), "-o", "-", "--secret", "-"))
    r = run("kat", "--alg", "MAYO-2", "--count", "1", "--out", "-")
    assert r.returncode == 0 and r.stdout.startswith("# MAYO_2\n\ncount = 0\n") and "MATCH" in r.stderr


# -- key files -----------------------------------------------------------------------------------

def test_a_changed_key_file_is_reported_not_used(alice_armoured):
    d = alice_armoured
    (d / "m").write_bytes(b"m")
    lines = (d / "alice.sk").read_text().splitlines(keepends=True)
    body = lines[2]
    flipped = body[:5] + ("A" if body[5] != "A" else "B") + body[6:]
    (d / "bad.sk").write_text("".join(lines[:2] + [flipped] + lines[3:]))
    r = run("sign", "--key", str(d / "bad.sk"), str(d / "m"), "-o", str(d / "m.sig"))
    _one_line_error(r)
    assert "checksum" in r.stderr and not (d / "m.sig").exists()
    # another set with private keys of the same size: the name is covered by the checksum too
    (d / "other.sk").write_text("".join(lines).replace("MAYO-2", "MAYO-1"))
    r = run("sign", "--key", str(d / "other.sk"), str(d / "m"), "-o", str(d / "m.sig"))
    _one_line_error(r)
    assert "checksum" in r.stderr and not (d / "m.sig").exists()


def test_a_key_file_without_checksum_is_used_with_a_warning(alice_armoured):
    """Decision: files written before the checksum (pqforge 0.1.0) are accepted with one warning."""
    d = alice_armoured
    text = (d / "alice.sk").read_text()
    old = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("Checksum: "))
    (d / "old.sk").write_text(old)
    (d / "m").write_bytes(b"m")
    r = run("sign", "--key", str(d / "old.sk"), str(d / "m"))
    assert r.returncode == 0, r.stderr
    warnings_ = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(warnings_) == 1 and "no checksum" in warnings_[0]
    assert run("verify", "--key", str(d / "alice.pk"), str(d / "m"), str(d / "m.sig")).returncode == 0


def test_library_warnings_carry_one_prefix_on_the_command_line(capsys):
    from pqforge import cli
    cli._show_warning(RuntimeWarning("pqforge: PQFORGE_KERNELS='portabel' is not 'auto' or 'portable'"),
                      RuntimeWarning, "x.py", 1)
    assert capsys.readouterr().err == "pqforge: warning: PQFORGE_KERNELS='portabel' is not 'auto' or 'portable'\n"


@pytest.mark.parametrize("args, other", [
    (["keygen", "--alg", "mceliece348864"], "pqforge kem keygen --alg Classic-McEliece-348864"),
    (["kem", "keygen", "--alg", "MAYO-2"], "pqforge keygen --alg MAYO-2"),
])
def test_keygen_of_the_other_kind_names_the_command_that_makes_those_keys(tmp_path, capsys, args, other):
    assert main([*args, "--out", str(tmp_path / "k")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pqforge: error: ") and other in err, err
    assert not list(tmp_path.iterdir())


def test_keygen_help_says_which_keys_it_makes():
    from pqforge.cli import build_parser
    text = " ".join(build_parser().format_help().split())
    assert "generate a signature key pair" in text and "(KEM keys: pqforge kem keygen)" in text
    assert "key encapsulation: kem keygen" in text


def test_a_compile_helper_still_running_when_the_command_returns_is_mentioned_in_one_line(monkeypatch, capsys,
                                                                                          tmp_path):
    from pqforge import cli
    from pqforge.jit import units
    monkeypatch.setattr(units, "_WORKER", "import time; time.sleep(60)")     # a helper that takes its time
    started = []

    def keygen(args):
        units._start_helper([])
        started.extend(units.running_helpers())
        return 0
    monkeypatch.setattr(cli, "cmd_keygen", keygen)
    try:
        assert main(["keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "k")]) == 0
        err = capsys.readouterr().err
    finally:
        units.stop_helpers()
    pid, = started
    assert err == f"pqforge: a compile helper keeps filling the cache in the background (pid {pid})\n"
    assert main(["kem", "keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "k")]) == 2
    assert "helper" not in capsys.readouterr().err          # none running: nothing said


def test_the_bars_time_left_leaves_out_a_first_step_that_compiled():
    import io
    from pqforge.cli import progress_bar
    clock = [0.0]
    bar = progress_bar(10, "KAT")
    bar.fp = io.StringIO()
    bar._time = lambda: clock[0]
    bar.start_t = bar.last_print_t = 0.0
    clock[0] = 100.0            # the first step compiles for 100 s
    bar.update(1)
    assert "<?" in str(bar)     # no time left until a second step is done, not 9 x 100 s
    clock[0] = 101.0
    bar.update(1)
    assert "<00:08" in str(bar)     # 8 steps left at 1 s each
    bar.close()


def test_the_bars_last_line_shows_the_rate_over_the_whole_run(capsys):
    from pqforge.cli import progress_bar
    clock = [0.0]
    bar = progress_bar(10, "KAT")
    bar._time = lambda: clock[0]
    bar.start_t = bar.last_print_t = 0.0
    clock[0] = 100.0            # the first step compiles for 100 s, the other 9 take 1 s in all
    bar.update(1)
    for _ in range(9):
        clock[0] += 1 / 9
        bar.update(1)
    assert "9.00it/s" in str(bar)       # while it runs: the pace of the steps after the first
    bar.close()
    last = capsys.readouterr().err.rstrip("\n").split("\r")[-1]
    assert "10/10" in last and "10.10s/it" in last, last      # 101 s for 10 steps, not 9 it/s


def test_a_compile_notice_during_a_progress_bar_goes_above_the_bar(capsys, monkeypatch, tmp_path):
    from pqforge.jit import cache
    from pqforge.cli import progress_bar
    monkeypatch.setattr(cache, "CACHE_DIR", tmp_path)       # no marker: the notice comes
    monkeypatch.setattr(cache, "NOTICES", True)

    class Set:
        name = "DEMO-2"
    op = cache.compiling("demo", 5, lambda p: "demo under a bar")(lambda p: None)
    bar = progress_bar(3, "KAT")
    bar.update(1)
    op(Set())
    bar.update(2)
    bar.close()
    err = capsys.readouterr().err
    before, notice, _ = err.partition("pqforge: compiling DEMO-2 demo kernels")
    assert notice and before.endswith(("\r", "\n")), repr(err)      # the bar's line cleared first


def test_python_dash_m_pqforge_is_the_command_line():
    run = subprocess.run([sys.executable, "-m", "pqforge", "sgin"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "pqforge" in run.stderr and "sign" in run.stderr, run.stderr
    run = subprocess.run([sys.executable, "-m", "pqforge", "--help"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.startswith("usage: pqforge"), run.stdout[:300]


# -- key formats: PEM and DER (PKCS#8, SubjectPublicKeyInfo), encrypted keys, key convert -------------

def test_signature_keys_are_pem_by_default_and_kem_keys_pqforge_key_files(alice, tmp_path):
    assert (alice / "alice.sk").read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert pqforge.load_pem_private_key((alice / "alice.sk").read_bytes()).public_key() == \
        pqforge.load_pem_public_key((alice / "alice.pk").read_bytes())
    assert main(["kem", "keygen", "--alg", "Classic-McEliece-348864", "--out", str(tmp_path / "bob")]) == 0
    assert (tmp_path / "bob.sk").read_bytes().startswith(b"-----BEGIN PQFORGE Classic-McEliece-348864 PRIVATE KEY-----")


def test_an_encrypted_private_key_needs_its_passphrase(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("PQFORGE_PASSPHRASE", raising=False)
    (tmp_path / "pw").write_bytes(b"open sesame\n")
    (tmp_path / "bad").write_bytes(b"open sesam\n")
    (tmp_path / "m").write_bytes(b"m")
    key = str(tmp_path / "k.sk")
    assert main(["keygen", "--alg", "MAYO-1", "--out", str(tmp_path / "k"), "--format", "der",
                 "--passphrase-file", str(tmp_path / "pw")]) == 0
    assert (tmp_path / "k.sk").read_bytes()[:1] == b"\x30"
    capsys.readouterr()
    assert main(["sign", "--key", key, str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "encrypted private key" in err and "--passphrase-file" in err and "PQFORGE_PASSPHRASE" in err
    assert main(["sign", "--key", key, str(tmp_path / "m"), "--passphrase-file", str(tmp_path / "bad")]) == 2
    assert "wrong password" in capsys.readouterr().err and not (tmp_path / "m.sig").exists()
    assert main(["sign", "--key", key, str(tmp_path / "m"), "--passphrase-file", str(tmp_path / "pw")]) == 0
    assert main(["verify", "--key", str(tmp_path / "k.pk"), str(tmp_path / "m"), str(tmp_path / "m.sig")]) == 0
    monkeypatch.setenv("PQFORGE_PASSPHRASE", "open sesame")
    assert main(["sign", "--key", key, str(tmp_path / "m"), "--force"]) == 0
    (tmp_path / "empty").write_bytes(b"\n")
    assert main(["sign", "--key", key, str(tmp_path / "m"), "--force", "--passphrase-file", str(tmp_path / "empty")]) == 2
    assert "empty" in capsys.readouterr().err


def test_a_passphrase_for_a_format_that_cannot_be_encrypted_is_refused(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PQFORGE_PASSPHRASE", "x")
    assert main(["keygen", "--alg", "MAYO-1", "--out", str(tmp_path / "k"), "--format", "pqforge"]) == 2
    assert "--format pem" in capsys.readouterr().err
    assert main(["kem", "keygen", "--alg", "Classic-McEliece-348864", "--out", str(tmp_path / "b")]) == 2
    assert "no encrypted format" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_key_convert_between_every_format(alice, capsys, monkeypatch):
    monkeypatch.delenv("PQFORGE_PASSPHRASE", raising=False)
    monkeypatch.delenv("PQFORGE_NEW_PASSPHRASE", raising=False)
    d = alice
    original = (d / "alice.sk").read_bytes()
    assert main(["key", "convert", str(d / "alice.sk"), "-o", str(d / "a.der"), "--format", "der"]) == 0
    assert main(["key", "convert", str(d / "a.der"), "-o", str(d / "a.pqf"), "--format", "pqforge"]) == 0
    assert (d / "a.pqf").read_bytes().startswith(b"-----BEGIN PQFORGE MAYO-2 PRIVATE KEY-----")
    assert stat.S_IMODE(os.stat(d / "a.pqf").st_mode) == 0o600
    assert main(["key", "convert", str(d / "a.pqf"), "-o", str(d / "a.pem"), "--format", "pem"]) == 0
    assert (d / "a.pem").read_bytes() == original
    assert main(["key", "convert", str(d / "a.pem"), "--public", "-o", str(d / "a.pub"), "--format", "pem"]) == 0
    assert (d / "a.pub").read_bytes() == (d / "alice.pk").read_bytes()
    (d / "pw").write_bytes(b"new one")
    assert main(["key", "convert", str(d / "a.pem"), "-o", str(d / "a.enc"), "--format", "pem",
                 "--new-passphrase-file", str(d / "pw")]) == 0
    assert (d / "a.enc").read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
    assert pqforge.load_pem_private_key((d / "a.enc").read_bytes(), b"new one").private_bytes_raw() == \
        pqforge.load_pem_private_key(original).private_bytes_raw()
    capsys.readouterr()
    assert main(["key", "convert", str(d / "a.enc"), "-o", str(d / "a.pem"), "--format", "pem"]) == 2
    err = capsys.readouterr().err
    assert "encrypted" in err and "exists" not in err       # the key first, as for sign
    assert main(["key", "convert", str(d / "a.pem"), "-o", str(d / "a.pem"), "--format", "der", "--force"]) == 2
    assert (d / "a.pem").read_bytes() == original


def test_key_convert_refuses_pkcs8_for_sets_without_an_identifier(tmp_path, capsys):
    assert main(["kem", "keygen", "--alg", "Classic-McEliece-348864", "--out", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    assert main(["key", "convert", str(tmp_path / "b.pk"), "-o", str(tmp_path / "b.pem"), "--format", "pem"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "no object identifier in use" in err
    assert not (tmp_path / "b.pem").exists()


def test_openssl_keys_and_signatures_work_on_the_command_line(tmp_path, capsys):
    from .known_answers import VECTORS
    v = VECTORS / "openssl"
    (tmp_path / "pw").write_bytes(b"pqforge test\n")
    assert main(["verify", "--key", str(v / "mayo2.pub.der"), str(v / "message.txt"), str(v / "mayo2.sig")]) == 0
    assert main(["sign", "--key", str(v / "mayo2.scrypt.pem"), str(v / "message.txt"), "-o", str(tmp_path / "m.sig"),
                 "--passphrase-file", str(tmp_path / "pw")]) == 0
    assert main(["verify", "--key", str(v / "mayo2.pub.pem"), str(v / "message.txt"), str(tmp_path / "m.sig")]) == 0
    assert main(["verify", "--key", str(v / "mayo2.key.pem"), str(v / "message.txt"), str(tmp_path / "m.sig")]) == 2
    assert "private key; a public key is expected" in capsys.readouterr().err
