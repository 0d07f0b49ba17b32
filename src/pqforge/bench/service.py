"""``pqforge bench-serve``: load-test the service on loopback, next to the library in the same run.

For each (max_batch, max_wait_ms) setting a fresh ``pqforge serve`` process is started on an
ephemeral port with its own SQLite file. The load generator for single-message requests is
``wrk`` when it is installed (one thread, one keep-alive connection per simulated client, a Lua
script cycling through distinct request bodies; it costs far less CPU than Python, which matters
on a small machine), else this process: asyncio, one keep-alive HTTP/1.1 connection per client,
a minimal request writer and response reader. It reports throughput and p50/p99 latency of
single-message sign and verify requests at each concurrency, the many-message requests (4
clients by default, the same generator), the library's own ``sign_many`` / ``verify_many`` rate,
and the CPU seconds used by the load generator and by the server. Four many-message clients keep
a request waiting while others compute; with two, each client's round trip (sending the body,
parsing it, writing the answer) leaves the cores idle for a while, which is latency, not cost.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def cpu_seconds(pid: int | None = None) -> float:
    if pid is None:
        t = os.times()
        return t.user + t.system
    # the server process and its worker processes (--workers)
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:        # a worker that has just exited
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = children.read_text().split() if children.exists() else []
    return own + sum(cpu_seconds(int(kid)) for kid in kids)


def messages_per_second(fn, items: int, min_s: float = 1.0) -> float:
    """Items per second of ``fn`` (which handles ``items``), over at least ``min_s`` seconds."""
    calls, started = 0, time.perf_counter()
    while calls == 0 or time.perf_counter() - started < min_s:
        fn()
        calls += 1
    return calls * items / (time.perf_counter() - started)


class _Connection:
    """One keep-alive HTTP/1.1 connection that sends POSTs and reads Content-Length answers."""

    def __init__(self, port: int, token: str):
        self.port, self.token = port, token

    async def open(self):
        self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        return self

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        self.writer.write(b"POST %s HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer %s\r\n"
                          b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                          % (path.encode(), self.token.encode(), len(body), body))
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))
        return status, await self.reader.readexactly(length)

    def close(self):
        self.writer.close()


async def _load(port: int, token: str, path: str, bodies: list[bytes], concurrency: int, limit_s: float):
    """Send ``bodies`` (at most; stop at ``limit_s``) from ``concurrency`` connections."""
    conns = [await _Connection(port, token).open() for _ in range(concurrency)]
    latencies, errors, next_item = [], 0, 0
    deadline = time.perf_counter() + limit_s

    async def worker(conn):
        nonlocal next_item, errors
        while next_item < len(bodies) and time.perf_counter() < deadline:
            body = bodies[next_item]
            next_item += 1
            started = time.perf_counter()
            status, _ = await conn.post(path, body)
            latencies.append(time.perf_counter() - started)
            errors += status != 200
    started = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - started
    for c in conns:
        c.close()
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000 if latencies else float("nan")
    return {"requests": len(latencies), "errors": errors, "per_s": len(latencies) / elapsed,
            "p50_ms": pick(0.50), "p99_ms": pick(0.99)}


# wrk: requests cycle through the bodies (one JSON document per line of BODIES); done() prints
# the totals, with latency percentiles in microseconds
_WRK_SCRIPT = """
local bodies = {}
for line in io.lines(BODIES) do bodies[#bodies + 1] = line end
local next_body = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. TOKEN
request = function()
  if #bodies == 0 then return wrk.format("GET") end
  next_body = next_body % #bodies + 1
  return wrk.format(nil, nil, nil, bodies[next_body])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %d %d %d %d %d\\n", summary.requests, summary.duration,
    e.status + e.connect + e.read + e.write + e.timeout, latency:percentile(50), latency:percentile(99)))
end
"""


def free_port() -> int:
    """A TCP port on loopback that nothing listens on (at the moment of asking)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_wrk(port: int, token: str, path: str, bodies: list[bytes], concurrency: int, limit_s: float,
              workdir: Path) -> dict:
    """``wrk`` with ``concurrency`` connections for ``limit_s`` seconds (wrk has no request bound);
    GET requests when ``bodies`` is empty."""
    (workdir / "bodies.txt").write_bytes(b"".join(body + b"\n" for body in bodies))
    script = workdir / "post.lua"
    script.write_text(f"local BODIES = {json.dumps(str(workdir / 'bodies.txt'))}\n"
                      f"local TOKEN = {json.dumps(token)}\n" + _WRK_SCRIPT)
    cpu0 = _children_cpu_seconds()
    done = subprocess.run(["wrk", "-t1", f"-c{concurrency}", f"-d{max(1, round(limit_s))}s", "--timeout", "10s",
                           "-s", str(script), f"http://127.0.0.1:{port}{path}"],
                          capture_output=True, text=True, check=True)
    found = re.search(r"RESULT (\d+) (\d+) (\d+) (\d+) (\d+)", done.stdout)
    if found is None:
        raise RuntimeError(f"wrk gave no result:\n{done.stdout}\n{done.stderr}")
    requests, duration_us, errors, p50_us, p99_us = map(int, found.groups())
    return {"requests": requests, "errors": errors, "per_s": requests / (duration_us / 1e6),
            "p50_ms": p50_us / 1000, "p99_ms": p99_us / 1000, "gen_cpu_s": _children_cpu_seconds() - cpu0}


def _load_python(port: int, token: str, path: str, bodies: list[bytes], concurrency: int, limit_s: float,
                 workdir: Path = None) -> dict:
    cpu0 = cpu_seconds()
    result = asyncio.run(_load(port, token, path, bodies, concurrency, limit_s))
    return {**result, "gen_cpu_s": cpu_seconds() - cpu0}


def start_server(workdir: Path, alg: str, max_batch: int, max_wait_ms: float, backend: str, workers: int,
                  max_queue: int | None = 100000):
    """A ``pqforge serve`` process, its port and an admin token; ``max_queue`` None keeps the default."""
    src = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    store = f"sqlite:///{workdir / 'bench.db'}"
    queue = f"max_queue = {max_queue}\n" if max_queue is not None else ""
    (workdir / "bench.toml").write_text(f'[serve]\nwarm_up = ["{alg}"]\n{queue}')
    made = subprocess.run([sys.executable, "-m", "pqforge.cli", "tokens", "create", "--store", store,
                           "--scope", "admin"], capture_output=True, text=True, env=env, check=True)
    token = json.loads(made.stdout)["token"]
    log = open(workdir / "server.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "pqforge.cli", "serve", "--store", store, "--port", "0",
                             "--config", str(workdir / "bench.toml"), "--backend", backend,
                             "--max-batch", str(max_batch), "--max-wait-ms", str(max_wait_ms), "--workers", str(workers),
                             "--log-level", "info"], stdout=log, stderr=subprocess.STDOUT, env=env)
    import httpx
    deadline = time.monotonic() + 600
    port = None
    while True:
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"server did not start:\n{(workdir / 'server.log').read_text()[-2000:]}")
        if port is None:
            found = re.findall(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", (workdir / "server.log").read_text())
            port = int(found[-1]) if found else None
        if port is not None:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
        time.sleep(0.2)
    return proc, port, token


def main(args) -> int:
    from .. import algorithms
    from ..client import Client
    alg = algorithms.get(args.alg)
    concurrencies = args.concurrency
    settings = [(b, w) for b in args.max_batch for w in args.max_wait_ms]
    n = args.requests
    use_wrk = args.load == "wrk" or (args.load == "auto" and shutil.which("wrk") is not None)
    if args.load == "wrk" and shutil.which("wrk") is None:
        raise SystemExit("pqforge bench-serve: --load wrk, but wrk is not installed (apt-get install wrk)")
    load_single = load_wrk if use_wrk else _load_python
    generator = ("wrk, 1 thread, one keep-alive connection per client, time-limited" if use_wrk else
                 "asyncio keep-alive connections in this process")
    messages = [b"bench message %d" % i for i in range(max(n, args.many))]

    print(f"pqforge bench-serve: {alg.name}, backend {args.backend}, {args.workers} server process(es), "
          f"{os.cpu_count()} CPUs, "
          f"at most {n} requests (the Python generator) or {args.seconds:g} s per row; "
          f"single-message load generator: {generator}")
    sk = alg.generate_private_key()
    pk = sk.public_key()
    many = messages[:args.many]
    many_sigs = sk.sign_many(many, backend=args.backend)
    pk.verify_many(many, many_sigs, backend=args.backend)       # key expansions and caches, untimed
    library = {"sign-many": lambda: messages_per_second(lambda: sk.sign_many(many, backend=args.backend), len(many)),
               "verify-many": lambda: messages_per_second(lambda: pk.verify_many(many, many_sigs, backend=args.backend),
                                            len(many))}
    print(f"library sign_many: {library['sign-many']():,.0f}/s   verify_many: {library['verify-many']():,.0f}/s"
          f"   (batches of {len(many)}; measured again around each many-message row)")
    print(f"{'operation':<12} {'max_batch':>9} {'wait_ms':>7} {'clients':>7} {'requests':>8} {'errors':>6} "
          f"{'per_s':>9} {'p50_ms':>7} {'p99_ms':>7} {'gen_cpu_s':>9} {'srv_cpu_s':>9}")

    def row(op, mb, mw, clients, result, srv_cpu):
        print(f"{op:<12} {mb:>9} {mw:>7g} {clients:>7} {result['requests']:>8} {result['errors']:>6} "
              f"{result['per_s']:>9,.0f} {result['p50_ms']:>7.1f} {result['p99_ms']:>7.1f} "
              f"{result['gen_cpu_s']:>9.2f} {srv_cpu:>9.2f}", flush=True)

    for max_batch, max_wait in settings:
        with tempfile.TemporaryDirectory(prefix="pqforge-bench-") as tmp:
            proc, port, token = start_server(Path(tmp), alg.name, max_batch, max_wait, args.backend,
                                               args.workers)
            try:
                with Client(f"http://127.0.0.1:{port}", token) as c:
                    key = c.create_key(alg.name)
                    key_sigs = c.sign_many(key["id"], messages[:n])
                b64 = lambda b: base64.b64encode(b).decode()
                sign_bodies = [json.dumps({"message": b64(m)}).encode() for m in messages[:n]]
                verify_bodies = [json.dumps({"key_id": key["id"], "message": b64(m), "signature": b64(s)}).encode()
                                 for m, s in zip(messages[:n], key_sigs)]
                jobs = [("sign", f"/v1/keys/{key['id']}/sign", sign_bodies),
                        ("verify", "/v1/verify", verify_bodies)]
                for op, path, bodies in jobs:
                    for clients in concurrencies:
                        srv0 = cpu_seconds(proc.pid)
                        result = load_single(port, token, path, bodies, clients, args.seconds, Path(tmp))
                        row(op, max_batch, max_wait, clients, result, cpu_seconds(proc.pid) - srv0)
                count = max(2, n // 8)      # a bound the time limit ends first (the Python generator)
                many_jobs = [("sign-many", f"/v1/keys/{key['id']}/sign-many",
                              json.dumps({"messages": [b64(m) for m in many]}).encode()),
                             ("verify-many", "/v1/verify-many",
                              json.dumps({"key_id": key["id"], "messages": [b64(m) for m in many],
                                          "signatures": [b64(s) for s in key_sigs[:len(many)]]}).encode())]
                for op, path, body in many_jobs:
                    before = library[op]()          # the library just before and just after: same load
                    srv0 = cpu_seconds(proc.pid)
                    result = load_single(port, token, path, [body] * (1 if use_wrk else count), args.many_clients,
                                         args.seconds, Path(tmp))
                    result = {**result, "per_s": result["per_s"] * len(many)}
                    row(op, max_batch, max_wait, args.many_clients, result, cpu_seconds(proc.pid) - srv0)
                    lib = (before + library[op]()) / 2
                    print(f"  {op}: {result['per_s']:,.0f} messages/s = {100 * result['per_s'] / lib:.0f}% of the "
                          f"library's {lib:,.0f}/s measured around it ({len(many)} messages per request)")
            finally:
                proc.terminate()
                proc.wait(timeout=60)
    return 0
