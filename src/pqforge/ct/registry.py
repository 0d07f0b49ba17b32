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
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from ..algorithms import name_key
from ..errors import InvalidInput


@dataclass(frozen=True)
class Target:
    name: str
    description: str
    func: Callable
    make_inputs: Callable[[Any, Any, bool], tuple]
    secret_args: tuple = ()
    """Positional indices (or parameter names) of the arguments that carry secrets."""
    kind: str = "kernel"
    """"kernel" (one compiled kernel on prepared buffers) or "operation" (a whole operation)."""
    classes: tuple[str, str] = ("fixed", "random")
    """Names of the two input classes, label 0 then label 1."""
    algs: tuple[str, ...] = ()
    """Algorithm names the target accepts (empty: any, parameters unused)."""
    params_for: Callable[[str | None], Any] | None = None
    """Maps an algorithm name to the parameter object passed to ``make_inputs``."""
    twin: Callable | None = None
    """Plain-Python version for the trace check; defaults to ``func.py_func``."""
    trace_inputs: Callable[[Any, Any], tuple[tuple, tuple]] | None = None
    """Optional ``(params, rng) -> (args_a, args_b)``: two calls that differ only in secrets.
    By default the trace check draws two random-class inputs and swaps in the secrets."""
    notes: str = ""
    extra: dict = field(default_factory=dict)

    def python_twin(self) -> Callable | None:
        return self.twin if self.twin is not None else getattr(self.func, "py_func", None)

    def secret_positions(self) -> tuple[int, ...]:
        """``secret_args`` as positional indices (names resolved against the twin's signature)."""
        fn = self.python_twin() or self.func
        names = None
        out = []
        for s in self.secret_args:
            if isinstance(s, int):
                out.append(s)
                continue
            if names is None:
                names = list(inspect.signature(fn).parameters)
            if s not in names:
                raise InvalidInput(f"target {self.name}: {s!r} is not an argument of {fn.__name__}")
            out.append(names.index(s))
        return tuple(out)

    def resolve_params(self, alg: str | None):
        if self.algs:
            if alg is None:
                alg = self.algs[0]
            match = [a for a in self.algs if name_key(a) == name_key(alg)]
            if not match:
                raise InvalidInput(f"target {self.name} supports {', '.join(self.algs)}, not {alg}")
            alg = match[0]
        return alg, (self.params_for(alg) if self.params_for else None)

    @property
    def traceable(self) -> bool:
        return self.kind == "kernel" and bool(self.secret_args) and self.python_twin() is not None


_TARGETS: dict[str, Target] = {}


def register(target: Target, replace: bool = False) -> Target:
    if target.name in _TARGETS and not replace:
        raise InvalidInput(f"a constant-time target called {target.name!r} is already registered")
    _TARGETS[target.name] = target
    return target


def unregister(name: str) -> None:
    _TARGETS.pop(name, None)


def _load_builtin() -> None:
    from . import targets  # noqa: F401  (registers the package's own targets on import)


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
