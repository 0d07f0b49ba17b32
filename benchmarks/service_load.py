"""The service under wrk, next to the library's batch calls in the same run.

    python benchmarks/service_load.py [--seconds 10] [--connections 64] [--many-clients 4] [--rounds 2] [--no-write]
    python benchmarks/service_load.py --overload [--max-queue 128] [--seconds 10] [--connections 64]
    python benchmarks/service_load.py --threads [--seconds 10] [--connections 64] [--rounds 2]

Starts one ``pqforge serve`` with its default settings on an ephemeral loopback port (a fresh
SQLite store, one MAYO-2 key), then, each round, interleaved: ``GET /healthz`` (the HTTP ceiling
of the stack), single-message ``POST /v1/keys/ID/sign``, the library's ``sign_many`` (256
messages per call, default arguments, in this process while the server idles), single-message
``POST /v1/verify`` and the library's ``verify_many``, each library call followed by the
service's many-message requests of as many messages (``--many-clients`` connections: four
keep a request waiting while others compute). wrk: one thread, one keep-alive
connection per client, time-limited (``pqforge.bench.service``). Prints each figure with the
server's CPU time per request, and writes one results file (``benchmarks/results/README.md``):
``service-load-MACHINE-DATE.jsonl``, a letter after the date when that name is taken.

Targets: single sign at 64 clients >= 50% of ``sign_many`` with p99 <= 50 ms; single verify >=
50% of ``/healthz``; sign-many and verify-many >= 80% of ``sign_many`` / ``verify_many``.

``--threads``: where a single request's server time goes. For healthz, sign and verify, the CPU
time per request of the event-loop thread (the process's first) and of all its other threads
(batch executor, chunk workers, store), read from /proc before and after each wrk run, and the
machine's idle share meanwhile (Linux only; writes no results file).

``--overload``: the server with a short queue (``max_queue``, per key and operation), then
single-message signing from 8 times as many connections as the queue holds (more requests
waiting than it admits, whatever the server's rate), then from ``--connections`` again. Prints
for each phase the answers per second, the 429 answers per second (from the server's own
``/metrics``), p50 and p99: the service refuses what its queue cannot hold at once, the answered
requests' latency stays bounded by the queue, and the next phase gets no 429.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
import shutil
import string
import sys
import tempfile
import time
from pathlib import Path

from tables import machine, machine_tag  # (benchmarks/ is on the path of a script run from it)

from pqforge import algorithms
from pqforge.client import Client
from pqforge.bench.service import cpu_seconds, load_wrk, messages_per_second, start_server
from pqforge.service.config import Settings

DEFAULT = Settings()     # the server runs with the default batching settings

RESULTS = Path(__file__).resolve().parent / "results"
MANY = 256      # messages per many-message request, and per library call


def _results_path(tag: str, date: str) -> Path:
    for suffix in [""] + list(string.ascii_lowercase):
        path = RESULTS / f"service-load-{tag}-{date}{suffix}.jsonl"
        if not path.exists():
            return path
    raise SystemExit("too many results files for one day")


def _requests(port: int, token: str, alg: str) -> dict[str, tuple[str, list[bytes]]]:
    """operation -> (path, request bodies) for wrk, against a new key of ``alg`` on the server."""
    with Client(f"http://127.0.0.1:{port}", token) as c:
        key = c.create_key(alg)
        messages = [b"wrk message %d" % i for i in range(4096)]
        signatures = c.sign_many(key["id"], messages)
    b64 = lambda b: base64.b64encode(b).decode()
    sign_bodies = [json.dumps({"message": b64(m)}).encode() for m in messages]
    verify_bodies = [json.dumps({"key_id": key["id"], "message": b64(m), "signature": b64(s)}).encode()
                     for m, s in zip(messages, signatures)]
    many = messages[:MANY]
    sign_many = json.dumps({"messages": [b64(m) for m in many]}).encode()
    verify_many = json.dumps({"key_id": key["id"], "messages": [b64(m) for m in many],
                              "signatures": [b64(s) for s in signatures[:MANY]]}).encode()
    return {"healthz": ("/healthz", []), "sign": (f"/v1/keys/{key['id']}/sign", sign_bodies),
            "verify": ("/v1/verify", verify_bodies),
            "sign-many": (f"/v1/keys/{key['id']}/sign-many", [sign_many]),
            "verify-many": ("/v1/verify-many", [verify_many])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--alg", default="MAYO-2")
    parser.add_argument("--seconds", type=float, default=10.0, help="seconds per wrk run (default 10)")
    parser.add_argument("--connections", type=int, default=64, help="wrk connections (default 64)")
    parser.add_argument("--many-clients", type=int, default=4,
                        help="wrk connections for the many-message requests (default 4)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds (default 2)")
    parser.add_argument("--machine-tag", default=machine_tag(),
                        help=f"short machine name in the file name (default here: {machine_tag()})")
    parser.add_argument("--no-write", action="store_true", help="print only; write no results file")
    parser.add_argument("--overload", action="store_true", help="show the answers under overload, then recovery")
    parser.add_argument("--max-queue", type=int, default=128, help="the server's max_queue with --overload")
    parser.add_argument("--threads", action="store_true",
                        help="where single requests' server time goes: CPU per request by thread, machine idle")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        raise SystemExit("service_load: needs wrk (apt-get install wrk)")
    if args.overload:
        return overload(args)
    if args.threads:
        return threads(args)

    alg = algorithms.get(args.alg)
    many = [b"bench message %d" % i for i in range(MANY)]
    sk = alg.generate_private_key()
    pk = sk.public_key()
    many_sigs = sk.sign_many(many)
    pk.verify_many(many, many_sigs)          # key expansion and first-use compiles, untimed
    library = {"sign": lambda: messages_per_second(lambda: sk.sign_many(many), len(many), min_s=3.0),
               "verify": lambda: messages_per_second(lambda: pk.verify_many(many, many_sigs), len(many), min_s=3.0)}
    started_utc = time.strftime("%H:%M", time.gmtime())
    rows, latencies = [], []

    with tempfile.TemporaryDirectory(prefix="pqforge-load-") as tmp:
        workdir = Path(tmp)
        proc, port, token = start_server(workdir, alg.name, DEFAULT.max_batch, DEFAULT.max_wait_ms, "cpu", 1,
                                         max_queue=None)
        try:
            http = _requests(port, token, alg.name)

            def served(op: str) -> float:
                """Requests per second; messages per second for a many-message operation."""
                path, bodies = http[op]
                many_messages = op.endswith("-many")
                cpu0 = cpu_seconds(proc.pid)
                result = load_wrk(port, token, path, bodies, args.many_clients if many_messages else args.connections,
                                  args.seconds, workdir)
                cpu_us = (cpu_seconds(proc.pid) - cpu0) / max(1, result["requests"]) * 1e6
                per_s = result["per_s"] * (MANY if many_messages else 1)
                print(f"  {op:<11} {per_s:>9,.0f}/s  p50 {result['p50_ms']:6.1f} ms  p99 "
                      f"{result['p99_ms']:6.1f} ms  errors {result['errors']}  server CPU {cpu_us:5.0f} us/request  "
                      f"wrk CPU {result['gen_cpu_s']:.2f} s", flush=True)
                latencies.append(f"{op} {result['p99_ms']:.1f}")
                return per_s

            def lib(op: str) -> float:
                rate = library[op]()
                print(f"  {op}_many {rate:>9,.0f}/s (library, {len(many)} messages per call)", flush=True)
                return rate

            for round_ in range(1, args.rounds + 1):
                print(f"round {round_}", flush=True)
                figures = {"healthz": served("healthz"), "sign": served("sign")}
                lib_sign = lib("sign")
                figures["sign-many"] = served("sign-many")
                figures["verify"] = served("verify")
                lib_verify = lib("verify")
                figures["verify-many"] = served("verify-many")
                print(f"  single sign = {100 * figures['sign'] / lib_sign:.0f}% of sign_many; single verify = "
                      f"{100 * figures['verify'] / figures['healthz']:.0f}% of healthz; sign-many = "
                      f"{100 * figures['sign-many'] / lib_sign:.0f}% of sign_many; verify-many = "
                      f"{100 * figures['verify-many'] / lib_verify:.0f}% of verify_many", flush=True)
                rows.append({"round": round_, "alg": alg.name, "impl": f"pqforge serve, {args.connections} clients",
                             "per_s": {k: round(v) for k, v in figures.items()}})
                rows.append({"round": round_, "alg": alg.name, "impl": "library sign_many / verify_many",
                             "per_s": {"sign": round(lib_sign), "verify": round(lib_verify),
                                       "sign-many": round(lib_sign), "verify-many": round(lib_verify)}})
        finally:
            proc.terminate()
            proc.wait(timeout=60)

    if args.no_write:
        return 0
    date = time.strftime("%Y-%m-%d", time.gmtime())
    meta = {"comparison": "service-load", "machine": machine(), "date": date,
            "time_utc": f"{started_utc}-{time.strftime('%H:%M', time.gmtime())}",
            "unit": "per_s", "reference": "library sign_many / verify_many",
            "command": f"`python benchmarks/service_load.py --seconds {args.seconds:g} --connections "
                       f"{args.connections} --many-clients {args.many_clients} --rounds {args.rounds}`",
            "method": f"one `pqforge serve` with default settings; per round, interleaved: wrk (1 thread, "
                      f"{args.connections} keep-alive connections, {args.seconds:g} s) on `GET /healthz`, single "
                      f"`POST /v1/keys/ID/sign`, the library's `sign_many` ({MANY} messages per call, at least 3 s), "
                      f"`sign-many` requests of {MANY} messages from {args.many_clients} connections, single "
                      f"`POST /v1/verify`, `verify_many`, `verify-many` requests; the service's row is requests "
                      f"per second, messages per second for sign-many and verify-many (the library's row repeats "
                      f"its sign_many / verify_many there)",
            "p99_ms": ", ".join(latencies),
            "kernels": _kernel_set(),
            "python": sys.version.split()[0]}
    path = _results_path(args.machine_tag, date)
    path.write_text("".join(json.dumps(line) + "\n" for line in [{"meta": meta}, *rows]))
    print(f"wrote {path}")
    return 0


def _kernel_set() -> str:
    """The MAYO kernel set the server ran: its own choice, made as this process makes it."""
    from pqforge.gf16 import sets
    forced = os.environ.get(sets.ENV, "auto").strip().lower() not in ("", "auto")
    return f"{sets.NAME} ({'forced with ' + sets.ENV if forced else 'the default on this CPU'})"


def _status_counts(port: int, operation: str) -> dict[str, float]:
    """The server's request counters for ``operation`` by status (its Prometheus ``/metrics``)."""
    import httpx
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=10).text
    return {m.group(1): float(m.group(2)) for m in
            re.finditer(r'pqforge_requests_total\{operation="%s",status="(\d+)"\} (\S+)' % re.escape(operation), text)}


def overload(args) -> int:
    alg = algorithms.get(args.alg)
    phases = [("overload", 8 * args.max_queue), ("after", args.connections)]
    with tempfile.TemporaryDirectory(prefix="pqforge-load-") as tmp:
        workdir = Path(tmp)
        proc, port, token = start_server(workdir, alg.name, DEFAULT.max_batch, DEFAULT.max_wait_ms, "cpu", 1,
                                         max_queue=args.max_queue)
        try:
            with Client(f"http://127.0.0.1:{port}", token) as c:
                key = c.create_key(alg.name)
            bodies = [json.dumps({"message": base64.b64encode(b"overload %d" % i).decode()}).encode()
                      for i in range(4096)]
            path = f"/v1/keys/{key['id']}/sign"
            print(f"max_queue {args.max_queue}; {args.seconds:g} s per phase", flush=True)
            for phase, connections in phases:
                before = _status_counts(port, "sign")
                result = load_wrk(port, token, path, bodies, connections, args.seconds, workdir)
                after = _status_counts(port, "sign")
                seconds = result["requests"] / result["per_s"]
                per_status = {k: (after.get(k, 0) - before.get(k, 0)) / seconds for k in after}
                print(f"  {phase:<8} {connections:>5} connections: {per_status.get('200', 0):>7,.0f} signatures/s, "
                      f"{per_status.get('429', 0):>7,.0f} 429/s, other {sum(v for k, v in per_status.items() if k not in ('200', '429')):.0f}/s; "
                      f"p50 {result['p50_ms']:.1f} ms, p99 {result['p99_ms']:.1f} ms (all answers)", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return 0


def _thread_seconds(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of ``pid`` (Linux's /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except FileNotFoundError:       # the thread ended meanwhile
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        seconds[int(tid)] = (int(fields[11]) + int(fields[12])) / tick
    return seconds


def _idle_jiffies() -> tuple[int, int]:
    """(idle, total) jiffies of the machine so far (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return values[3] + values[4], sum(values)


def threads(args) -> int:
    with tempfile.TemporaryDirectory(prefix="pqforge-load-") as tmp:
        workdir = Path(tmp)
        proc, port, token = start_server(workdir, args.alg, DEFAULT.max_batch, DEFAULT.max_wait_ms, "cpu", 1,
                                         max_queue=None)
        try:
            http = _requests(port, token, args.alg)
            for round_ in range(1, args.rounds + 1):
                for op, (path, bodies) in http.items():
                    load_wrk(port, token, path, bodies, args.connections, 1.0, workdir)     # settle
                    before, (idle0, total0) = _thread_seconds(proc.pid), _idle_jiffies()
                    result = load_wrk(port, token, path, bodies, args.connections, args.seconds, workdir)
                    after, (idle1, total1) = _thread_seconds(proc.pid), _idle_jiffies()
                    n = max(1, result["requests"])
                    loop = (after.get(proc.pid, 0) - before.get(proc.pid, 0)) / n * 1e6
                    batch = sum(after[t] - before.get(t, 0) for t in after if t != proc.pid) / n * 1e6
                    print(f"round {round_} {op:<8} {result['per_s']:>7,.0f}/s  p50 {result['p50_ms']:5.1f} ms  "
                          f"event loop {loop:5.0f} us/request  batch threads {batch:5.0f} us/request  "
                          f"machine idle {100 * (idle1 - idle0) / max(1, total1 - total0):3.0f}%", flush=True)
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
