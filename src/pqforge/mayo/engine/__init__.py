"""MAYO's batching engine: what every batch call shares, whichever backend runs it.

    pool       the shared thread pool, thread counts, chunking (``start_chunks``/``finish_chunks``)
    backends   backend choice ("auto", "cpu", "cuda"), the default backend, device-memory errors,
               and the interfaces the backends implement: ``SignatureBackend`` (CPU, CUDA) and
               ``OneKeyBackend`` (also the tensor path of single-key calls)
    inputs     argument checks shared by all batch calls, and the randomness a batch draws

The engine sits below MAYO's batch calls and backends: nothing here imports them, or the CUDA
backend (``mayo.cuda``), at import time. Callers that know no scheme internals submit work by
name through ``pqforge.jobs.run_job``.
"""

from .backends import (AUTO_GPU_MIN_BATCH, BACKENDS, PATHS, OneKeyBackend, SignatureBackend, choose_backend,
                       get_default_backend, set_default_backend)
from .pool import MAX_THREADS, check_threads, cpu_threads, finish_chunks, run_chunks, start_chunks

__all__ = ["AUTO_GPU_MIN_BATCH", "BACKENDS", "PATHS", "OneKeyBackend", "SignatureBackend", "choose_backend",
           "get_default_backend", "set_default_backend", "MAX_THREADS", "check_threads", "cpu_threads",
           "finish_chunks", "run_chunks", "start_chunks"]
