"""Service tests: a real server process on an ephemeral loopback port, a real SQLite file (or a
real PostgreSQL server), real HTTP. Skipped as a whole when the serve extra is not installed."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the service needs the serve extra: pip install 'pqforge[serve]'")
httpx = pytest.importorskip("httpx", reason="the service needs the serve extra: pip install 'pqforge[serve]'")

SRC = str(Path(__file__).resolve().parents[2] / "src")


def cli(*args, env=None, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pqforge.cli", *args], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": SRC, **(env or {})}, timeout=120, cwd=cwd)


class Server:
    """``pqforge serve`` in a child process; stdout and stderr captured into ``log_path``."""

    def __init__(self, workdir: Path, store: str | None = None, settings: dict | None = None, env=None):
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.store = store or f"sqlite:///{self.workdir / 'pqforge.db'}"
        self.env = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
        # compile_rest off: the suite's cache is shared, and a background compile per server would
        # only load it again (test_api covers compile_rest itself)
        config = {"warm_up": ["MAYO-2"], "max_wait_ms": 2.0, "compile_rest": False, **(settings or {})}
        self.config = self.workdir / "pqforge.toml"
        self.config.write_text("[serve]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in config.items()))
        self.log_path = self.workdir / "server.log"
        self.proc = None
        self.url = None

    def token(self, *scopes: str) -> str:
        done = cli("tokens", "create", "--store", self.store, *[a for s in scopes for a in ("--scope", s)],
                   env=self.env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)["token"]

    def start(self, ready: bool = True, timeout: float = 120.0) -> "Server":
        log = open(self.log_path, "a")
        log_start = len(self.log())
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pqforge.cli", "serve", "--store", self.store, "--port", "0",
             "--config", str(self.config), "--access-log", "--log-level", "debug"],
            stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.workdir)
        deadline = time.monotonic() + timeout
        while self.url is None or (ready and not self._ready()):
            if self.proc.poll() is not None:
                raise AssertionError(f"server exited with {self.proc.returncode}:\n{self.log()}")
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"server not ready in {timeout} s:\n{self.log()}")
            if self.url is None:
                found = re.findall(r"Uvicorn running on (https?)://127\.0\.0\.1:(\d+)", self.log()[log_start:])
                if found:
                    self.url = f"{found[-1][0]}://127.0.0.1:{found[-1][1]}"
            time.sleep(0.1)
        return self

    def _ready(self) -> bool:
        try:
            return httpx.get(self.url + "/readyz", timeout=2, verify=False).status_code == 200
        except httpx.HTTPError:
            return False

    def log(self) -> str:
        return self.log_path.read_text() if self.log_path.exists() else ""

    def kill(self, sig=signal.SIGKILL) -> int:
        self.proc.send_signal(sig)
        code = self.proc.wait(timeout=60)
        self.url = None
        return code

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.kill(signal.SIGTERM)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A running server shared by the tests of one module, with an admin token."""
    srv = Server(tmp_path_factory.mktemp("server"), settings={"max_body_bytes": 1 << 20, "max_messages": 64})
    srv.admin = srv.token("admin")
    srv.start()
    yield srv
    srv.stop()


def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent pid) of the process ``pid`` from /proc, or None when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return fields[0], int(fields[1])


def descendants(pid: int) -> dict[int, str]:
    """The processes below ``pid`` (children, their children, ...), with their state letters
    (``Z``: a zombie, ended but not reaped by its parent)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            found = proc_stat(int(entry.name))
            if found is not None:
                parents[int(entry.name)] = found
    below, todo = {}, [pid]
    while todo:
        parent = todo.pop()
        for child, (state, ppid) in parents.items():
            if ppid == parent and child not in below:
                below[child] = state
                todo.append(child)
    return below


def running(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie has ended: it runs no more, whoever reaps it)."""
    found = proc_stat(pid)
    return found is not None and found[0] != "Z"


def wait_until(condition, timeout: float, what: str) -> None:
    """Wait for ``condition()`` to hold, up to ``timeout`` seconds (generous: a busy machine is
    slow, never wrong), else fail saying ``what`` did not happen."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} (waited {timeout} s)"
        time.sleep(0.1)


def bearer(token: str | None) -> dict:
    return {"Authorization": f"Bearer {token}"} if token else {}
