"""Separately compiled kernels (``pqforge.jit.units``): called from compiled code through their
address, type-checked when the caller compiles, compiled side by side when several are missing."""

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from numba.core.errors import TypingError

from pqforge.jit import units
from tests import unit_kernels as uk

ROOT = Path(__file__).resolve().parent.parent


def test_a_compiled_caller_reaches_the_unit_through_its_address():
    a = np.arange(1, 6, dtype=np.int64)
    assert uk.twice_the_sum(uk.SUM.address, a, 3) == 2 * 3 * 15
    assert uk.scaled_sum(units.addresses((uk.SUM, uk.SCALE)), a, 2) == 30


def test_outside_compiled_code_the_call_runs_the_kernel_itself():
    a = np.arange(4, dtype=np.int64)
    assert uk.sum_unit(0, a, 2) == uk.weighted_sum(a, 2) == 12     # the address is not used


def test_argument_types_other_than_the_units_signature_fail_when_the_caller_compiles():
    with pytest.raises(TypingError, match="unit weighted_sum takes"):
        uk.twice_the_sum(uk.SUM.address, np.arange(3, dtype=np.int32), 1)


def _compiles(log):
    """The keys of the units compiled (not loaded), one entry per compile in any process, from a
    UNIT_COMPILE_LOG file."""
    return sorted(line.split()[1] for line in log.read_text().splitlines())


def test_units_missing_from_the_cache_compile_here_and_in_a_helper_without_compiling_twice(tmp_path):
    code = ("import json\n"
            "from pqforge.jit import units\n"
            "from tests import unit_kernels as uk\n"
            "started = []\n"
            "spawn = units._start_helper\n"
            "units._start_helper = lambda specs: (started.append(list(specs)), spawn(specs))\n"
            "units.cores = lambda: 2\n"
            "import numpy as np\n"
            "print(json.dumps({'started': started, 'result': int(uk.scaled_sum(units.addresses((uk.SUM, uk.SCALE)),"
            " np.arange(1, 6, dtype=np.int64), 2))}))\n")
    log = tmp_path / "log"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "UNIT_COMPILE_LOG": str(log)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                                      text=True, check=True, timeout=600).stdout) for _ in range(2)]
    specs = [units._spec(u) for u in (uk.SUM, uk.SCALE)]
    assert runs[0] == {"started": [specs], "result": 30}     # one helper, over the same list
    assert runs[1] == {"started": [], "result": 30}          # then both from the cache
    assert _compiles(log) == sorted([uk.SUM.key, uk.SCALE.key])     # each once, here or in the helper
    assert not list((tmp_path / "cache" / "pqforge-compiling").iterdir())    # every claim released


_AHEAD_CHECK = """
import sys
from pqforge.jit import units
from {plan} import ahead
ahead.prefetch = ahead.obtain = lambda *a, **k: None    # only the operations' own calls compile
{calls}
missing = [item.key for item in {entries} if isinstance(item, units.Ahead) and item.args not in item.kernel.overloads]
assert not missing, missing
"""


def _check_ahead(plan, calls, entries, env=None):
    """Run ``calls`` in a new process with the compiling-ahead of ``plan.ahead`` switched off: every
    ``Ahead`` entry in ``entries`` must then be among the kernels' compiled argument types."""
    code = _AHEAD_CHECK.format(plan=plan, calls=calls, entries=entries)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, **(env or {})},
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_the_argument_types_compiled_ahead_are_those_of_the_calls():
    # an entry whose types no call uses would be compiled for nothing on every first use (and the
    # call would compile its own)
    _check_ahead("pqforge.mceliece", """
from pqforge.mceliece import McEliece348864, McEliece348864f, McEliece460896
for alg in (McEliece348864, McEliece348864f, McEliece460896):       # t = 64 and 96
    pk, sk = alg.keypair()
    alg.decapsulate(sk, alg.encapsulate(pk)[0])
""", "ahead.KEYGEN + ahead.ENCAPSULATION + ahead.DECODING")


@pytest.mark.parametrize("kernel_set", ["auto", "portable"])
def test_the_mayo_argument_types_compiled_ahead_are_those_of_the_calls(kernel_set):
    _check_ahead("pqforge.mayo.kernels", """
from pqforge.mayo import MAYO1, MAYO2, MAYO5
algs = (MAYO1, MAYO2, MAYO5)            # 2, 1 and 3 limbs
for alg in algs:
    sk = alg.generate_private_key()
    sk.public_key().verify(sk.sign(b"ahead"), b"ahead")
""", "[e for alg in algs for e in ahead.signing(alg.params) + ahead.verifying(alg.params)]",
                 {"PQFORGE_KERNELS": kernel_set})


@pytest.mark.parametrize("kernel_set", ["auto", "portable"])
def test_the_serving_loops_compiled_ahead_are_those_the_service_calls(kernel_set):
    _check_ahead("pqforge.mayo.kernels", """
from pqforge.mayo import MAYO2
MAYO2.warm_up_serving()
""", "ahead.serving(MAYO2.params)", {"PQFORGE_KERNELS": kernel_set})


def test_a_helper_finds_every_entry_a_first_use_hands_it():
    # a helper looks an entry up by module and key (``compile_in_worker``); one it cannot find
    # it skips, and the process that asked then compiles it alone
    import importlib

    from pqforge.mayo.kernels import ahead as mayo_ahead
    from pqforge.mayo.params import ROUND2
    from pqforge.mceliece import ahead as mceliece_ahead
    handed = [*mceliece_ahead.KEYGEN, *mceliece_ahead.ENCAPSULATION, *mceliece_ahead.DECODING]
    for p in ROUND2:
        handed += [*mayo_ahead.signing(p), *mayo_ahead.verifying(p), *mayo_ahead.serving(p)]
    for item in handed:
        found = [e for e in units._declared(importlib.import_module(item.home)) if e.key == item.key]
        assert found, f"{units._spec(item)} is not where a helper looks for it"


def _claimed_by(item, pid):
    marker = units._in_progress_marker(units._spec(item))
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(f"{pid}\n")
    return marker


@pytest.fixture
def sleeper():
    """A live process other than this one, standing for another process's helper."""
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


def test_an_entry_claimed_by_a_live_process_is_not_claimed_again_until_that_process_is_gone(
        monkeypatch, tmp_path, sleeper):
    monkeypatch.setattr(units.compile_cache, "CACHE_DIR", tmp_path)
    unit = _never_cached(monkeypatch, units.Unit(uk.weighted_sum, uk.SUM.signature))
    marker = _claimed_by(unit, sleeper.pid)
    assert not units._claim(unit) and units._missing((unit,)) == []
    sleeper.kill()
    sleeper.wait()
    assert units._missing((unit,)) == [unit]       # its process is gone: the claim is stale
    assert units._claim(unit) and marker.read_text() == f"{os.getpid()}\n"
    units._unmark(units._spec(unit))
    assert not marker.exists()


def test_a_claim_older_than_the_limit_is_stale_and_the_entry_compiles_here(monkeypatch, tmp_path, sleeper):
    monkeypatch.setattr(units.compile_cache, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(units, "WORKER_SECONDS", 0.01)
    unit = units.Unit(uk.weighted_sum, uk.SUM.signature)       # a fresh unit: not loaded yet
    _claimed_by(unit, sleeper.pid)
    time.sleep(0.05)
    address, = units.addresses((unit,))
    assert uk.twice_the_sum(address, np.arange(3, dtype=np.int64), 1) == 6


def test_without_a_python_interpreter_to_start_everything_compiles_here(monkeypatch):
    # Python embedded in another program: sys.executable is that program (here one that exists
    # and would start), never run with our arguments
    monkeypatch.setattr(units.sys, "executable", shutil.which("true"))
    before = dict(units._helpers)
    units._start_helper([units._spec(uk.SCALE)])
    assert units._helpers == before


def _never_cached(monkeypatch, unit):
    monkeypatch.setattr(unit, "_in_cache", lambda: False)
    return unit


def test_a_helper_skips_the_entries_another_live_process_has_claimed(monkeypatch, tmp_path, sleeper):
    monkeypatch.setattr(units.compile_cache, "CACHE_DIR", tmp_path)
    compiled = []
    monkeypatch.setattr(units.Unit, "_compile_here", lambda self: compiled.append(self.key))
    monkeypatch.setattr(units.Unit, "_in_cache", lambda self: False)
    _claimed_by(uk.SUM, sleeper.pid)
    units.compile_in_worker([units._spec(uk.SUM), units._spec(uk.SCALE)])
    assert compiled == [uk.SCALE.key]
    assert units._in_progress_marker(units._spec(uk.SUM)).exists()     # the other's claim stays
    assert not units._in_progress_marker(units._spec(uk.SCALE)).exists()


def test_waiting_for_an_entry_another_process_compiles_ends_when_its_claim_goes(monkeypatch, tmp_path, sleeper):
    import threading
    monkeypatch.setattr(units.compile_cache, "CACHE_DIR", tmp_path)
    unit = _never_cached(monkeypatch, units.Unit(uk.weighted_sum, uk.SUM.signature))
    marker = _claimed_by(unit, sleeper.pid)
    threading.Timer(0.5, marker.unlink).start()     # the entry lands
    start = time.monotonic()
    units.obtain((unit,))
    assert 0.4 < time.monotonic() - start < 30 and unit._ready()


def test_a_process_started_while_an_earlier_ones_helper_runs_shares_the_work_and_nothing_compiles_twice(tmp_path):
    # `pqforge keygen` starts a helper and returns; `pqforge sign` right after must not compile
    # what the helper is compiling, and compiles what it has not taken yet
    first = ("from pqforge.jit import units\n"
             "from tests import unit_kernels as uk\n"
             "units.cores = lambda: 2\n"
             "units.prefetch(later=(uk.SUM, uk.SCALE))\n")
    second = ("import json\n"
              "import numpy as np\n"
              "from pqforge.jit import units\n"
              "from tests import unit_kernels as uk\n"
              "spawned = []\n"
              "units.cores = lambda: 2\n"
              "units._start_helper = lambda specs: spawned.append(specs)\n"
              "result = int(uk.scaled_sum(units.addresses((uk.SUM, uk.SCALE)), np.arange(1, 6, dtype=np.int64), 2))\n"
              "print(json.dumps({'spawned': spawned, 'result': result}))\n")
    log = tmp_path / "log"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "UNIT_COMPILE_LOG": str(log)}
    subprocess.run([sys.executable, "-c", first], cwd=ROOT, env=env, check=True, timeout=600)
    out = subprocess.run([sys.executable, "-c", second], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=600).stdout
    result = json.loads(out)
    assert result["result"] == 30
    deadline = time.monotonic() + 300       # the helper may still be loading what the second process compiled
    while list((tmp_path / "cache" / "pqforge-compiling").glob("*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not list((tmp_path / "cache" / "pqforge-compiling").glob("*"))    # every claim released
    assert _compiles(log) == sorted([uk.SUM.key, uk.SCALE.key])     # each once, in one process or the other


def test_while_waiting_for_an_entry_claimed_elsewhere_the_process_compiles_what_follows(monkeypatch, tmp_path,
                                                                                        sleeper):
    # signing waits for the kernel a helper compiles: it compiles verification's meanwhile
    import threading
    monkeypatch.setattr(units.compile_cache, "CACHE_DIR", tmp_path)
    waited = _never_cached(monkeypatch, units.Unit(uk.weighted_sum, uk.SUM.signature))
    follows = _never_cached(monkeypatch, units.Unit(uk.scale_into, uk.SCALE.signature))
    taken = _never_cached(monkeypatch, units.Unit(uk.weighted_sum, uk.SUM.signature))
    taken.key += "-taken"                               # another entry, claimed by another process too
    marker = _claimed_by(waited, sleeper.pid)
    _claimed_by(taken, sleeper.pid)
    threading.Timer(0.5, marker.unlink).start()       # the waited-for entry lands
    units.obtain((waited,), meanwhile=(taken, follows))
    assert waited._ready() and follows._ready() and not taken._ready()
    assert not units._in_progress_marker(units._spec(follows)).exists()     # its claim released


@pytest.fixture
def sleeping_helpers(monkeypatch):
    """Helpers that sleep instead of compiling, started as ``prefetch`` starts them."""
    monkeypatch.setattr(units, "_WORKER", "import time; time.sleep(60)")
    yield
    units.stop_helpers()


def test_running_helpers_are_listed_and_stopping_them_reaps_them_without_a_warning(sleeping_helpers):
    import gc
    import warnings
    units._start_helper([])
    units._start_helper([])
    pids = units.running_helpers()
    assert len(pids) == 2 and all(units._helpers[pid].poll() is None for pid in pids)
    processes = [units._helpers[pid] for pid in pids]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        units.stop_helpers()
        del processes[:]
        gc.collect()
    assert units.running_helpers() == [] and units._helpers == {}
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)         # reaped: gone, no zombie


def test_a_helper_is_reaped_as_it_ends_with_nothing_polling_it(monkeypatch):
    monkeypatch.setattr(units, "_WORKER", "pass")      # ends at once
    units._start_helper([])
    helper, = units._helpers.values()
    deadline = time.monotonic() + 60
    while os.path.exists(f"/proc/{helper.pid}"):       # a zombie would stay until someone polled it
        assert time.monotonic() < deadline, f"helper {helper.pid} not reaped"
        time.sleep(0.05)
    assert helper.returncode == 0
    units.stop_helpers()


def test_only_an_owning_process_names_itself_to_its_helpers(monkeypatch):
    seen = []
    monkeypatch.setattr(units.subprocess, "Popen", lambda argv, env, **kw: seen.append(env) or _Ended())
    monkeypatch.setenv(units.HELPER_OF, "1")           # (as in a helper: never passed on as it is)
    monkeypatch.setattr(units, "_owning", False)
    units.start_helper(["-c", "pass"])
    monkeypatch.setattr(units, "_owning", True)
    units.start_helper(["-c", "pass"])
    assert units.HELPER_OF not in seen[0] and seen[1][units.HELPER_OF] == str(os.getpid())
    units.stop_helpers()


class _Ended:
    pid, returncode = -1, 0

    def wait(self, timeout=None):
        return 0

    def poll(self):
        return 0


def test_stopping_helpers_lets_them_finish_within_the_time_given(monkeypatch):
    monkeypatch.setattr(units, "_WORKER", "import time; time.sleep(0.3)")
    units._start_helper([])
    helper, = units._helpers.values()
    units.stop_helpers(timeout=30)
    assert helper.returncode == 0           # finished on its own, not terminated


_LEFT_RUNNING = """
import os
from pqforge.jit import units

def test_leaves_a_helper_running():
    units._WORKER = "import time; time.sleep(60)"
    units._start_helper([])
    pid, = units.running_helpers()
    with open(os.environ["HELPER_PID_FILE"], "w") as f:
        f.write(str(pid))
"""


def test_a_pytest_session_ends_with_no_helper_left_running(tmp_path):
    # the session fixture of tests/conftest.py, loaded as a plugin for a test file outside tests/
    (tmp_path / "test_left.py").write_text(_LEFT_RUNNING)
    pid_file = tmp_path / "pid"
    proc = subprocess.run([sys.executable, "-X", "dev", "-m", "pytest", "-q", "-p", "tests.conftest",
                           "-p", "no:cacheprovider", str(tmp_path / "test_left.py")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HELPER_PID_FILE": str(pid_file)})
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    if alive:
        os.kill(pid, 9)     # (not ours to reap: an orphan, reaped by init)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert not alive, f"helper {pid} outlived the pytest session"
    assert "still running" not in proc.stdout + proc.stderr, proc.stdout[-2000:] + proc.stderr[-2000:]
