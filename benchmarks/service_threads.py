"""Where a single request's server time goes: the CPU time per request of the event-loop thread
and of the batch threads, under wrk, and the whole machine's idle share meanwhile.

    python benchmarks/service_threads.py [--seconds 6] [--connections 64] [--rounds 2] [OPERATION ...]

OPERATION: healthz, sign, verify (default all three). Starts one ``pqforge serve`` with its
default settings on an ephemeral loopback port (a fresh SQLite store, one MAYO-2 key), as
``service_load.py`` does, and reads each thread's CPU time from /proc before and after each wrk
run (Linux only). The event loop is the process's first thread; every other thread (the batch
executor, the chunk workers of the batch calls, the store's) counts as "batch threads".
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pqforge.bench.service import load_wrk, start_server
from pqforge.client import Client


def thread_seconds(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each thread of ``pid``."""
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


def idle_share() -> tuple[float, float]:
    """(idle, total) jiffies of the machine so far (/proc/stat)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return values[3] + values[4], sum(values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("operations", nargs="*", default=["healthz", "sign", "verify"])
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if shutil.which("wrk") is None or not Path("/proc/self/task").is_dir():
        raise SystemExit("service_threads: needs wrk and Linux's /proc")
    with tempfile.TemporaryDirectory(prefix="pqforge-threads-") as tmp:
        workdir = Path(tmp)
        proc, port, token = start_server(workdir, "MAYO-2", 256, 2.0, "cpu", 1, max_queue=None)
        try:
            with Client(f"http://127.0.0.1:{port}", token) as c:
                key = c.create_key("MAYO-2")
                messages = [b"wrk message %d" % i for i in range(4096)]
                signatures = c.sign_many(key["id"], messages)
            b64 = lambda b: base64.b64encode(b).decode()
            http = {"healthz": ("/healthz", []),
                    "sign": (f"/v1/keys/{key['id']}/sign", [json.dumps({"message": b64(m)}).encode() for m in messages]),
                    "verify": ("/v1/verify", [json.dumps({"key_id": key["id"], "message": b64(m),
                                                          "signature": b64(s)}).encode()
                                              for m, s in zip(messages, signatures)])}
            for round_ in range(1, args.rounds + 1):
                for op in args.operations:
                    path, bodies = http[op]
                    load_wrk(port, token, path, bodies, args.connections, 1.0, workdir)     # settle
                    before, (idle0, total0) = thread_seconds(proc.pid), idle_share()
                    result = load_wrk(port, token, path, bodies, args.connections, args.seconds, workdir)
                    after, (idle1, total1) = thread_seconds(proc.pid), idle_share()
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
