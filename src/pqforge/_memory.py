"""Keep freed heap memory for reuse.

Key expansion allocates megabyte-sized temporaries on every call. With glibc's defaults, freeing
them trims the heap, and the next call pays a page fault per 4 KiB page to get the memory back,
which costs more than the arithmetic (MAYO-5 key expansion: about 2.5 ms instead of 1.7 ms).
Raising M_TOP_PAD keeps up to ``top_pad`` bytes of freed heap mapped, and raising
M_MMAP_THRESHOLD serves blocks below ``mmap_threshold`` from that heap instead of fresh
mappings (setting either turns off glibc's own adaptive threshold, so both are set).

The setting holds for the whole process, so importing pqforge does not make it: the command line
(``cli.main``) and the service (``service.app.create_app``) call ``retain_freed_heap`` when they
start, as a library user may. Set PQFORGE_MALLOC_TUNING=0 to leave the allocator untouched there.
"""

import ctypes
import ctypes.util
import os

_M_TOP_PAD = -2         # glibc's mallopt parameter numbers
_M_MMAP_THRESHOLD = -3


def retain_freed_heap(top_pad: int = 32 << 20, mmap_threshold: int = 32 << 20) -> bool:
    """Tune glibc malloc as described above; False where that is unavailable."""
    if os.environ.get("PQFORGE_MALLOC_TUNING", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return bool(libc.mallopt(_M_MMAP_THRESHOLD, ctypes.c_int(mmap_threshold))
                    and libc.mallopt(_M_TOP_PAD, ctypes.c_int(top_pad)))
    except (OSError, AttributeError):
        return False
