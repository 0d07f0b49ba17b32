"""A constant-time target: a callable that sees secrets, which arguments are secret, and how
to feed it (the entry that the timing harness and the trace check read; see ``registry``)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

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
    declassified: tuple[str, ...] = ()
    """Values the kernel makes public on purpose (``pqforge._barrier.declassify``), each with
    the reason it may: what the memcheck check lets pass."""
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
