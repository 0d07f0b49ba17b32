"""Service settings: defaults, a TOML file (``--config``), then command-line options."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import InvalidInput
from .store import check_store_url


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


RANGES: dict[str, tuple[int, int]] = {
    "port": (0, 65535), "max_batch": (1, 65536), "max_wait_ms": (0, 60_000), "max_queue": (1, 1_000_000),
    "max_messages": (1, 65536), "max_body_bytes": (1, 1 << 30), "compute_threads": (1, 1024),
    "workers": (1, 256), "cache_ttl_s": (0, 3600), "drain_timeout": (0, 3600)}
"""Every numeric setting's accepted values, both ends included (docs/service.md lists them);
``drain_timeout`` is a command-line option only."""
FRACTIONAL = {"max_wait_ms", "cache_ttl_s", "drain_timeout"}
"""The settings that take any number in their range; the others take whole numbers."""


def in_range(name: str, value) -> bool:
    low, high = RANGES[name]
    number = (isinstance(value, (int, float)) and not isinstance(value, bool)) if name in FRACTIONAL else _whole(value)
    return number and low <= value <= high          # NaN compares false: refused


def expected(name: str) -> str:
    """The values ``name`` takes, for an error message."""
    low, high = RANGES[name]
    what = "a number" if name in FRACTIONAL else "a whole number"
    return f"{what} from {low} to {high}{' (0: any free port)' if name == 'port' else ''}"


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    store: str = "sqlite:///pqforge.db"
    backend: str = "cpu"                 # auto | cpu | cuda, passed to sign_many / verify_many
    max_batch: int = 256                 # a queue is flushed when it holds this many requests ...
    max_wait_ms: float = 0.0             # ... or when its oldest request has waited this long (0: once the
                                         # event loop has taken in the requests that came together)
    max_queue: int = 4096                # requests waiting per (key, operation); beyond: 429
    max_messages: int = 4096             # messages in one sign-many / verify-many request
    max_body_bytes: int = 8 << 20        # larger bodies: 413
    compute_threads: int | None = None   # threads per batch call (None: the cores, shared by the calls running at once)
    workers: int = 1                     # server processes sharing the port (each batches on its own)
    public_verify: bool = False          # verification without a token
    master_key_file: str | None = None   # default: beside the SQLite file, or ./pqforge-master.key
    warm_up: list[str] = field(default_factory=lambda: ["MAYO-2"])  # plus every stored key's algorithm
    compile_rest: bool = True            # after the served paths, the rest of warm_up in a background process
    cache_ttl_s: float = 1.0             # how long a token or key state is trusted before re-reading
    ssl_certfile: str | None = None
    ssl_keyfile: str | None = None

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in RANGES and not (f.name == "compute_threads" and value is None) and not in_range(f.name, value):
                raise InvalidInput(f"{f.name}: expected {expected(f.name)}, got {value!r}")
        check_store_url(self.store)
        if self.backend not in ("auto", "cpu", "cuda"):
            raise InvalidInput(f"backend must be auto, cpu or cuda, got {self.backend!r}")

    @classmethod
    def load(cls, path: str | None = None, **overrides) -> "Settings":
        """Defaults, then the ``[serve]`` table (or top level) of the TOML file ``path``, then
        ``overrides`` whose value is not None."""
        values = {}
        if path:
            try:
                import tomllib
            except ImportError:   # Python 3.10
                raise InvalidInput("--config needs Python 3.11 or later (tomllib)") from None
            try:
                data = tomllib.loads(Path(path).read_text())
            except OSError as exc:
                raise InvalidInput(f"cannot read config file {path}: {exc.strerror}") from None
            except tomllib.TOMLDecodeError as exc:
                raise InvalidInput(f"config file {path} is not valid TOML: {exc}") from None
            values = data.get("serve", data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidInput(f"unknown setting(s) in {path}: {', '.join(unknown)}; expected some of: "
                               f"{', '.join(sorted(known))}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def master_key_path(self) -> Path:
        if self.master_key_file:
            return Path(self.master_key_file)
        if self.store.startswith("sqlite:///"):
            return Path(self.store[len("sqlite:///"):]).resolve().parent / "pqforge-master.key"
        return Path("pqforge-master.key").resolve()
