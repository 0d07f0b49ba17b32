"""First use: where compiled kernels go (read-only installations included), the notice before a
first compile, and ``pqforge precompile --alg``. Every case runs fresh interpreters."""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import pqforge

PACKAGE = Path(pqforge.__file__).resolve().parent
NOTICE = "pqforge: compiling"
NO_CACHE_WARNING = "no writable cache directory"

ROUND_TRIP = (
    "import pqforge\n"
    "from pqforge.mayo import MAYO2\n"
    "sk = MAYO2.generate_private_key()\n"
    "sig = sk.sign(b'read-only')\n"
    "sk.public_key().verify(sig, b'read-only')\n"
    "print(pqforge.__file__)\n"
)


def _unprivileged() -> list[str]:
    """A command prefix under which file permissions apply: none needed for a normal user; as
    root, root without the capabilities that override them (setpriv), since the interpreter
    may sit where another user cannot run it."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv") is None:
        pytest.skip("running as root without setpriv: read-only directories would not be read-only")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--"]


def python(code: str, env: dict, prefix=(), timeout: int = 900) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "HOME")}
    proc = subprocess.run([*prefix, sys.executable, "-c", code], env={**base, **env}, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def _read_only_copy(root: Path) -> Path:
    """pqforge copied (without compiled caches) to root/site, every directory and file made read-only."""
    site = root / "site"
    shutil.copytree(PACKAGE, site / "pqforge", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    for path in [site, *site.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    return site


def _path_with(site: Path) -> str:
    """PYTHONPATH: the copy first, then this interpreter's path without the original package."""
    rest = [p for p in sys.path if p and Path(p).resolve() != PACKAGE.parent]
    return os.pathsep.join([str(site), *rest])


def _files(root: Path) -> set:
    return {p.relative_to(root) for p in root.rglob("*")}


@pytest.fixture()
def read_only_install(tmp_path):
    site = _read_only_copy(tmp_path)
    (tmp_path / "locked").mkdir(mode=0o555)        # a home and cache location nobody may write
    yield tmp_path, site
    for path in [tmp_path, *tmp_path.rglob("*")]:   # let pytest clean up
        if path.is_dir():
            path.chmod(stat.S_IRWXU)


def test_read_only_install_with_nothing_writable_runs_uncached_with_one_warning(read_only_install):
    root, site = read_only_install
    prefix = _unprivileged()
    before = _files(root)
    env = {"PYTHONPATH": _path_with(site), "HOME": str(root / "locked" / "home"),
           "XDG_CACHE_HOME": str(root / "locked" / "cache")}
    proc = python(ROUND_TRIP, env, prefix)
    assert proc.stdout.strip() == str(site / "pqforge" / "__init__.py")
    assert proc.stderr.count(NO_CACHE_WARNING) == 1, proc.stderr
    assert "kernels for this CPU, uncached" in proc.stderr
    assert _files(root) == before          # nothing written anywhere


def test_read_only_install_caches_in_the_user_cache_directory(read_only_install):
    root, site = read_only_install
    prefix = _unprivileged()
    cache = root / "user-cache"
    cache.mkdir()
    env = {"PYTHONPATH": _path_with(site), "HOME": str(root / "locked" / "home"), "XDG_CACHE_HOME": str(cache)}
    first = python(ROUND_TRIP, env, prefix)
    assert NO_CACHE_WARNING not in first.stderr
    assert "pqforge: compiling MAYO-2 sign kernels for this CPU, once" in first.stderr
    compiled = list((cache / "pqforge").rglob("*.nbi"))
    assert compiled, sorted(_files(cache))
    assert not list(site.rglob("__pycache__"))
    second = python(ROUND_TRIP, env, prefix)     # every later process: from the cache, silently
    assert NOTICE not in second.stderr and NO_CACHE_WARNING not in second.stderr, second.stderr
    assert sorted((cache / "pqforge").rglob("*.nbi")) == sorted(compiled)   # nothing compiled again


def test_precompile_alg_compiles_only_that_algorithm_and_later_calls_are_silent(tmp_path):
    env = {"NUMBA_CACHE_DIR": str(tmp_path)}
    kem = "Classic-McEliece-348864"
    base = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    proc = subprocess.run([sys.executable, "-m", "pqforge.cli", "precompile", "--alg", kem],
                          env={**base, **env}, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert NOTICE not in proc.stderr and "compiling" in proc.stderr     # the progress bar, not notices
    markers = sorted(p.name for p in (tmp_path / "pqforge-compiled").iterdir())
    assert markers and all(m.startswith("mceliece") for m in markers), markers
    assert list(tmp_path.glob("mceliece_*/*.nbi"))
    assert not list(tmp_path.glob("mayo_*/*.nbi"))     # no MAYO kernel was compiled
    silent = python("from pqforge.mceliece import McEliece348864 as A\n"
                    "sk = A.generate_private_key()\n"
                    "ct, ss = sk.public_key().encapsulate()\n"
                    "assert sk.decapsulate(ct) == ss\n", env)
    assert NOTICE not in silent.stderr, silent.stderr
    first = python("from pqforge.mayo import MAYO2\nMAYO2.generate_private_key()\n", env)
    assert first.stderr.count(NOTICE) == 1 and "MAYO-2 keygen" in first.stderr, first.stderr


def test_cli_help_does_not_import_numba():
    code = ("import sys\n"
            "from pqforge.cli import build_parser\n"
            "build_parser().format_help()\n"
            "assert 'numba' not in sys.modules, 'numba imported'\n")
    python(code, {})


@pytest.mark.parametrize("name, other", [("mceliece348864", "pqforge.mayo"), ("MAYO-2", "pqforge.mceliece")])
def test_looking_up_an_algorithm_imports_only_its_family(name, other):
    # every command starts with the lookup: a McEliece command does not import MAYO's kernels
    code = ("import sys\n"
            "from pqforge import algorithms\n"
            f"alg = algorithms.get({name!r})\n"
            f"assert {other!r} not in sys.modules, 'imported {other}'\n"
            "assert alg.name == algorithms.get(alg.name.lower().replace('-', '')).name\n")
    python(code, {})


# -- the notice only when something will be compiled -----------------------------------------------

class _Set:
    name = "DEMO-1"


@pytest.fixture
def no_markers(monkeypatch, tmp_path):
    """No marker says anything is compiled (a cache filled by another process's helper)."""
    from pqforge.jit import cache
    monkeypatch.setattr(cache, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(cache, "NOTICES", True)
    monkeypatch.setattr(cache, "_seen", set())      # nor does this process's memory of earlier uses
    monkeypatch.setattr(cache, "_pace", [])         # nor its first compile's pace
    monkeypatch.setattr(cache, "_remembered", [])   # nor an earlier process's
    monkeypatch.setattr(cache, "_load", lambda: 1.0)  # an idle machine, whatever else runs now
    return cache


def _first_use(cache, hook, key):
    calls = []
    op = cache.compiling("demo", 8, lambda p: key, prefetch=hook)(lambda p: calls.append(p) or "done")
    assert op(_Set()) == "done" and calls
    return cache.is_compiled(key)


def test_no_notice_when_the_listed_kernels_are_in_numbas_cache_without_a_marker(no_markers, capsys):
    from pqforge.jit import units
    from tests import unit_kernels as uk
    uk.SUM.address                  # in the cache (tests/__pycache__), compiled there if it was not
    hooked = []

    def hook(p):
        fresh = units.Unit(uk.weighted_sum, uk.SUM.signature)      # not loaded in this process
        hooked.append(units._listing.items is not None)
        units.prefetch((fresh,))
        units.obtain((fresh,))
    assert units.will_compile(hook, _Set()) is False
    assert _first_use(no_markers, hook, "demo cached")          # the marker is written all the same
    assert NOTICE not in capsys.readouterr().err
    assert hooked == [True, True]   # only asked, never run: loading is the operation's own business


def test_the_notice_when_a_listed_kernel_is_missing_or_none_is_listed(no_markers, capsys, monkeypatch):
    from pqforge.jit import units
    from tests import unit_kernels as uk
    missing = units.Unit(uk.weighted_sum, uk.SUM.signature)
    monkeypatch.setattr(missing, "_in_index", lambda: False)
    monkeypatch.setattr(missing, "_compile_here", lambda: None)
    ran = []

    def hook(p):
        ran.append(units._listing.items is None)      # True: the real run after the notice
        units.obtain((missing,))
    assert units.will_compile(hook, _Set()) is True
    ran.clear()
    assert _first_use(no_markers, hook, "demo missing")
    assert "pqforge: compiling DEMO-1 demo kernels for this CPU, once, about 8 s" in capsys.readouterr().err
    assert ran == [False, True]     # asked, then run for real with the notice
    later_only = lambda p: units.prefetch(later=(missing,))          # lists nothing for now
    assert units.will_compile(later_only, _Set()) is None
    assert _first_use(no_markers, lambda p: None, "demo unlisted")
    assert NOTICE in capsys.readouterr().err          # nothing listed: the marker decides, as before


def test_the_index_check_agrees_with_loading_from_the_cache():
    import numpy as np
    from numba import types
    from pqforge.jit import units
    from tests import unit_kernels as uk
    uk.SUM.address
    fresh = units.Unit(uk.weighted_sum, uk.SUM.signature)
    assert fresh._in_index() and fresh._in_cache()
    uk.weighted_sum(np.arange(3, dtype=np.int64), 2)      # the njit dispatcher's own entry, cached
    i64 = types.Array(types.int64, 1, "C")
    assert units.Ahead(uk.weighted_sum, (i64, types.int64))._in_index()
    never = units.Ahead(uk.weighted_sum, (types.Array(types.float32, 3, "F"), types.int16))
    assert not never._in_index() and not never._in_cache()


def _cli(args, env):
    base = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    proc = subprocess.run([sys.executable, "-m", "pqforge.cli", *args], env={**base, **env}, capture_output=True,
                          text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stderr


def _wait_for_helpers(stderr):
    """Wait until the helpers a command named in its last line ("... in the background (pid N)") are gone."""
    import re
    import time
    for pid in [int(p) for line in stderr.splitlines() if "compile helper" in line
                for p in re.findall(r"\d+", line.rsplit("(", 1)[1])]:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)


@pytest.mark.slow
def test_verify_after_a_cold_sign_announces_no_compile(tmp_path):
    # sign's helper compiles verification's kernels into the cache without writing verify's
    # marker: verify then loads them, and must not announce "compiling ... about 8 s"
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    (tmp_path / "m").write_bytes(b"cold")
    keygen = _cli(["keygen", "--alg", "MAYO-2", "--out", str(tmp_path / "k")], env)
    assert "pqforge: compiling MAYO-2 keygen" in keygen
    sign = _cli(["sign", "--key", str(tmp_path / "k.sk"), str(tmp_path / "m")], env)
    _wait_for_helpers(keygen + sign)
    verify = _cli(["verify", "--key", str(tmp_path / "k.pk"), str(tmp_path / "m"), str(tmp_path / "m.sig")], env)
    assert NOTICE not in verify, verify
    assert list((tmp_path / "cache" / "pqforge-compiled").glob("mayo-verify*"))     # the marker, written now


def test_notices_follow_the_pace_of_the_first_compile(no_markers, capsys, monkeypatch):
    import time
    monkeypatch.setattr(no_markers, "PACE_FROM", 0.0)
    slow = no_markers.compiling("slow", 0.05, lambda p: "demo slow")(lambda p: time.sleep(0.1))
    slow(_Set())                                            # took about twice its estimate
    later = no_markers.compiling("later", 4, lambda p: "demo later")(lambda p: "done")
    assert later(_Set()) == "done"                           # instant: learnt nothing more
    again = no_markers.compiling("again", 4, lambda p: "demo again")(lambda p: "done")
    assert again(_Set()) == "done"
    err = capsys.readouterr().err
    assert err.count("once, about 8 s") == 2, err
    monkeypatch.setattr(no_markers, "_pace", [0.1])         # a much faster machine: at most halved
    assert no_markers.paced(4) == 2.0
    monkeypatch.setattr(no_markers, "_pace", [])
    assert no_markers.paced(4) == 4                          # nothing learnt yet: as estimated


def test_the_next_process_announces_at_the_pace_an_earlier_one_measured(no_markers, monkeypatch):
    import time
    monkeypatch.setattr(no_markers, "PACE_FROM", 0.0)
    no_markers.compiling("slow", 0.05, lambda p: "demo slow")(lambda p: time.sleep(0.1))(_Set())
    measured = no_markers._pace[0]
    assert measured > 1.5
    monkeypatch.setattr(no_markers, "_pace", [])             # a new process on the same machine
    monkeypatch.setattr(no_markers, "_remembered", [])
    assert no_markers.paced(4) == 4 * min(2.0, round(measured, 3))
    monkeypatch.setattr(no_markers, "_remembered", [])       # ... and on another machine
    monkeypatch.setattr(no_markers, "_machine", lambda: "another machine")
    assert no_markers.paced(4) == 4


def test_notices_announce_more_on_a_busy_machine(monkeypatch):
    from pqforge.jit import cache
    monkeypatch.setattr(cache, "_pace", [])             # no pace measured: as estimated for an idle machine
    monkeypatch.setattr(cache, "_remembered", [None])
    monkeypatch.setattr(cache.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(cache.os, "getloadavg", lambda: (3.0, 3.0, 3.0))     # two cores, three busy processes
    assert cache.paced(4) == 8
    monkeypatch.setattr(cache.os, "getloadavg", lambda: (0.2, 0.1, 0.0))     # idle: as estimated
    assert cache.paced(4) == 4


def test_a_compile_far_faster_than_announced_sets_no_pace(no_markers, monkeypatch):
    """Helpers of an earlier command had done the work: the operation's own time says nothing
    of the machine, and is neither used nor remembered."""
    monkeypatch.setattr(no_markers, "PACE_FROM", 0.0)
    no_markers.compiling("done elsewhere", 8, lambda p: "demo elsewhere")(lambda p: "done")(_Set())
    assert no_markers._pace == [] and not (no_markers.CACHE_DIR / "pqforge-compile-pace").exists()
    assert no_markers.paced(4) == 4


def test_a_notice_estimate_may_depend_on_the_parameter_set(no_markers, capsys):
    op = no_markers.compiling("demo", lambda p: len(p.name), lambda p: "demo estimated")(lambda p: "done")
    assert op(_Set()) == "done"
    assert "pqforge: compiling DEMO-1 demo kernels for this CPU, once, about 6 s" in capsys.readouterr().err


def test_mceliece_decapsulation_in_a_second_field_announces_its_one_unit(no_markers):
    from pqforge.mceliece import ahead, get
    p12, p13 = get("Classic-McEliece-348864").params, get("Classic-McEliece-8192128").params
    assert (p12.m, p13.m) == (12, 13)
    decap = ahead.COMPILE_SECONDS["decapsulation"]
    assert ahead.estimate("decapsulation", p12) == ahead.estimate("decapsulation", p13) == decap
    no_markers.mark_compiled(ahead.marker("decapsulation", p12))     # GF(2^12)'s decapsulation compiled
    assert ahead.estimate("decapsulation", p12) == decap                # its own marker says nothing of it
    assert ahead.estimate("decapsulation", p13) == ahead.SECOND_FIELD_SECONDS < decap
    assert ahead.estimate("encapsulation", p13) == ahead.COMPILE_SECONDS["encapsulation"]
