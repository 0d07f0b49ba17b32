"""The service on Ray Serve: the same FastAPI app in every replica, single-message requests
batched by Ray Serve's own ``@serve.batch`` (instead of this package's batcher), replicas sharing
one store (PostgreSQL across nodes) and one master key.

    pqforge serve --ray --store postgresql://... [--port 8000]          # a local Ray, or RAY_ADDRESS
    serve run pqforge.service.ray_app:build store=postgresql://... replicas=4

Every replica must reach the store and read the same master key: set PQFORGE_MASTER_KEY on
every node (``ray start`` passes the environment to its workers), or give a master key file
that exists on every node. Needs the ``ray`` extra.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os

from ray import serve

from .config import Settings


def _group_and_run(calls):
    """calls: (queue key, payload, run) from many requests. Runs one batch per queue key (one
    key and operation) and returns the results in the calls' order."""
    groups: dict = {}
    for i, (queue_key, payload, run) in enumerate(calls):
        groups.setdefault(queue_key, (run, []))[1].append((i, payload))
    results = [None] * len(calls)
    for run, members in groups.values():
        for (i, _), result in zip(members, run([p for _, p in members]), strict=True):
            results[i] = result
    return results


def _absolute(settings: Settings) -> Settings:
    """Replicas run in other working directories: make file paths absolute."""
    store = settings.store
    if store.startswith("sqlite:///"):
        store = "sqlite:///" + os.path.abspath(store[len("sqlite:///"):])
    return dataclasses.replace(settings, store=store, master_key_file=str(settings.master_key_path()))


def deployment(settings: Settings, replicas: int = 2):
    """A bound Ray Serve application running the service with ``settings`` in ``replicas`` replicas."""
    settings = _absolute(settings)
    wait_s = settings.max_wait_ms / 1000.0

    @serve.deployment(num_replicas=replicas, max_ongoing_requests=max(100, settings.max_batch * 2))
    @serve.ingress()
    class PqforgeService:
        def __init__(self, values: dict):
            self.settings = Settings(**values)

        def __serve_build_asgi_app__(self):
            from .app import create_app

            def submit(queue_key, payload, run):
                return asyncio.ensure_future(self.batch((queue_key, payload, run)))
            app = create_app(self.settings, submit)
            self.executor = app.state.service.executor
            self.metrics = app.state.service.metrics
            return app

        @serve.batch(max_batch_size=settings.max_batch, batch_wait_timeout_s=wait_s)
        async def batch(self, calls):
            for operation in {queue_key[0] for queue_key, _, _ in calls}:
                self.metrics.observe_batch(operation, sum(c[0][0] == operation for c in calls), 0)
            return await asyncio.get_running_loop().run_in_executor(self.executor, _group_and_run, calls)

    return PqforgeService.bind(dataclasses.asdict(settings))


def build(args: dict):
    """Application builder for ``serve run pqforge.service.ray_app:build key=value ...``: any
    setting name (store, max_batch, max_wait_ms, public_verify, ...) plus ``replicas``."""
    args = dict(args)
    replicas = int(args.pop("replicas", 2))
    config = args.pop("config", None)
    fields = {f.name: f.type for f in dataclasses.fields(Settings)}
    for name, value in list(args.items()):
        kind = str(fields.get(name, "str"))
        if isinstance(value, str) and kind in ("int", "int | None"):
            args[name] = int(value)
        elif isinstance(value, str) and kind == "float":
            args[name] = float(value)
        elif isinstance(value, str) and kind == "bool":
            args[name] = value.lower() in ("1", "true", "yes")
    return deployment(Settings.load(config, **args), replicas)


def run(settings: Settings, replicas: int | None = None) -> int:
    """``pqforge serve --ray``: start (or join, with RAY_ADDRESS) Ray, deploy, and serve until stopped."""
    import ray

    from .sealing import load_master_key
    _, where = load_master_key(settings.master_key_path())   # created here once, not by racing replicas
    print(f"pqforge serve --ray: master key: {where}; store: {settings.store.split('@')[-1]}", flush=True)
    ray.init(address=os.environ.get("RAY_ADDRESS"))
    serve.start(http_options={"host": settings.host, "port": settings.port})
    serve.run(deployment(settings, replicas or int(os.environ.get("PQFORGE_REPLICAS", "2"))),
              name="pqforge", route_prefix="/", blocking=True)
    return 0
