"""The same service on a real PostgreSQL server started here (initdb + pg_ctl on a loopback port,
as an unprivileged user); skipped, with the reason, when PostgreSQL cannot be started."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time

import pytest

pytest.importorskip("psycopg", reason="PostgreSQL stores need psycopg 3 (the serve extra)")

from pqforge.client import Client, ServiceError  # noqa: E402
from pqforge.mayo import MAYO2  # noqa: E402

from .conftest import Server, httpx, wait_until  # noqa: E402


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    def __init__(self):
        # Debian keeps the server tools off PATH, in /usr/lib/postgresql/<version>/bin
        initdb = shutil.which("initdb") or (sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [None])[-1]
        if initdb is None:
            pytest.skip("PostgreSQL is not installed (initdb not found; Debian package 'postgresql')")
        self.bin = os.path.dirname(initdb)
        self.dir = tempfile.mkdtemp(prefix="pqforge-pg-")
        self.prefix = []
        if os.geteuid() == 0:        # the server refuses to run as root
            user = pwd.getpwnam("nobody")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
            self.prefix = ["runuser", "-u", "nobody", "--"]
        self.port = _free_port()
        self.data = os.path.join(self.dir, "data")
        self.dsn = f"postgresql://pqforge@127.0.0.1:{self.port}/postgres"
        done = self._run("initdb", "-D", self.data, "-A", "trust", "-U", "pqforge", "--no-sync")
        if done.returncode != 0:
            self._give_up(f"initdb failed: {done.stderr.strip()[-300:]}")
        self.start()

    def _run(self, tool, *args):
        try:
            return subprocess.run([*self.prefix, os.path.join(self.bin, tool), *args], capture_output=True,
                                   text=True, timeout=120)
        except OSError as exc:
            self._give_up(f"cannot run {tool}: {exc}")

    def start(self):
        done = self._run("pg_ctl", "-D", self.data, "-l", os.path.join(self.dir, "log"), "-w", "-o",
                         f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off", "start")
        if done.returncode != 0:
            self._give_up(f"PostgreSQL did not start: {done.stderr.strip()[-300:]}")

    def _give_up(self, reason: str):
        shutil.rmtree(self.dir, ignore_errors=True)
        pytest.skip(reason)

    def stop(self):
        self._run("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres():
    pg = Postgres()
    yield pg
    pg.remove()


@pytest.fixture(scope="module")
def pg_server(postgres, tmp_path_factory):
    srv = Server(tmp_path_factory.mktemp("pg-server"), store=postgres.dsn)
    srv.admin = srv.token("admin")
    srv.start()
    yield srv
    srv.stop()


def test_keys_signatures_and_kem_on_postgres(pg_server):
    with Client(pg_server.url, pg_server.admin) as c:
        key = c.create_key("MAYO-2")
        kem = c.create_key("Classic-McEliece-348864")
        messages = [b"a", b"b", b"c"]
        signatures = c.sign_many(key["id"], messages) + [c.sign(key["id"], b"d")]
        pk = MAYO2.public_key_from_bytes(key["public_key"])
        assert list(pk.verify_many(messages + [b"d"], signatures)) == [True] * 4
        ciphertext, shared = c.encapsulate(kem["id"])
        assert c.decapsulate(kem["id"], ciphertext) == shared
        assert {k["id"] for k in c.list_keys(limit=1000)["keys"]} >= {key["id"], kem["id"]}
        c.destroy_key(kem["id"])
    import psycopg
    with psycopg.connect(pg_server.store) as conn:
        assert conn.execute("SELECT COUNT(*) FROM audit WHERE key_id = %s", (key["id"],)).fetchone() == (4,)
        assert conn.execute("SELECT sealed_secret FROM keys WHERE id = %s", (kem["id"],)).fetchone() == (None,)


def test_database_down_gives_503_then_recovers(pg_server, postgres):
    with Client(pg_server.url, pg_server.admin) as c:
        key = c.create_key("MAYO-2")
        postgres.stop()
        try:
            with pytest.raises(ServiceError) as err:
                c.create_key("MAYO-2")
            assert err.value.status == 503 and err.value.retry_after == "1"
            with pytest.raises(ServiceError) as err:      # no signature without its audit row
                c.sign(key["id"], b"while down")
            assert err.value.status == 503
            wait_until(lambda: httpx.get(pg_server.url + "/readyz", timeout=60).json()["store"] is False, 30,
                       "/readyz does not report the store down")
        finally:
            postgres.start()
        deadline = time.monotonic() + 30
        while httpx.get(pg_server.url + "/readyz").status_code != 200:
            assert time.monotonic() < deadline, "the service did not recover"
            time.sleep(0.2)
        signature = c.sign(key["id"], b"back")
    MAYO2.public_key_from_bytes(key["public_key"]).verify(signature, b"back")
