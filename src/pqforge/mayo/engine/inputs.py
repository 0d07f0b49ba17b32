"""Argument checks shared by every batch call, and the randomness a batch draws.

Every check runs before any work and before any random draw, and an error names the element
(its index) and what was expected.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...drbg import system_rng
from ...errors import InvalidInput, InvalidType, require_bytes


def as_list(items: Any, what: str) -> list[Any]:
    """``items`` as a list; a single bytes/str and numpy ``S`` arrays (which drop trailing zero
    bytes) are refused."""
    if isinstance(items, (bytes, bytearray, memoryview, str)):
        raise InvalidType(f"{what} must be a sequence of items, not a single {type(items).__name__}")
    if isinstance(items, np.ndarray) and items.dtype.kind == "S":
        raise InvalidType(f"{what}: a numpy array of dtype {items.dtype} drops trailing zero bytes; "
                          "pass a list of bytes (or an array of dtype object)")
    try:
        return list(items)
    except TypeError:
        raise InvalidType(f"{what} must be a sequence, not {type(items).__name__}") from None


def same_length(**lists: list[Any]) -> int:
    """The common length of the named lists, or InvalidInput naming each length."""
    sizes = {name: len(v) for name, v in lists.items()}
    if len(set(sizes.values())) > 1:
        raise InvalidInput("batch lists differ in length: " + ", ".join(f"{k}={v}" for k, v in sizes.items()))
    return next(iter(sizes.values()), 0)


def byte_items(items: Any, what: str) -> list[bytes]:
    """The items (a sequence, see ``as_list``) as bytes (bytearray and memoryview converted); any
    other type raises, naming the item's index. Lengths are judged by the caller. Plain bytes
    pass without a call."""
    out = as_list(items, what + "s")
    for i, value in enumerate(out):
        if type(value) is not bytes:
            out[i] = require_bytes(value, f"{what} {i}")
    return out


def check_count(n: Any, what: str) -> int:
    """A non-negative int count (numpy integers accepted)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InvalidType(f"{what} must be an int, not {type(n).__name__}")
    if n < 0:
        raise InvalidInput(f"{what} must be non-negative, got {n}")
    return int(n)


def checked_rng(rng: Callable[[int], bytes] | None) -> Callable[[int], bytes]:
    """An rng that fails loudly when the supplied callable does not return n bytes; for None the
    system's, which always does (unchecked: the checks cost as much as the draw)."""
    if rng is None:
        return system_rng
    source = rng
    if not callable(source):
        raise InvalidType(f"rng must be a callable n -> bytes, not {type(source).__name__}")

    def draw(n: int) -> bytes:
        out = source(n)
        if not isinstance(out, (bytes, bytearray)) or len(out) != n:
            raise InvalidInput(f"rng returned {type(out).__name__} of length "
                               f"{len(out) if hasattr(out, '__len__') else '?'}; expected {n} bytes")
        return bytes(out)
    return draw


def draw_randomness(rng: Callable[[int], bytes] | None, size: int, nbytes: int) -> list[bytes]:
    """``size`` draws of ``nbytes`` each, in index order (the calls a loop of single operations
    makes, in its order). The system rng is asked once for all of them: the same distribution,
    one system call instead of ``size``."""
    draw = checked_rng(rng)
    if rng is None:
        data = draw(size * nbytes)
        return [data[i:i + nbytes] for i in range(0, size * nbytes, nbytes)]
    return [draw(nbytes) for _ in range(size)]
