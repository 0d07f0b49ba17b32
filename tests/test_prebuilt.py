"""Machine code built ahead of time (``pqforge.jit.prebuilt``): a bundle built for the profile
that fits this CPU is installed into an empty cache at the first use, and then nothing compiles;
the official vector still comes out. A bundle that does not fit is left alone, and a damaged one
costs a warning, never the operation.

The bundle is built by ``pqforge precompile --prebuilt`` for MAYO-2 in a process of its own,
beside the rest of the suite (``tests/background.py``): about half a minute of one core.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pqforge.jit import prebuilt
from pqforge.jit.target import architecture, cpu_features

from . import background

ROOT = Path(__file__).resolve().parents[1]


def _fitting_profile() -> str | None:
    """The profile whose code and choices fit this process, if any."""
    host = cpu_features()
    for name, (arch, _, features) in prebuilt.PROFILES.items():
        if arch == architecture() and set(features) <= host and prebuilt.choices(prebuilt.host_choices()["kernels"], features) == prebuilt.host_choices():
            return name
    return None


PROFILE = _fitting_profile()
JOB = background.Job(
    "prebuilt-mayo-2",
    [sys.executable, "-m", "pqforge", "precompile", "--prebuilt", "{dir}/bundles", "--alg", "MAYO-2",
     "--profile", PROFILE or "", "--kernels", prebuilt.host_choices()["kernels"]], cwd=ROOT,
) if PROFILE is not None else None
needs_bundle = pytest.mark.background(JOB)

# A first use in a new process: the first official MAYO-2 vector (key pair from its seed, the
# signed message) and a verification, counting what numba compiles meanwhile.
FIRST_USE = textwrap.dedent("""
    import sys
    from numba.core import event
    from pqforge import kat
    from pqforge.jit import units
    from pqforge.mayo import ALGORITHMS
    from tests.known_answers import mayo_entries

    alg, official = ALGORITHMS["MAYO-2"], mayo_entries("MAYO-2")[0]
    with event.install_recorder("numba:compile") as compiles:
        entry = next(kat.signature_kat_entries(alg, 1))
        opened = alg.open_nist(entry["pk"], entry["sm"])
    cfuncs = [u for m in list(sys.modules.values()) if getattr(m, "__name__", "").startswith("pqforge")
              for u in units._declared(m) if isinstance(u, units.Unit) and u._cfunc is not None]
    compiled_units = sum(1 for u in cfuncs if u._cfunc.cache_hits == 0)
    print(entry == official, opened == official["msg"], len(compiles.buffer) // 2, compiled_units)
""")


def _first_use(cache: Path, bundles: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache), PQFORGE_PREBUILT=str(bundles))
    return subprocess.run([sys.executable, "-c", FIRST_USE], env=env, cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def _bundle() -> Path:
    if JOB is None:
        pytest.skip("no profile fits this CPU")
    run = JOB.result()
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert JOB.dir is not None
    bundles = list((JOB.dir / "bundles").glob("*" + prebuilt.SUFFIX))
    assert len(bundles) == 1, run.stdout
    return bundles[0]


@needs_bundle
def test_a_fitting_bundle_is_installed_at_first_use_and_nothing_compiles(tmp_path):
    bundle = _bundle()
    assert prebuilt.mismatch(prebuilt.read_meta(bundle)) is None
    run = _first_use(tmp_path / "cache", bundle.parent)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["True", "True", "0", "0"], run.stdout + run.stderr[-2000:]
    assert "compiling" not in run.stderr           # no compile notice either
    assert (tmp_path / "cache" / "pqforge-prebuilt" / bundle.name).exists()


@needs_bundle
def test_a_bundle_for_other_sources_is_left_alone_and_the_kernels_compile(tmp_path):
    bundle = _bundle()
    data = bundle.read_bytes()
    meta = prebuilt.read_meta(bundle)
    header = prebuilt.MAGIC + pickle.dumps(meta, protocol=4)
    assert data.startswith(header)
    other = tmp_path / "bundles" / bundle.name
    other.parent.mkdir()
    other.write_bytes(prebuilt.MAGIC + pickle.dumps({**meta, "sources": "0" * 64}, protocol=4) + data[len(header):])
    assert prebuilt.mismatch(prebuilt.read_meta(other)) == "built from other pqforge sources"
    run = _first_use(tmp_path / "cache", other.parent)
    assert run.returncode == 0, run.stderr[-3000:]
    fields = run.stdout.split()
    assert fields[:2] == ["True", "True"] and int(fields[2]) > 0, run.stdout
    assert not (tmp_path / "cache" / "pqforge-prebuilt").exists()
    # the first compile notice says why the bundle was not used, and only the first
    reason = "(the machine code built ahead of time does not fit: built from other pqforge sources)"
    notices = [line for line in run.stderr.splitlines() if line.startswith("pqforge: compiling")]
    assert notices and notices[0].endswith(reason), run.stderr[-2000:]
    assert sum(reason in line for line in notices) == 1, notices


@needs_bundle
def test_a_damaged_bundle_costs_a_warning_not_the_operation(tmp_path):
    bundle = _bundle()
    meta = prebuilt.read_meta(bundle)
    damaged = tmp_path / "bundles" / bundle.name
    damaged.parent.mkdir()
    damaged.write_bytes(prebuilt.MAGIC + pickle.dumps(meta, protocol=4) + b"not xz")
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PQFORGE_PREBUILT=str(damaged.parent))
    run = subprocess.run([sys.executable, "-c", "from pqforge.jit import cache, prebuilt; print(prebuilt.install_once(cache.CACHE_DIR, cache.mark_compiled))"],
                         env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "None", run.stderr
    assert "prebuilt kernels" in run.stderr and "compiling instead" in run.stderr


def test_a_bundle_names_why_it_does_not_fit():
    import llvmlite
    import numba
    meta = {"numba": numba.__version__, "llvmlite": llvmlite.__version__, "python": sys.implementation.cache_tag,
            "platform": sys.platform, "sources": prebuilt.sources_digest(), "architecture": architecture(), "features": [],
            "choices": prebuilt.host_choices()}
    assert prebuilt.mismatch(meta) is None
    assert prebuilt.mismatch({**meta, "numba": "0.1"}) == f"built for numba 0.1, not {numba.__version__}"
    other_os = "darwin" if sys.platform != "darwin" else "linux"      # object files of another format
    assert prebuilt.mismatch({**meta, "platform": other_os}) == f"built for platform {other_os}, not {sys.platform}"
    assert "lacks no-such-feature" in prebuilt.mismatch({**meta, "features": ["no-such-feature"]})
    other = {**prebuilt.host_choices(), "vector_registers": 8}
    assert prebuilt.mismatch({**meta, "choices": other}).startswith("built for {")
    elsewhere = "x86_64" if architecture() == "aarch64" else "aarch64"
    assert prebuilt.mismatch({**meta, "architecture": elsewhere}) == f"built for {elsewhere}, not {architecture()}"


def test_every_profile_is_built_on_its_own_architecture_only(tmp_path):
    """A profile of the other architecture is named and skipped, not built; its bundle would fit
    no CPU here."""
    other = next(name for name, (arch, _, _) in prebuilt.PROFILES.items() if arch != architecture())
    said = []
    assert prebuilt.build(tmp_path, ["MAYO-2"], [other], say=said.append) == []
    assert said == [f"skipped {other}: built on {prebuilt.PROFILES[other][0]} only, this machine is {architecture()}"]


def test_the_reason_named_is_that_of_the_bundle_closest_to_fitting(tmp_path, monkeypatch):
    import llvmlite
    import numba
    meta = {"numba": numba.__version__, "llvmlite": llvmlite.__version__, "python": sys.implementation.cache_tag,
            "platform": sys.platform, "sources": prebuilt.sources_digest(), "architecture": architecture(),
            "features": ["no-such-feature"],
            "choices": prebuilt.host_choices()}
    for name, header in (("old-numba", {**meta, "numba": "0.1"}), ("new-cpu", meta)):
        (tmp_path / (name + prebuilt.SUFFIX)).write_bytes(prebuilt.MAGIC + pickle.dumps(header, protocol=4))
    monkeypatch.setenv(prebuilt.ENV, str(tmp_path))
    assert prebuilt.find() is None
    assert prebuilt.unfit() == "this CPU lacks no-such-feature"
    monkeypatch.setenv(prebuilt.ENV, str(tmp_path / "empty"))
    assert prebuilt.unfit() is None


def test_files_that_are_not_bundles_are_ignored(tmp_path, monkeypatch):
    (tmp_path / ("junk" + prebuilt.SUFFIX)).write_bytes(b"junk")
    (tmp_path / ("empty" + prebuilt.SUFFIX)).write_bytes(b"")
    (tmp_path / ("torn" + prebuilt.SUFFIX)).write_bytes(prebuilt.MAGIC + b"\x80\x04\x95garbage")
    monkeypatch.setenv(prebuilt.ENV, str(tmp_path))
    assert prebuilt.read_meta(tmp_path / ("junk" + prebuilt.SUFFIX)) is None
    assert prebuilt.find() is None
    monkeypatch.setenv(prebuilt.ENV, "none")
    assert prebuilt.directories() == []


def test_precompile_prebuilt_names_an_unknown_profile_or_set(tmp_path):
    for option, value in (("--profile", "x86-64-v9"), ("--kernels", "sve")):
        run = subprocess.run([sys.executable, "-m", "pqforge", "precompile", "--prebuilt", str(tmp_path),
                              "--alg", "MAYO-2", option, value], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert run.returncode == 2 and value in run.stderr and "expected one of" in run.stderr, run.stderr
        assert not list(tmp_path.glob("*" + prebuilt.SUFFIX))
