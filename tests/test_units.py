"""Separately compiled kernels (``pqforge._units``): called from compiled code through their
address, type-checked when the caller compiles, compiled side by side when several are missing."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba.core.errors import TypingError

from pqforge import _units
from tests import unit_kernels as uk

ROOT = Path(__file__).resolve().parent.parent


def test_a_compiled_caller_reaches_the_unit_through_its_address():
    a = np.arange(1, 6, dtype=np.int64)
    assert uk.twice_the_sum(uk.SUM.address, a, 3) == 2 * 3 * 15
    assert uk.scaled_sum(_units.addresses((uk.SUM, uk.SCALE)), a, 2) == 30


def test_outside_compiled_code_the_call_runs_the_kernel_itself():
    a = np.arange(4, dtype=np.int64)
    assert uk.sum_unit(0, a, 2) == uk.weighted_sum(a, 2) == 12     # the address is not used


def test_argument_types_other_than_the_units_signature_fail_when_the_caller_compiles():
    with pytest.raises(TypingError, match="unit weighted_sum takes"):
        uk.twice_the_sum(uk.SUM.address, np.arange(3, dtype=np.int32), 1)


def test_units_missing_from_the_cache_compile_in_other_processes(tmp_path):
    code = ("import json\n"
            "from pqforge import _units\n"
            "from tests import unit_kernels as uk\n"
            "started = []\n"
            "spawn = _units._compile_elsewhere\n"
            "_units._compile_elsewhere = lambda items, later=False: (started.extend(i.kernel.__name__ for i in items),"
            " spawn(items, later))\n"
            "_units._cores = lambda: 2\n"
            "import numpy as np\n"
            "print(json.dumps({'started': started, 'result': int(uk.scaled_sum(_units.addresses((uk.SUM, uk.SCALE)),"
            " np.arange(1, 6, dtype=np.int64), 2))}))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [json.loads(subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                                      text=True, check=True, timeout=600).stdout) for _ in range(2)]
    assert runs[0] == {"started": ["scale_into"], "result": 30}     # the first here, the second elsewhere
    assert runs[1] == {"started": [], "result": 30}                 # then both from the cache
    assert len(list(tmp_path.rglob("*scale_into_unit*.nbi"))) == 1


def test_the_argument_types_compiled_ahead_are_those_of_the_calls():
    # an entry whose types no call uses would be compiled for nothing on every first use
    from pqforge.mceliece import McEliece348864, McEliece348864f, scheme
    for alg in (McEliece348864, McEliece348864f):
        pk, sk = alg.keypair()
        alg.encapsulate(pk)
    for item in sum(scheme.KEYGEN, ()) + scheme.ENCAPSULATION:
        assert item.args in item.kernel.overloads, item.key


def test_a_helper_process_that_does_not_finish_is_stopped_and_the_unit_compiles_here(monkeypatch):
    class Stuck:
        killed = False

        def wait(self, timeout=None):
            if timeout is not None and not self.killed:
                raise subprocess.TimeoutExpired("worker", timeout)

        def kill(self):
            self.killed = True

    unit = _units.Unit(uk.weighted_sum, uk.SUM.signature)       # a fresh unit: not loaded yet
    stuck = Stuck()
    unit._worker = stuck
    monkeypatch.setattr(_units, "WORKER_SECONDS", 0.01)
    address, = _units.addresses((unit,))
    assert stuck.killed and unit._worker is None
    assert uk.twice_the_sum(address, np.arange(3, dtype=np.int64), 1) == 6


def test_without_a_python_interpreter_to_start_everything_compiles_here(monkeypatch):
    # Python embedded in another program: sys.executable is that program (here one that exists
    # and would start), never run with our arguments
    monkeypatch.setattr(_units.sys, "executable", shutil.which("true"))
    unit = _units.Unit(uk.scale_into, uk.SCALE.signature)
    _units._compile_elsewhere([unit])
    assert unit._worker is None


def _never_cached(monkeypatch, unit):
    monkeypatch.setattr(unit, "_in_cache", lambda: False)
    return unit


def test_an_entry_a_live_helper_of_another_process_compiles_is_not_compiled_again(monkeypatch, tmp_path):
    monkeypatch.setattr(_units._compile_cache, "CACHE_DIR", tmp_path)
    unit = _never_cached(monkeypatch, _units.Unit(uk.weighted_sum, uk.SUM.signature))
    helper = subprocess.Popen(["sleep", "60"])     # stands for a helper some other process started
    try:
        _units._mark([_units._spec(unit)], helper.pid)
        assert _units._missing((unit,)) == []
    finally:
        helper.kill()
        helper.wait()
    assert _units._missing((unit,)) == [unit]       # its helper is gone: the marker is stale


def test_waiting_for_another_processs_helper_ends_when_its_marker_goes(monkeypatch, tmp_path):
    import threading
    import time
    monkeypatch.setattr(_units._compile_cache, "CACHE_DIR", tmp_path)
    unit = _never_cached(monkeypatch, _units.Unit(uk.weighted_sum, uk.SUM.signature))
    spec = _units._spec(unit)
    helper = subprocess.Popen(["sleep", "60"])
    try:
        _units._mark([spec], helper.pid)
        threading.Timer(0.5, _units._in_progress_marker(spec).unlink).start()     # the entry lands
        start = time.monotonic()
        _units.wait((unit,))
        assert 0.4 < time.monotonic() - start < 30
    finally:
        helper.kill()
        helper.wait()


def test_a_process_started_while_an_earlier_ones_helper_runs_waits_for_it(tmp_path):
    # `pqforge keygen` starts helpers and returns; `pqforge sign` right after must not compile
    # what they are compiling
    first = ("from pqforge import _units\n"
             "from tests import unit_kernels as uk\n"
             "_units._cores = lambda: 2\n"
             "_units.prefetch((uk.SUM, uk.SCALE), later=True)\n")
    second = ("import json\n"
              "import numpy as np\n"
              "from pqforge import _units\n"
              "from tests import unit_kernels as uk\n"
              "here, spawned = [], []\n"
              "_units._cores = lambda: 2\n"
              "compile_here = _units.Unit._compile_here\n"
              "_units.Unit._compile_here = lambda self: (here.append(self.key), compile_here(self))\n"
              "_units._compile_elsewhere = lambda items, later=False: spawned.extend(i.key for i in items)\n"
              "result = int(uk.scaled_sum(_units.addresses((uk.SUM, uk.SCALE)), np.arange(1, 6, dtype=np.int64), 2))\n"
              "print(json.dumps({'here': here, 'spawned': spawned, 'result': result}))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    subprocess.run([sys.executable, "-c", first], cwd=ROOT, env=env, check=True, timeout=600)
    assert len(list((tmp_path / "pqforge-compiling").iterdir())) in (1, 2)    # the helper's work left
    out = subprocess.run([sys.executable, "-c", second], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True, timeout=600).stdout
    assert json.loads(out) == {"here": [], "spawned": [], "result": 30}
    assert list((tmp_path / "pqforge-compiling").iterdir()) == []      # each marker removed as its entry landed
