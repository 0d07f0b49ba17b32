"""The service on Ray Serve: a local Ray instance, two replicas sharing one PostgreSQL store,
requests batched by @serve.batch. Skipped, with the reason, when Ray is not installed or cannot
start, or when PostgreSQL cannot."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import time

import pytest

ray = pytest.importorskip("ray", reason="Ray Serve tests need the ray extra: pip install 'pqforge[ray]'")
serve = pytest.importorskip("ray.serve", reason="Ray Serve tests need the ray extra: pip install 'pqforge[ray]'")

from pqforge.client import AsyncClient, Client  # noqa: E402
from pqforge.mayo import MAYO2  # noqa: E402
from pqforge.service import Settings, tokens  # noqa: E402
from pqforge.service.store import open_store  # noqa: E402

from .conftest import httpx  # noqa: E402
from .test_postgres import Postgres, _free_port  # noqa: E402


@pytest.fixture(scope="module")
def ray_service(tmp_path_factory):
    pg = Postgres()
    master = base64.b64encode(os.urandom(32)).decode()
    # Ray's processes inherit these from this driver. Ray Serve gives its HTTP proxy 5 s to report
    # ready (and 10 s per health check) before it kills and restarts it, which a busy machine
    # exceeded: serve.start then failed with ActorDiedError. A minute each is ample.
    env = {"PQFORGE_MASTER_KEY": master, "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "60",
           "RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S": "60"}
    os.environ.update(env)
    port = _free_port()
    try:
        try:
            ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": env})
        except Exception as exc:   # no usable Ray on this machine
            pytest.skip(f"Ray did not start: {type(exc).__name__}: {exc}")
        from pqforge.service.ray_app import deployment
        settings = Settings(store=pg.dsn, max_batch=32, max_wait_ms=20.0, warm_up=["MAYO-2"])
        _, admin = tokens.create(open_store(pg.dsn), ["admin"])
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        serve.run(deployment(settings, replicas=2), name="pqforge", route_prefix="/")
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 300
        while True:
            try:
                if httpx.get(url + "/readyz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the Ray Serve replicas did not become ready"
            time.sleep(0.5)
        yield url, admin, pg
    finally:
        if ray.is_initialized():
            serve.shutdown()
            ray.shutdown()
        for name in env:
            os.environ.pop(name, None)
        pg.remove()


def test_replicas_share_the_store_and_batch(ray_service):
    url, admin, pg = ray_service
    with Client(url, admin) as c:
        key = c.create_key("MAYO-2")
    messages = [b"ray message %d" % i for i in range(48)]

    async def concurrent():
        async with AsyncClient(url, admin) as c:
            return await asyncio.gather(*(c.sign(key["id"], m) for m in messages))
    signatures = asyncio.run(concurrent())
    pk = MAYO2.public_key_from_bytes(key["public_key"])
    assert list(pk.verify_many(messages, signatures)) == [True] * len(messages)
    assert not any(pk.verify_many(messages[1:] + messages[:1], signatures))
    # Ray Serve's batching combined concurrent requests (on at least the replica that answers here)
    batched = False
    for _ in range(6):
        text = httpx.get(url + "/metrics").text
        count = re.search(r'pqforge_batch_size_count\{operation="sign"\} (\S+)', text)
        total = re.search(r'pqforge_batch_size_sum\{operation="sign"\} (\S+)', text)
        batched |= bool(count and total and float(total.group(1)) > float(count.group(1)))
    assert batched
    import psycopg
    with psycopg.connect(pg.dsn) as conn:
        assert conn.execute("SELECT COUNT(*) FROM audit WHERE key_id = %s", (key["id"],)).fetchone() == (48,)
