"""Where a first use's compile time goes: one cold round trip with every compile logged.

    python benchmarks/compile_timeline.py ALGORITHM [--json] [--functions DEPTH]

Runs keygen + sign + verify (a KEM: keygen + encap + decap) in a new process with an empty numba
cache and waits for the helpers it started. Every process (the one running the operations and
its helpers) logs numba's compile events (``numba.core.event``, "numba:compile": one per compiled
function, nested when a kernel's callee compiles inside it) and each entry of the compile queue
(``pqforge.jit.units``: units and ``Ahead`` entries, compiled or waited for). Prints the operations'
times, each process's CPU, each entry compiled with its start, end and CPU, and the compile CPU
split into the entries' own work, callees compiled on their own before their callers (numba
builds machine code for each, then the caller links and optimises them again) and numba's own
overloads of numpy functions (``np.empty`` and the like: compiled in each process, never
cached). Environment variables pass through (``NUMBA_OPT=1`` to compare optimisation levels).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

# Loaded by every process of the run (it is first on PYTHONPATH): logs to $COMPILE_TIMELINE_LOG.
_HOOK = textwrap.dedent('''
    import atexit, json, os, sys, time

    _records = []

    def _record(name, start, cpu, depth, kind):
        _records.append({"pid": os.getpid(), "name": name, "kind": kind, "depth": depth, "start": start,
                         "end": time.time(), "cpu": time.process_time() - cpu})

    def _listen():
        from numba.core import event

        class Compiles(event.Listener):
            def __init__(self):
                self.open = []

            def on_start(self, ev):
                self.open.append((time.time(), time.process_time()))

            def on_end(self, ev):
                start, cpu = self.open.pop()
                dispatcher = ev.data["dispatcher"]
                name = getattr(getattr(dispatcher, "py_func", None), "__qualname__", str(dispatcher))
                _record(name, start, cpu, len(self.open), "function")
        event.register("numba:compile", Compiles())

    def _wrap_queue():
        from pqforge.jit import units as _units
        for cls in (_units.Unit, _units.Ahead):
            def compile_here(self, original=cls._compile_here):
                start, cpu = time.time(), time.process_time()
                try:
                    original(self)
                finally:
                    _record(self.key.split("(")[0], start, cpu, 0, "entry")
            cls._compile_here = compile_here

    @atexit.register
    def _write():
        with open(os.environ["COMPILE_TIMELINE_LOG"], "a") as log:
            for r in _records:
                log.write(json.dumps(r) + "\\n")
            log.write(json.dumps({"pid": os.getpid(), "exit": time.time(), "cpu": time.process_time(),
                                  "helper": str(os.getpid()) != os.environ["COMPILE_TIMELINE_MAIN"]}) + "\\n")

    if os.environ.get("COMPILE_TIMELINE_LOG"):     # from the moment pqforge's queue is imported
        import builtins
        _import = builtins.__import__

        def _watching_import(*args, **kwargs):
            module = _import(*args, **kwargs)
            if (builtins.__import__ is _watching_import and "pqforge.jit.units" in sys.modules
                    and hasattr(sys.modules["pqforge.jit.units"], "obtain")):
                builtins.__import__ = _import       # once, also when imports are nested
                _listen()
                _wrap_queue()
            return module
        builtins.__import__ = _watching_import
''')

_ROUND_TRIP = textwrap.dedent('''
    import json, os, sys, time
    t0 = time.time()
    os.environ["COMPILE_TIMELINE_MAIN"] = str(os.getpid())    # (helpers inherit it)
    from pqforge import algorithms
    from pqforge.jit import units as _units
    alg = algorithms.get(sys.argv[1])
    sk = alg.generate_private_key()
    t1 = time.time()
    if alg.kind == "signature":
        signature = sk.sign(b"timeline")
        t2 = time.time()
        sk.public_key().verify(signature, b"timeline")
    else:
        ct, ss = sk.public_key().encapsulate()
        t2 = time.time()
        assert sk.decapsulate(ct) == ss
    t3 = time.time()
    for helper in list(_units._helpers.values()):
        helper.wait()
    print(json.dumps({"t0": t0, "first_key_s": t1 - t0, "second_op_s": t2 - t0, "round_trip_s": t3 - t0}))
''')

_NUMPY_OVERLOADS = ("ol_", "_ol_", "impl_np_", "_call_allocator", "np_")


def run(alg: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "hook").mkdir()
        (tmp / "hook" / "sitecustomize.py").write_text(_HOOK)
        log = tmp / "log"
        src = Path(__file__).resolve().parent.parent / "src"
        env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp / "cache"), COMPILE_TIMELINE_LOG=str(log),
                   PYTHONPATH=os.pathsep.join(p for p in (str(tmp / "hook"), str(src), os.environ.get("PYTHONPATH"))
                                              if p))
        out = subprocess.run([sys.executable, "-c", _ROUND_TRIP, alg], env=env, check=True, capture_output=True,
                             text=True).stdout
        times = json.loads(out)
        records = [json.loads(line) for line in log.read_text().splitlines()]
    t0 = times.pop("t0")
    processes = [{"pid": r["pid"], "helper": r["helper"], "cpu_s": r["cpu"], "exit_s": r["exit"] - t0}
                 for r in records if "exit" in r]
    functions = [r for r in records if r.get("kind") == "function"]
    for f in functions:     # CPU of its own: less the functions compiled inside it
        inner = [g for g in functions if g["pid"] == f["pid"] and g["depth"] == f["depth"] + 1
                 and g["start"] >= f["start"] and g["end"] <= f["end"]]
        f["own"] = f["cpu"] - sum(g["cpu"] for g in inner)
    entries = sorted((r for r in records if r.get("kind") == "entry" and r["cpu"] > 0.05), key=lambda r: r["start"])
    compiled = [{"pid": f["pid"], "depth": f["depth"], "name": f["name"], "start_s": f["start"] - t0,
                 "end_s": f["end"] - t0, "cpu_s": f["cpu"], "own_cpu_s": f["own"]}
                for f in sorted(functions, key=lambda f: f["start"])]
    numpy_overloads = sum(f["own"] for f in functions if f["name"].startswith(_NUMPY_OVERLOADS))
    callees = sum(f["own"] for f in functions if f["depth"] > 0 and not f["name"].startswith(_NUMPY_OVERLOADS))
    compile_cpu = sum(e["cpu"] for e in entries) + sum(f["cpu"] for f in functions if f["depth"] == 0
                                                        and not any(e["pid"] == f["pid"] and e["start"] <= f["start"]
                                                                    and f["end"] <= e["end"] for e in entries))
    return {"alg": alg, **times, "processes": processes,
            "entries": [{"pid": e["pid"], "name": e["name"], "start_s": e["start"] - t0, "end_s": e["end"] - t0,
                         "cpu_s": e["cpu"]} for e in entries],
            "functions": compiled, "compile_cpu_s": compile_cpu, "callees_cpu_s": callees, "numpy_overloads_cpu_s": numpy_overloads}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("alg")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--functions", type=int, metavar="DEPTH",
                        help="also list every function compiled, nested up to DEPTH (0: the outermost)")
    args = parser.parse_args()
    res = run(args.alg)
    if args.json:
        print(json.dumps(res, indent=1))
        return
    print(f"{res['alg']}: first key {res['first_key_s']:.1f} s, second operation done {res['second_op_s']:.1f} s, "
          f"round trip {res['round_trip_s']:.1f} s")
    for p in res["processes"]:
        print(f"  {'helper ' if p['helper'] else 'process'} {p['pid']}: {p['cpu_s']:.1f} s CPU, exit at "
              f"{p['exit_s']:.1f} s")
    for e in res["entries"]:
        print(f"  {e['pid']:>8} {e['start_s']:6.2f} {e['end_s']:6.2f}  {e['cpu_s']:5.2f} s CPU  {e['name']}")
    if args.functions is not None:
        for f in res["functions"]:
            if f["depth"] <= args.functions:
                print(f"  {f['pid']:>8} {f['start_s']:6.2f} {f['end_s']:6.2f}  {f['cpu_s']:5.2f} s CPU "
                      f"({f['own_cpu_s']:5.2f} own)  {'  ' * f['depth']}{f['name']}")
    print(f"  compile CPU {res['compile_cpu_s']:.1f} s, of which callees compiled on their own "
          f"{res['callees_cpu_s']:.1f} s and numba's numpy overloads {res['numpy_overloads_cpu_s']:.1f} s")


if __name__ == "__main__":
    main()
