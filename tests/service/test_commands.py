"""``pqforge serve`` and ``pqforge tokens`` as commands: options and stores checked before anything
is created, private store files, a clean exit on SIGTERM, compile helpers owned (reaped as they
end, none left when the server stops or is killed), JSON log lines only."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import re
import signal
import sqlite3
import stat
import sys
import time
from pathlib import Path

import pytest

from pqforge.service.store import open_store

from .conftest import Server, bearer, cli, descendants, httpx, proc_stat, running, wait_until


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _one_line_error(done, code=2) -> str:
    assert done.returncode == code, (done.args, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "error" in done.stderr, done.stderr
    return done.stderr


def test_store_files_are_created_private(tmp_path):
    db = tmp_path / "pqforge.db"
    umask = os.umask(0o022)        # the usual umask, which would give 0644
    store = open_store(f"sqlite:///{db}")
    try:
        store.add_token("0123456789abcdef", "0" * 64, None, ["admin"])    # written in WAL mode
        names = sorted(p.name for p in tmp_path.iterdir())
        assert names == ["pqforge.db", "pqforge.db-shm", "pqforge.db-wal"]
        assert {name: _mode(tmp_path / name) for name in names} == dict.fromkeys(names, 0o600)
        assert store.exposed_mode() is None
    finally:
        store.close()
        os.umask(umask)


def test_an_existing_store_readable_by_others_gets_a_warning(tmp_path):
    db = tmp_path / "pqforge.db"
    sqlite3.connect(db).close()
    os.chmod(db, 0o644)
    srv = Server(tmp_path)
    srv.start(ready=False)
    try:
        warnings = [line for line in srv.log().splitlines() if "0644" in line]
        assert len(warnings) == 1 and "WARNING" in warnings[0] and str(db) in warnings[0], srv.log()
        assert "chmod 600" in warnings[0]
    finally:
        srv.stop()


def test_invalid_options_are_one_line_errors_before_anything_starts(tmp_path):
    config = tmp_path / "bad.toml"
    config.write_text("[serve]\nport = 99999\n")
    cases = [("--port", "99999"), ("--port", "-1"), ("--port", "http"), ("--max-batch", "0"),
             ("--max-batch", "-5"), ("--max-wait-ms", "-1"), ("--max-wait-ms", "nan"), ("--workers", "0"),
             ("--drain-timeout", "-1"), ("--config", str(config)), ("--store", "mysql://x"),
             ("--store", "sqlite:///"), ("--store", f"sqlite:///{tmp_path / 'no-such-dir' / 'x.db'}"),
             ("--ssl-certfile", str(tmp_path / "no-such.pem"))]
    for args in cases:
        _one_line_error(cli("serve", *args, cwd=tmp_path))     # one line: no serving banner before it
    for args in (("--concurrency", "1,0"), ("--max-batch", "x"), ("--many", "0"), ("--many-clients", "0"),
                 ("--seconds", "-1")):
        _one_line_error(cli("bench-serve", *args, cwd=tmp_path))
    assert list(tmp_path.iterdir()) == [config]     # no master key, no database


def test_a_number_outside_its_range_is_refused_naming_option_range_and_value(tmp_path):
    for option, value, bounds in (("--max-batch", "99999999999999999999", "from 1 to 65536"),
                                  ("--max-wait-ms", "1e400", "from 0 to 60000"),
                                  ("--workers", "100000", "from 1 to 256"),
                                  ("--drain-timeout", "86401", "from 0 to 3600"),
                                  ("--port", "65536", "from 0 to 65535")):
        err = _one_line_error(cli("serve", option, value, cwd=tmp_path))
        assert f"argument {option}: expected" in err and bounds in err and repr(value) in err, err
    assert list(tmp_path.iterdir()) == []


def test_every_numeric_setting_has_a_range():
    import pytest
    from pqforge.errors import InvalidInput
    from pqforge.service.config import RANGES, Settings
    for name in ("max_batch", "max_wait_ms", "max_queue", "max_messages", "max_body_bytes", "compute_threads",
                 "workers", "cache_ttl_s", "port"):
        low, high = RANGES[name]
        assert getattr(Settings(**{name: low}), name) == low and getattr(Settings(**{name: high}), name) == high
        for bad in (low - 1, high + 1, 10 ** 20):
            with pytest.raises(InvalidInput, match=rf"^{name}: expected .*from {low} to {high}.*, got {bad}$"):
                Settings(**{name: bad})
    with pytest.raises(InvalidInput, match="max_wait_ms: expected a number"):
        Settings(max_wait_ms=float("nan"))


def test_a_port_in_use_is_one_line_before_anything_starts(tmp_path):
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        err = _one_line_error(cli("serve", "--port", str(port), cwd=tmp_path))
    assert f"cannot listen on 127.0.0.1:{port}: the port is in use" in err, err
    assert list(tmp_path.iterdir()) == []       # no master key, no database


def test_a_port_not_allowed_is_one_line(tmp_path, monkeypatch, capsys):
    # as when an unprivileged user asks for port 80 (the tests may run as root, where it is allowed)
    import errno
    import socket
    from pqforge.cli import main

    def refuse(self, address):
        raise PermissionError(errno.EACCES, "Permission denied")
    monkeypatch.setattr(socket.socket, "bind", refuse)
    monkeypatch.setenv("PQFORGE_MALLOC_TUNING", "0")        # leave this process's allocator alone
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--port", "80"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot listen on 127.0.0.1:80: permission denied" in err, err
    assert list(tmp_path.iterdir()) == []


def _certificate(path: Path, key):
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
            .sign(key, hashes.SHA256()))
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _private_key(path: Path):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    key = ec.generate_private_key(ec.SECP256R1())
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return key


def test_tls_files_that_do_not_load_are_one_line_before_anything_starts(tmp_path):
    files = tmp_path / "tls"
    files.mkdir()
    _certificate(files / "cert.pem", _private_key(files / "key.pem"))
    _private_key(files / "other-key.pem")
    (files / "junk.pem").write_text("not a certificate\n")
    work = tmp_path / "work"
    work.mkdir()
    cert, key = str(files / "cert.pem"), str(files / "key.pem")
    for args, says in ((("--ssl-certfile", str(files / "none.pem"), "--ssl-keyfile", key), "no file"),
                       (("--ssl-certfile", cert, "--ssl-keyfile", str(files / "none.pem")), "no file"),
                       (("--ssl-certfile", str(files / "junk.pem"), "--ssl-keyfile", key), "expected a PEM"),
                       (("--ssl-certfile", cert, "--ssl-keyfile", str(files / "junk.pem")), "expected a PEM"),
                       (("--ssl-certfile", cert, "--ssl-keyfile", str(files / "other-key.pem")), "expected a PEM"),
                       (("--ssl-keyfile", key), "needs --ssl-certfile")):
        err = _one_line_error(cli("serve", "--port", "0", *args, cwd=work))
        assert says in err, (args, err)
    assert list(work.iterdir()) == []


def test_an_unreachable_postgresql_store_is_one_line_before_anything_starts(tmp_path):
    import pytest
    pytest.importorskip("psycopg")
    err = _one_line_error(cli("serve", "--port", "0", "--store", "postgresql://pqforge:hunter2@127.0.0.1:1/pqforge",
                              cwd=tmp_path))          # port 1: nothing listens there
    assert "store postgresql://pqforge:***@127.0.0.1:1/pqforge is unreachable" in err and "hunter2" not in err, err
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_store_scheme_creates_nothing(tmp_path):
    done = cli("serve", "--store", "mysql://x", "--port", "0", cwd=tmp_path)
    assert "sqlite:///PATH or postgresql://" in _one_line_error(done)
    assert list(tmp_path.iterdir()) == []


def test_tokens_commands_do_not_create_a_store(tmp_path):
    store = f"sqlite:///{tmp_path / 'pqforge.db'}"
    for args in (("revoke", "nope"), ("list",)):
        assert "no store at" in _one_line_error(cli("tokens", *args, cwd=tmp_path))             # ./pqforge.db
        assert "no store at" in _one_line_error(cli("tokens", *args, "--store", store, cwd=tmp_path))
    assert list(tmp_path.iterdir()) == []
    # tokens create makes the store: the first admin token comes before the service's first start
    assert cli("tokens", "create", "--store", store, "--scope", "admin", cwd=tmp_path).returncode == 0
    assert _mode(tmp_path / "pqforge.db") == 0o600
    assert "no active token 'nope'" in _one_line_error(cli("tokens", "revoke", "nope", "--store", store))


def test_sigterm_after_a_clean_drain_exits_0(tmp_path):
    srv = Server(tmp_path)
    srv.start(ready=False)
    try:
        deadline = time.monotonic() + 60
        while httpx.get(srv.url + "/healthz").status_code != 200:
            assert time.monotonic() < deadline, srv.log()
            time.sleep(0.1)
        assert srv.kill(signal.SIGTERM) == 0, srv.log()
        assert "Application shutdown complete" in srv.log()
    finally:
        srv.stop()


def test_a_compile_helper_that_ended_is_reaped_while_the_server_runs(tmp_path, monkeypatch):
    from pqforge.jit import cache, units
    from pqforge.service import Settings, app as service_app
    monkeypatch.setattr(units, "_WORKER", "pass")                  # a helper that ends at once
    monkeypatch.setattr(units, "_owning", False)                   # (the lifespan sets these two
    monkeypatch.setattr(cache, "NOTICE_LOG", None)                 # and restores them at its end)
    monkeypatch.setattr(service_app, "_warm", lambda service: service.warmed.set())
    monkeypatch.setenv("PQFORGE_MASTER_KEY", base64.b64encode(os.urandom(32)).decode())
    monkeypatch.setenv("PQFORGE_MALLOC_TUNING", "0")                # leave this process's allocator alone
    app = service_app.create_app(Settings(store=f"sqlite:///{tmp_path / 'pqforge.db'}", warm_up=[]))

    async def serve_while_a_helper_ends():
        async with app.router.lifespan_context(app):
            before = set(units._helpers)
            units._start_helper([])            # as a first use's prefetch starts one
            pid, = set(units._helpers) - before
            deadline = time.monotonic() + 60
            while proc_stat(pid) is not None:       # it ends at once; nothing polls it, yet it is reaped
                assert time.monotonic() < deadline, f"helper {pid} not reaped: {proc_stat(pid)}"
                await asyncio.sleep(0.05)
    try:
        asyncio.run(serve_while_a_helper_ends())
    finally:
        units.stop_helpers()


def test_readiness_does_not_wait_for_a_busy_store(tmp_path, monkeypatch):
    import threading
    from pqforge.service import Settings
    from pqforge.service.core import Service
    monkeypatch.setenv("PQFORGE_MASTER_KEY", base64.b64encode(os.urandom(32)).decode())
    service = Service(Settings(store=f"sqlite:///{tmp_path / 'pqforge.db'}", warm_up=[]))
    free = threading.Event()
    ping = service.store.ping
    monkeypatch.setattr(service.store, "ping", lambda: free.wait(600) and ping())   # a store held up

    async def ask() -> list:
        first = await service.store_reachable()        # no ping has ended: not known to answer
        free.set()
        while not await service.store_reachable():      # the held-up ping ends, then says so
            await asyncio.sleep(0.05)
        return [first, True]
    try:
        assert asyncio.run(ask()) == [False, True]
    finally:
        free.set()
        service.executor.shutdown()
        service.store.close()


def _helper_pids(srv: Server) -> list[int]:
    """The pids of the compile helpers the server's log names."""
    return [int(pid) for pid in re.findall(r"paths of [^(]*\(pid (\d+)\)", srv.log())]


def _json_lines_only(log: str) -> None:
    """Every line after the banner is one JSON object (the log of ``pqforge serve``)."""
    banner, *lines = log.splitlines()
    assert banner.startswith("pqforge serve: "), banner
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            raise AssertionError(f"not a JSON line: {line!r}\n{log}") from None
        assert isinstance(entry, dict) and "message" in entry, line


def test_helpers_are_reaped_as_they_end_and_none_is_left_after_the_server_stops(tmp_path):
    srv = Server(tmp_path, settings={"compile_rest": True})
    srv.start()        # ready: the served paths were compiled by a helper that has ended since
    try:
        served, rest = _helper_pids(srv)
        # while the server runs, a helper that has ended is either reaped (gone) or a zombie
        wait_until(lambda: proc_stat(served) is None, 60, f"the served-path helper {served} is not reaped")
        wait_until(lambda: not httpx.get(srv.url + "/readyz", timeout=60).json()["compiling"], 600,
                   "the background compile did not end")
        wait_until(lambda: proc_stat(rest) is None, 60, f"the background compile {rest} is not reaped")
        wait_until(lambda: not descendants(srv.proc.pid), 120, "processes left below the server")
        assert srv.kill(signal.SIGTERM) == 0, srv.log()
        _json_lines_only(srv.log())
    finally:
        srv.stop()


def _empty_cache(tmp_path) -> dict:
    """The environment of a server that must compile: an empty cache, no machine code built ahead."""
    return {"NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PQFORGE_PREBUILT": "none"}


def _cold(srv: Server) -> tuple[dict, set]:
    """Start ``srv`` on an empty cache and return, while its served paths compile in a helper:
    /readyz's answer then, and the processes below the server."""
    srv.start(ready=False)
    wait_until(lambda: descendants(srv.proc.pid), 120, "no compile helper started")
    wait_until(lambda: "Z" not in descendants(srv.proc.pid).values(), 60, "a zombie below the starting server")
    ready = httpx.get(srv.url + "/readyz", timeout=60)      # answers while the helper compiles
    assert httpx.get(srv.url + "/healthz", timeout=60).status_code == 200
    return ready, set(descendants(srv.proc.pid))


def test_sigterm_during_a_cold_start_ends_every_helper(tmp_path):
    srv = Server(tmp_path, settings={"compile_rest": True}, env=_empty_cache(tmp_path))
    try:
        ready, helpers = _cold(srv)
        assert ready.status_code == 503 and ready.json()["warmed_up"] is False, ready.text
        assert srv.kill(signal.SIGTERM) == 0, srv.log()
        wait_until(lambda: not any(running(pid) for pid in helpers), 60,
                   f"helpers {[p for p in helpers if running(p)]} outlived the server")
        _json_lines_only(srv.log())
    finally:
        srv.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's")
def test_a_killed_server_takes_its_helpers_with_it(tmp_path):
    srv = Server(tmp_path, env=_empty_cache(tmp_path))
    try:
        _, helpers = _cold(srv)
        srv.kill(signal.SIGKILL)            # no shutdown: the helpers must notice by themselves
        wait_until(lambda: not any(running(pid) for pid in helpers), 60,
                   f"helpers {[p for p in helpers if running(p)]} outlived the killed server")
    finally:
        srv.stop()


def test_compile_notices_are_json_log_lines(tmp_path):
    # nothing warmed up and an empty cache: creating a key compiles key generation in the server
    srv = Server(tmp_path, settings={"warm_up": []}, env=_empty_cache(tmp_path))
    srv.admin = srv.token("admin")
    srv.start()
    try:
        made = httpx.post(srv.url + "/v1/keys", json={"alg": "MAYO-2"}, headers=bearer(srv.admin), timeout=600)
        assert made.status_code == 201, made.text
        assert srv.kill(signal.SIGTERM) == 0, srv.log()
        _json_lines_only(srv.log())
        messages = [json.loads(line)["message"] for line in srv.log().splitlines()[1:]]
        assert any(m.startswith("compiling MAYO-2 keygen kernels") for m in messages), srv.log()
    finally:
        srv.stop()
