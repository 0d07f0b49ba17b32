"""Every algorithm pqforge implements, by its liboqs-style name ("MAYO-2", "Classic-McEliece-348864").

An algorithm object has ``name``, ``kind`` ("signature" or "kem"), its byte sizes, the NIST-API
functions (``keypair``; ``sign_nist``/``open_nist``/``sign``/``verify`` or
``encapsulate``/``decapsulate``), the key-object constructors, ``benchmark_ops()`` and
``warm_up()`` (compile every kernel now). The command line, the KAT generator and the benchmark
harness see only this uniform shape.
"""

from __future__ import annotations

import importlib
import json
from importlib import resources

from .errors import UnknownAlgorithm

_SCHEME_PACKAGES = ("pqforge.mayo", "pqforge.mceliece")


def _registry() -> dict:
    algs = {}
    for package in _SCHEME_PACKAGES:
        try:
            module = importlib.import_module(package)
        except ModuleNotFoundError as exc:  # a scheme package not built yet
            if exc.name != package:
                raise
            continue
        algs.update(module.ALGORITHMS)
    return algs


def names() -> list[str]:
    return list(_registry())


def get(name: str):
    """The algorithm object called ``name`` (case-insensitive), or UnknownAlgorithm listing the known names."""
    registry = _registry()
    for key, alg in registry.items():
        if key.lower() == str(name).lower():
            return alg
    raise UnknownAlgorithm(f"unknown algorithm {name!r}; expected one of: {', '.join(registry)}")


def official_kat_hashes(name: str) -> dict:
    """SHA-256 of the official KAT text for ``name``: {"single", "all", "all_count"}."""
    data = json.loads(resources.files("pqforge.data").joinpath("kat-sha256.json").read_text())
    return data[name]
