"""Every algorithm pqforge implements, by its liboqs-style name ("MAYO-2", "Classic-McEliece-348864").

An algorithm object has ``name``, ``kind`` ("signature" or "kem"), its byte sizes, the NIST-API
functions (``keypair``; ``sign_nist``/``open_nist``/``sign``/``verify`` or
``encapsulate``/``decapsulate``), the key-object constructors, ``benchmark_ops()`` and
``warm_up()`` (compile every kernel now). The command line, the KAT generator and the benchmark
harness see only this uniform shape.
"""

from __future__ import annotations

import functools
import importlib
import json
import re
from importlib import resources
from typing import Any

from .errors import UnknownAlgorithm

_FAMILIES = (("MAYO-", "pqforge.mayo"), ("Classic-McEliece-", "pqforge.mceliece"))
"""The package that implements each family of names: a lookup imports only that one (a
command on a McEliece key does not import MAYO's kernels)."""


def names() -> list[str]:
    """Every algorithm's name, MAYO first. Read from the official KAT hashes that ship with the
    package (every algorithm has them), so that listing names, e.g. for ``pqforge --help``, does
    not import the schemes and their compiled kernels."""
    listed = list(_official_kat_data())
    return sorted(listed, key=lambda name: (not name.startswith("MAYO"), name))


@functools.lru_cache(maxsize=None)
def _official_kat_data() -> dict[str, dict[str, Any]]:
    data: dict[str, dict[str, Any]] = json.loads(resources.files("pqforge.data").joinpath("kat-sha256.json").read_text())
    return data


def name_key(name: object) -> str:
    """The form in which algorithm names are compared: case, hyphens, underscores, spaces and a
    leading "Classic" do not matter, so "MAYO-2", "mayo2" and "McEliece348864" are names too."""
    return _name_key(str(name))


@functools.lru_cache(maxsize=256)       # every functional call names its algorithm
def _name_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower()).removeprefix("classic")


def lookup(registry: dict[str, Any], name: object, what: str) -> Any:
    """``registry[name]`` under ``name_key``, or UnknownAlgorithm naming ``what`` and the known names."""
    wanted = name_key(name)
    for key, alg in registry.items():
        if name_key(key) == wanted:
            return alg
    raise UnknownAlgorithm(f"unknown {what} {name!r}; expected one of: {', '.join(registry)}")


@functools.lru_cache(maxsize=256)       # a service looks a name up on every request
def _canonical(name: Any) -> str:
    return str(lookup({known: known for known in names()}, name, "algorithm"))


def get(name: str) -> Any:
    """The algorithm object called ``name`` (in any spelling ``name_key`` accepts), or
    UnknownAlgorithm listing the known names."""
    canonical = _canonical(name) if isinstance(name, str) else _canonical.__wrapped__(name)  # (not cached)
    package = next(package for prefix, package in _FAMILIES if canonical.startswith(prefix))
    return importlib.import_module(package).ALGORITHMS[canonical]


def official_kat_hashes(name: str) -> dict[str, Any]:
    """SHA-256 of the official KAT text for ``name``: {"single", "all", "all_count"}."""
    return _official_kat_data()[name]
