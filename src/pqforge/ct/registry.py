"""The registry of constant-time targets: code that sees secrets, and how to feed it.

A :class:`Target` names a callable (a compiled kernel on prepared buffers, or a whole operation),
says which of its positional arguments are secret, and supplies ``make_inputs(params, rng,
fixed_class)`` returning the argument tuple for one call. Both the timing harness and the trace
check read the same entry.

Input-factory contract: the harness calls the factory once per measurement, outside the timed
region, always with a freshly created generator: for the fixed class (``fixed_class=True``) one
seeded identically on every call, so whatever the factory draws is the same each time (while every
call still gets fresh buffers, which in-place kernels may overwrite); for the random class one
with a fresh seed. Both classes thus go through the same preparation path, which matters: a
preparation difference alone (for example where the buffers land in memory) can shift timings by
tens of nanoseconds. A factory that needs something shared by both classes (one key while the
message varies) keeps it itself.
"""

from __future__ import annotations

import importlib
from typing import Sequence

from ..errors import InvalidInput
from .target import Target


_TARGETS: dict[str, Target] = {}


def register(target: Target, replace: bool = False) -> Target:
    if target.name in _TARGETS and not replace:
        raise InvalidInput(f"a constant-time target called {target.name!r} is already registered")
    _TARGETS[target.name] = target
    return target


def unregister(name: str) -> None:
    _TARGETS.pop(name, None)


_builtin_loaded = False


def _load_builtin() -> None:
    """Register the package's own targets (``targets.builtin_targets``), once."""
    global _builtin_loaded
    if not _builtin_loaded:
        from . import targets
        for t in targets.builtin_targets():
            register(t, replace=True)
        _builtin_loaded = True


def all_targets() -> list[Target]:
    _load_builtin()
    return list(_TARGETS.values())


def get(name: str) -> Target:
    """A registered target, or ``package.module:ATTRIBUTE`` naming a Target object elsewhere."""
    _load_builtin()
    if name in _TARGETS:
        return _TARGETS[name]
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            obj = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise InvalidInput(f"cannot load target {name}: {exc}") from None
        if not isinstance(obj, Target):
            raise InvalidInput(f"{name} is a {type(obj).__name__}, not a constant-time Target")
        return obj
    known = ", ".join(_TARGETS) or "none registered"
    raise InvalidInput(f"unknown constant-time target {name!r}; known: {known}")


def traceable(targets: Sequence[Target] | None = None) -> list[Target]:
    """The targets the trace check covers: kernels with secret arguments and a Python twin."""
    return [t for t in (all_targets() if targets is None else targets) if t.traceable]
