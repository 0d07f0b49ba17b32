"""Prometheus metrics, in a registry of their own per app (several apps can live in one process)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

_LATENCY_BUCKETS = (.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2, 5, 10)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096)


class Metrics:
    content_type = CONTENT_TYPE_LATEST

    def __init__(self, backend: str):
        self.backend = backend
        self.registry = r = CollectorRegistry()
        self.requests = Counter("pqforge_requests", "HTTP requests by operation and status", ["operation", "status"],
                                registry=r)
        self.latency = Histogram("pqforge_request_seconds", "request latency by operation and backend",
                                 ["operation", "backend"], buckets=_LATENCY_BUCKETS, registry=r)
        self.batch_size = Histogram("pqforge_batch_size", "items per batch call by operation", ["operation"],
                                    buckets=_BATCH_BUCKETS, registry=r)
        self.queue_depth = Gauge("pqforge_queue_depth", "requests waiting in batch queues", registry=r)
        self.errors = Counter("pqforge_errors", "error answers by kind", ["kind"], registry=r)
        self._children: dict[tuple[str, int], tuple] = {}

    def record(self, operation: str, status: int, seconds: float) -> None:
        # labels() costs a lock and a dict lookup each time; the children are kept per label set
        children = self._children.get((operation, status))
        if children is None:
            children = self._children[(operation, status)] = (self.requests.labels(operation, str(status)),
                                                              self.latency.labels(operation, self.backend))
        children[0].inc()
        children[1].observe(seconds)

    def observe_batch(self, operation: str, size: int, depth: int) -> None:
        self.batch_size.labels(operation).observe(size)
        self.queue_depth.set(depth)

    def render(self) -> bytes:
        return generate_latest(self.registry)
