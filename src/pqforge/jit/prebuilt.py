"""Machine code built ahead of time: numba's cache entries compiled for a named x86-64 level and
shipped as a file, which a first use copies into this machine's cache instead of compiling.

A first use compiles 25-45 s of CPU (MAYO-2's keygen, sign and verify); on a slow machine that
is most of a minute. Compiled code does not depend on the machine that compiled it, only on the
instructions it may use and on what pqforge chose from the CPU's features when it compiled:

- the LLVM target: a *profile* names an architecture, a level and extensions (``PROFILES``:
  x86-64 levels, and Armv8-A / Armv8.2-A on aarch64); its code runs
  on every CPU that has those features, about as fast as code compiled for that CPU itself
  (on the Zen 5 no MAYO-2 or Classic McEliece operation more than 5% slower;
  ``benchmarks/prebuilt_speed.py``);
- the choices made from the features (``choices``): the kernel set, the AES width and the number
  of vector registers. They are global constants baked into the code, and a unit compiled with
  one choice called from code compiled with another would be wrong, so a bundle is used only
  where this process makes exactly the choices it was built with.

Beside those, a bundle is tied to what numba's own cache is tied to (numba, llvmlite and Python
versions), and to pqforge's sources byte for byte (``sources_digest``): numba's cache checks only
each function's own bytecode, not the callees compiled into it.

A bundle (``*.kernels``) is a header (the metadata, a pickle) and the entries (an xz-compressed
pickle): per source file and cache index of numba, each entry's signature, bytecode hash and
compiled data; and the operations whose kernels it holds (``cache.mark_compiled``'s keys).
Installing one writes the entries into numba's cache under this machine's index keys (the
host's target description in place of the profile's) and source stamps, beside any entries
already there, and marks those operations compiled; numba then loads the entries as if it had
compiled them here.

Where bundles are looked for: ``PQFORGE_PREBUILT`` (a directory; empty or ``none``: nowhere),
else the package's ``prebuilt`` directory, which a release fills (``pqforge precompile
--prebuilt``) before the wheel is built. Bundles are pickles, as numba's cache is: they are
trusted like the package's own code, and the directory must be as trusted as the package.
"""

from __future__ import annotations

import functools
import hashlib
import io
import lzma
import os
import pickle
import subprocess
import sys
import tempfile
import types as pytypes
import warnings
from pathlib import Path
from typing import Any, Callable, Iterable

from . import PACKAGE_DIR

ENV = "PQFORGE_PREBUILT"
SUFFIX = ".kernels"
MAGIC = b"pqforge-kernels 1\n"

_V3 = ("sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf", "avx", "avx2",
       "bmi", "bmi2", "f16c", "fma", "lzcnt", "movbe", "xsave")
_V4 = _V3 + ("avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl")
_ICELAKE = ("avx512vbmi", "avx512vbmi2", "avx512vnni", "avx512bitalg", "avx512vpopcntdq", "avx512ifma")
"""AVX-512 extensions that every CPU with AVX-512 and GFNI has (Ice Lake and later, Zen 4 and later):
without them, Classic McEliece's decapsulation ran about 10% slower than the host's own compile."""

_ARMV8 = ("neon", "fp-armv8")
_ARMV8_2 = _ARMV8 + ("aes", "sha2", "crc", "lse", "rdm", "rcpc", "dotprod", "fullfp16")
"""Armv8.2-A with the cryptographic extension, as Neoverse N1 has it (and every later Neoverse,
and Apple M1 and later)."""

PROFILES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # name: (architecture, LLVM CPU, features). Each stands for CPUs whose choices (``choices``) it makes.
    "x86-64-v4-gfni": ("x86_64", "x86-64-v4", _V4 + _ICELAKE + ("aes", "pclmul", "vaes", "vpclmulqdq", "gfni")),  # Ice Lake and later, Zen 4 and later
    "x86-64-v4-aes": ("x86_64", "x86-64-v4", _V4 + ("aes", "pclmul")),                                 # Skylake-SP, Cascade Lake
    "x86-64-v3-gfni": ("x86_64", "x86-64-v3", _V3 + ("aes", "pclmul", "vaes", "vpclmulqdq", "gfni")),  # Alder Lake and later
    "x86-64-v3-vaes": ("x86_64", "x86-64-v3", _V3 + ("aes", "pclmul", "vaes", "vpclmulqdq")),          # Zen 3
    "x86-64-v3-aes": ("x86_64", "x86-64-v3", _V3 + ("aes", "pclmul")),                                 # Haswell to Comet Lake, Zen 1 and 2
    "armv8.2-a-n1": ("aarch64", "neoverse-n1", _ARMV8_2),         # Graviton 2 and later, Ampere Altra, Neoverse N1/V1/N2
    "armv8-a-aes": ("aarch64", "generic", _ARMV8 + ("aes", "sha2")),   # Cortex-A53/A72 with the crypto extension (Graviton 1)
    "armv8-a": ("aarch64", "generic", _ARMV8),                    # without it (Raspberry Pi 4): AES from OpenSSL
}
"""The targets bundles are built for. Data, so that a level is one line."""


def choices(kernel_set: str, features: Iterable[str]) -> dict[str, Any]:
    """What pqforge's kernels bake in from the CPU's ``features`` with the MAYO kernel set
    ``kernel_set``: everything that is read from the features when kernels compile."""
    from ..gf16.sets import aes_width
    from .target import vector_registers
    features = set(features)
    return {"kernels": kernel_set, "aes_width": aes_width(kernel_set, features),
            "vector_registers": vector_registers(features)}


def host_choices() -> dict[str, Any]:
    """``choices`` of this process (its kernel set, and the CPU numba compiles for)."""
    from ..gf16 import sets
    from .target import cpu_features
    return choices(sets.NAME, cpu_features())


@functools.lru_cache(maxsize=None)
def sources_digest() -> str:
    """SHA-256 over pqforge's Python sources (paths and contents), once per process."""
    return _digest_now()


def _digest_now() -> str:
    digest = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(path.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _versions() -> dict[str, str]:
    """What numba's cache entries are tied to besides the CPU, the operating system among them
    (its object files are ELF on Linux, Mach-O on macOS)."""
    import llvmlite
    import numba
    return {"numba": numba.__version__, "llvmlite": llvmlite.__version__,
            "python": sys.implementation.cache_tag or "", "platform": sys.platform}


def _index_version_and_body(path: Path) -> tuple[str, Any]:
    """numba's cache index: its numba version, then (source stamp, {key: data file name})."""
    with open(path, "rb") as f:
        version = pickle.load(f)
        return version, pickle.loads(f.read())


# -- building ------------------------------------------------------------------------------------

def export(cache_dir: Path, bundle: Path, meta: dict[str, Any]) -> int:
    """Write the entries that a build under profile ``meta["profile"]`` left in ``cache_dir``
    (a ``NUMBA_CACHE_DIR`` of its own) to ``bundle``; the number of entries."""
    import numba
    from numba.core.caching import UserProvidedCacheLocator
    cpu = PROFILES[meta["profile"]][1]
    source_dirs = {}        # numba's subdirectory name in a NUMBA_CACHE_DIR -> package directory
    for directory in [PACKAGE_DIR, *(p for p in PACKAGE_DIR.rglob("*") if p.is_dir())]:
        for spelling in {str(directory), os.path.abspath(directory)}:
            sub = UserProvidedCacheLocator.get_suitable_cache_subpath(os.path.join(spelling, "x.py"))
            source_dirs[sub] = directory.relative_to(PACKAGE_DIR).as_posix()
    files, count = [], 0
    for index in sorted(cache_dir.glob("*/*.nbi")):
        version, (_, overloads) = _index_version_and_body(index)
        relative = source_dirs.get(index.parent.name)
        if version != numba.__version__ or relative is None:
            continue
        module = index.name.split(".", 1)[0]           # "<module>.<qualname>-<line>.pyXY.nbi"
        source = f"{relative}/{module}.py" if relative != "." else f"{module}.py"
        if not (PACKAGE_DIR / source).is_file():
            continue
        entries = [(key[0], key[2], (index.parent / name).read_bytes())
                   for key, name in overloads.items() if key[1][1] == cpu and (index.parent / name).exists()]
        if entries:
            files.append((source, index.name, entries))
            count += len(entries)
    paths = sorted(p.name for p in (cache_dir / "pqforge-compiled").glob("*"))   # (``cache.mark_compiled``)
    with open(bundle, "wb") as f:
        f.write(MAGIC)
        pickle.dump(meta, f, protocol=4)
        f.write(lzma.compress(pickle.dumps((files, paths), protocol=4), preset=6))
    return count


def build(directory: Path, algorithms: list[str], profiles: Iterable[str] | None = None,
          kernel_sets: Iterable[str] | None = None, say: Any = print) -> list[Path]:
    """Build a bundle per profile and kernel set into ``directory``, for ``algorithms``: each by
    ``pqforge precompile`` in a process of its own, compiling for the profile into an empty cache.
    Only profiles this CPU runs (each build runs the kernels once), and only their sets."""
    from ..errors import KernelSetUnavailable
    from ..gf16.sets import NAMES, needs
    from .target import architecture, cpu_features
    host = cpu_features()
    wanted_sets = list(kernel_sets or NAMES)
    directory.mkdir(parents=True, exist_ok=True)
    built = []
    for kind, given, known in (("profile", profiles or (), PROFILES), ("kernel set", wanted_sets, NAMES)):
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise KernelSetUnavailable(f"unknown {kind} {', '.join(unknown)}; expected one of {', '.join(known)}")
    for profile in profiles or PROFILES:
        arch, cpu, features = PROFILES[profile]
        if arch != architecture():
            if profiles:
                say(f"skipped {profile}: built on {arch} only, this machine is {architecture()}")
            continue
        if not set(features) <= host:
            say(f"skipped {profile}: this CPU lacks {', '.join(sorted(set(features) - host))}")
            continue
        for kernel_set in wanted_sets:
            if not needs(kernel_set) <= set(features):
                continue
            sources = _digest_now()
            with tempfile.TemporaryDirectory(prefix="pqforge-build-") as cache:
                env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_CPU_NAME=cpu,
                           NUMBA_CPU_FEATURES=",".join("+" + f for f in features),
                           PQFORGE_KERNELS=kernel_set, **{ENV: "none"})
                subprocess.run([sys.executable, "-m", "pqforge", "precompile", *sum((["--alg", a] for a in algorithms), [])],
                               env=env, check=True, stdout=subprocess.DEVNULL)
                if _digest_now() != sources:
                    raise RuntimeError("pqforge's sources changed during the build; build again")
                meta = {**_versions(), "sources": sources, "profile": profile, "architecture": arch,
                        "features": sorted(features), "choices": choices(kernel_set, features),
                        "algorithms": list(algorithms)}
                bundle = directory / f"{profile}-{kernel_set}{SUFFIX}"
                count = export(Path(cache), bundle, meta)
            say(f"{bundle}: {count} entries, {bundle.stat().st_size / 1e6:.1f} MB")
            built.append(bundle)
    return built


# -- installing ----------------------------------------------------------------------------------

def directories() -> list[Path]:
    """Where bundles are looked for (``PQFORGE_PREBUILT``, else the package's ``prebuilt``)."""
    chosen = os.environ.get(ENV)
    if chosen is not None:
        return [] if chosen.strip().lower() in ("", "none") else [Path(chosen)]
    return [PACKAGE_DIR / "prebuilt"]


def read_meta(bundle: Path) -> dict[str, Any] | None:
    """A bundle's metadata, or None when the file is not a bundle."""
    try:
        with open(bundle, "rb") as f:
            if f.read(len(MAGIC)) != MAGIC:
                return None
            meta = pickle.load(f)
        return meta if isinstance(meta, dict) else None
    except Exception:       # (a damaged pickle raises any of a dozen types)
        return None


def mismatch(meta: dict[str, Any]) -> str | None:
    """Why a bundle with ``meta`` cannot serve this process, or None when it can."""
    found = _mismatch(meta)
    return found[1] if found else None


def _mismatch(meta: dict[str, Any]) -> tuple[int, str] | None:
    """(how far the bundle got through the checks, why it stopped), or None when it fits."""
    from .target import architecture, cpu_features
    arch = meta.get("architecture", "x86_64")       # (bundles from before aarch64 profiles are x86-64's)
    if arch != architecture():
        return -1, f"built for {arch}, not {architecture()}"
    for name, value in _versions().items():
        if meta.get(name) != value:
            return 0, f"built for {name} {meta.get(name)}, not {value}"
    if meta.get("sources") != sources_digest():
        return 1, "built from other pqforge sources"
    lacking = set(meta.get("features", ())) - cpu_features()
    if lacking:
        return 2, f"this CPU lacks {', '.join(sorted(lacking))}"
    if meta.get("choices") != host_choices():
        return 3, f"built for {meta.get('choices')}, this process chooses {host_choices()}"
    return None


def find() -> Path | None:
    """The bundle that serves this process, if any: of those that fit, the one compiled for the
    most features (the same choices can come from several profiles)."""
    return _survey()[0]


def unfit() -> str | None:
    """Why the bundles present do not serve this process: the reason of the one that came
    closest to fitting (a version or the sources, which all of them share, before a CPU feature);
    None where one fits or none is present."""
    return _survey()[1]


def _survey() -> tuple[Path | None, str | None]:
    fitting, closest = [], None
    for directory in directories():
        try:
            candidates = sorted(directory.glob("*" + SUFFIX))
        except OSError:
            continue
        for bundle in candidates:
            meta = read_meta(bundle)
            if meta is None:
                continue
            found = _mismatch(meta)
            if found is None:
                fitting.append((-len(meta.get("features", ())), bundle))
            elif closest is None or found[0] > closest[0]:
                closest = found
    if fitting:
        return min(fitting)[1], None
    return None, closest[1] if closest else None


def _host_locator(source: Path) -> Any:
    """numba's cache locator for functions of ``source`` in this process (where their entries go)."""
    from numba.core.caching import CompileResultCacheImpl

    def placeholder() -> None: ...
    code = placeholder.__code__.replace(co_filename=str(source))
    return CompileResultCacheImpl(pytypes.FunctionType(code, {})).locator


def _write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (another process may read it meanwhile)."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def install(bundle: Path, mark_compiled: Callable[[str], None]) -> int:
    """Copy ``bundle``'s entries into numba's cache, keyed for this process, and mark the
    operations they cover as compiled (``mark_compiled``, the notices' markers); the number of
    entries added (those already there are kept as they are)."""
    import numba
    from numba.core.registry import cpu_target
    with open(bundle, "rb") as f:
        f.read(len(MAGIC))
        pickle.load(f)
        files, paths = pickle.loads(lzma.decompress(f.read()))
    magic = cpu_target.target_context.codegen().magic_tuple()
    added = 0
    for source, index_name, entries in files:
        locator = _host_locator(PACKAGE_DIR / source)
        directory = Path(locator.get_cache_path())
        stamp = locator.get_source_stamp()
        index = directory / index_name
        overloads: dict = {}
        try:
            version, (old_stamp, old) = _index_version_and_body(index)
            if version == numba.__version__ and old_stamp == stamp:
                overloads = old
        except (OSError, pickle.UnpicklingError, EOFError, ValueError):
            pass
        base = index_name[:-len(".nbi")]
        used = set(overloads.values())
        for signature, code_hash, data in entries:
            key = (signature, magic, code_hash)
            if key in overloads:
                continue
            number = 1
            while f"{base}.{number}.nbc" in used:
                number += 1
            name = f"{base}.{number}.nbc"
            _write(directory / name, data)
            overloads[key] = name
            used.add(name)
            added += 1
        buffer = io.BytesIO()
        pickle.dump(numba.__version__, buffer, protocol=-1)
        buffer.write(pickle.dumps((stamp, overloads), protocol=-1))
        _write(index, buffer.getvalue())
    for path in paths:      # the operations whose kernels the bundle holds: no compile notice for them
        mark_compiled(path)
    return added


_outcome: list[Path | None] = []     # what install_once did in this process
_unfit: list[str] = []               # why no bundle was installed, where some were present


def install_once(cache_dir: Path, mark_compiled: Callable[[str], None]) -> Path | None:
    """Install the bundle that serves this process into numba's cache in ``cache_dir``
    (``install``), once per process and per cache (a marker in it names the bundle); the
    bundle (on every call of the process), or None. Never fails the operation: a bundle that
    cannot be read or written is reported once and the kernels compile as before."""
    if not _outcome:
        _outcome.append(_install_fitting(cache_dir, mark_compiled))
    return _outcome[0]


def not_used() -> str | None:
    """After ``install_once``: why the bundles present were not installed, for the first compile
    notice of the process (later calls: None); None where one was, or none is present."""
    return _unfit.pop() if _unfit else None


def _install_fitting(cache_dir: Path, mark_compiled: Callable[[str], None]) -> Path | None:
    bundle = None
    try:
        bundle, reason = _survey()
        if bundle is None:
            if reason:
                _unfit.append(f"the machine code built ahead of time does not fit: {reason}")
            return None
        marker = cache_dir / "pqforge-prebuilt" / bundle.name
        stamp = f"{bundle.stat().st_size} {bundle.stat().st_mtime_ns} {sources_digest()}\n"
        if marker.is_file() and marker.read_text() == stamp:
            return bundle
        install(bundle, mark_compiled)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(stamp)
    except Exception as error:      # (a damaged bundle, a full disk): compiling still works
        warnings.warn(f"pqforge: prebuilt kernels {bundle or 'in ' + ', '.join(map(str, directories()))} not installed "
                      f"({error}); compiling instead", RuntimeWarning, stacklevel=3)
        return None
    return bundle
