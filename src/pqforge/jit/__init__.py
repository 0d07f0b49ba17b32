"""The compile machinery: where numba's cache lives and the notice before a first compile
(``cache``), kernels compiled on their own and called by address, and the queue that shares a
first use's compiles with helper processes (``units``), the CPU compiled for (``target``), and
machine code built ahead of time for other machines, installed at a first use where it fits
(``prebuilt``).

Kernel modules take ``JIT_CACHE`` for their ``numba.njit(cache=...)`` and declare their units
and ahead-of-time entries beside themselves; nothing else here knows about any algorithm.
"""

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The pqforge package (its sources stamp the compiled code; its ``__pycache__`` is the default cache)."""
