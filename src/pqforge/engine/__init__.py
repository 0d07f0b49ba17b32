"""The batching engine: what every batch call (and the service) shares, for any scheme.

    pool       the shared thread pool, thread counts, chunking (``start_chunks``/``finish_chunks``)
    backends   backend choice ("auto", "cpu", "cuda"), the default backend, device-memory errors,
               and the interfaces the backends implement: ``SignatureBackend`` (CPU, CUDA) and
               ``OneKeyBackend`` (also the tensor path of single-key calls)
    inputs     argument checks shared by all batch calls, and the randomness a batch draws
    jobs       one entry point for callers that know no scheme internals (a service):
               ``run_job(algorithm, operation, key, messages[, signatures])``

The engine sits below the schemes: nothing here imports ``pqforge.mayo`` or ``pqforge.gpu`` at
import time; ``jobs`` (above the schemes) is imported only by whoever calls it.
"""

from .backends import (AUTO_GPU_MIN_BATCH, BACKENDS, PATHS, OneKeyBackend, SignatureBackend, choose_backend,
                       get_default_backend, set_default_backend)
from .pool import MAX_THREADS, check_threads, cpu_threads, finish_chunks, run_chunks, start_chunks

__all__ = ["AUTO_GPU_MIN_BATCH", "BACKENDS", "PATHS", "OneKeyBackend", "SignatureBackend", "choose_backend",
           "get_default_backend", "set_default_backend", "MAX_THREADS", "check_threads", "cpu_threads",
           "finish_chunks", "run_chunks", "start_chunks"]
