"""Command-line entry points: ``pqforge serve``, ``pqforge tokens create|list|revoke`` and
``pqforge bench-serve``. The web stack is imported only when a command runs."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import time

from ..errors import PQForgeError
from .config import FRACTIONAL, RANGES, Settings, expected, in_range


def _settings(args) -> Settings:
    return Settings.load(getattr(args, "config", None), store=getattr(args, "store", None),
                         host=getattr(args, "host", None), port=getattr(args, "port", None),
                         backend=getattr(args, "backend", None), max_batch=getattr(args, "max_batch", None),
                         max_wait_ms=getattr(args, "max_wait_ms", None),
                         ssl_certfile=getattr(args, "ssl_certfile", None),
                         ssl_keyfile=getattr(args, "ssl_keyfile", None),
                         master_key_file=getattr(args, "master_key_file", None),
                         workers=getattr(args, "workers", None),
                         public_verify=True if getattr(args, "public_verify", False) else None)


SETTINGS_ENV = "PQFORGE_SERVE_SETTINGS"
LOG_LEVEL_ENV = "PQFORGE_LOG_LEVEL"


class JsonLines(logging.Formatter):
    """One JSON object per log line: time, level, logger, message."""

    def format(self, record) -> str:
        entry = {"time": self.formatTime(record), "level": record.levelname, "logger": record.name,
                 "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure_logging(level: str = "info") -> None:
    os.environ[LOG_LEVEL_ENV] = level
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines())
    logging.basicConfig(level=level.upper(), handlers=[handler])
    logging.getLogger("numba").setLevel(max(logging.INFO, logging.getLevelName(level.upper())))  # its debug
    logging.captureWarnings(True)       # warnings are log lines too, not plain text among them


def _require_extra(*modules: str, extra: str = "serve") -> None:
    import importlib.util
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise PQForgeError(f"this command needs {', '.join(missing)}: pip install 'pqforge[{extra}]'")


def _check_serve(settings: Settings):
    """Refuse what would fail only after the master key and the store were created: a store
    without its driver or directory, TLS files that do not load. Returns the (not yet
    connected) store."""
    from .store import open_store
    store = open_store(settings.store)
    if settings.store.startswith("sqlite:///"):
        directory = os.path.dirname(store.path) or "."
        if not os.path.isdir(directory):
            raise PQForgeError(f"store: no directory {directory} for the SQLite file {store.path}")
    if settings.ssl_keyfile and not settings.ssl_certfile:
        raise PQForgeError("--ssl-keyfile needs --ssl-certfile")
    for option, path in (("--ssl-certfile", settings.ssl_certfile), ("--ssl-keyfile", settings.ssl_keyfile)):
        if path and not os.path.isfile(path):
            raise PQForgeError(f"{option}: no file {path}")
    if settings.ssl_certfile:       # as uvicorn will load them, so that a bad file is refused here
        import ssl
        files = settings.ssl_certfile + (f" and --ssl-keyfile {settings.ssl_keyfile}" if settings.ssl_keyfile else "")
        try:
            ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(settings.ssl_certfile, settings.ssl_keyfile)
        except ssl.SSLError as exc:     # not PEM, or a key that is not the certificate's
            raise PQForgeError(f"cannot load TLS --ssl-certfile {files}: expected a PEM certificate and its "
                               f"private key ({exc.reason or exc})") from None
        except OSError as exc:
            raise PQForgeError(f"cannot load TLS --ssl-certfile {files}: {exc.strerror or exc}") from None
    return store


def _listen(host: str, port: int):
    """A socket bound to host:port and listening, for uvicorn to serve on: a port in use or not
    allowed is an error before the banner, and no other process can take the port meanwhile."""
    import errno
    import socket
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)    # as uvicorn: no wait after a restart
        sock.bind((host, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        reason = {errno.EADDRINUSE: "the port is in use; choose another --port (0: any free port)",
                  errno.EACCES: "permission denied (ports below 1024 need privileges); choose a --port "
                                "from 1024 up"}.get(exc.errno, exc.strerror or str(exc))
        raise PQForgeError(f"cannot listen on {host}:{port}: {reason}") from None
    sock.set_inheritable(True)      # --workers: the worker processes serve on it
    return sock


def _check_reachable(store, url: str) -> None:
    """A PostgreSQL store that cannot be reached is an error before the banner (an SQLite file
    is made by the first connection, after the other checks)."""
    from .app import _store_label
    from .store import StoreUnavailable
    if url.startswith("sqlite:///"):
        return
    try:
        store.ping()
    except StoreUnavailable as exc:
        cause = str(exc.__context__ or exc).strip().splitlines()[0]
        raise PQForgeError(f"store {_store_label(url)} is unreachable: {cause}") from None
    finally:
        store.close()


def _exit_zero_after_drain(service) -> None:
    """uvicorn raises the SIGTERM it stopped for again once it has shut down, which would end the
    process with status 143; after a clean drain the stop was orderly and the status is 0. A
    SIGTERM that comes before uvicorn handles signals, or after a failed drain, still kills."""
    import signal

    def on_sigterm(sig, frame):
        if not service.drained.is_set():
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)
    signal.signal(signal.SIGTERM, on_sigterm)


def cmd_serve(args) -> int:
    _require_extra("fastapi", "uvicorn", "prometheus_client")
    if args.ray:
        _require_extra("ray", extra="ray")
    settings = _settings(args)
    store = _check_serve(settings)
    sock = _listen(settings.host, settings.port)
    if args.ray:        # Ray's proxy binds the port itself: this was only the check
        sock.close()
    _check_reachable(store, settings.store)
    configure_logging(args.log_level)
    mode = store.exposed_mode()
    if mode is not None:
        logging.getLogger("pqforge.service").warning(
            "store file %s has mode %04o: group or others may read or write it; expected 0600 (chmod 600 %s)",
            store.path, mode, store.path)
    if args.ray:
        from . import ray_app
        return ray_app.run(settings)
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from .sealing import load_master_key
    _, master_key_source = load_master_key(settings.master_key_path())   # created once, here
    scheme = "https" if settings.ssl_certfile else "http"
    port = sock.getsockname()[1]        # the one chosen where --port is 0
    note = ("loopback only; --host 0.0.0.0 listens on all interfaces"
            if settings.host in ("127.0.0.1", "localhost", "::1") else "all addresses of this host can reach it")
    print(f"pqforge serve: {scheme}://{settings.host}:{port} ({note}); "
          f"master key: {master_key_source}", file=sys.stderr, flush=True)
    from .protocol import http_protocol
    options = dict(host=settings.host, port=port, ssl_certfile=settings.ssl_certfile,
                   ssl_keyfile=settings.ssl_keyfile, log_config=None, access_log=args.access_log,
                   timeout_graceful_shutdown=args.drain_timeout, http=http_protocol())
    running = logging.getLogger("uvicorn.error")
    address = f"{scheme}://[{settings.host}]:{port}" if ":" in settings.host else f"{scheme}://{settings.host}:{port}"
    if settings.workers > 1:   # worker processes build their app from the settings in the environment
        os.environ[SETTINGS_ENV] = json.dumps(dataclasses.asdict(settings))
        config = uvicorn.Config("pqforge.service.cli:app_from_environment", factory=True, workers=settings.workers,
                                **options)
        running.info("Uvicorn running on %s (Press CTRL+C to quit)", address)  # uvicorn's line, as it binds
        Multiprocess(config, sockets=[sock]).run()
    else:
        from .app import create_app
        app = create_app(settings)
        _exit_zero_after_drain(app.state.service)
        server = _server_class()(uvicorn.Config(app, **options))
        server.address = address
        server.run(sockets=[sock])
        if not server.started:      # as uvicorn.run: its startup failed (the log says why)
            return 3
    return 0


def _server_class():
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server on a socket bound beforehand (``_listen``), saying where it runs as
        uvicorn does when it binds the socket itself (given sockets, it says nothing)."""
        address = ""

        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if self.started:
                logging.getLogger("uvicorn.error").info("Uvicorn running on %s (Press CTRL+C to quit)", self.address)
    return Server


def app_from_environment():
    """The app of one ``--workers`` process (uvicorn imports this by name in each worker)."""
    from .app import create_app
    configure_logging(os.environ.get(LOG_LEVEL_ENV, "info"))
    return create_app(Settings(**json.loads(os.environ[SETTINGS_ENV])))


def _store(args, create: bool = False):
    """The store of a tokens command; only ``tokens create`` may create an SQLite file (the first
    admin token is made before the service ever ran), the others refuse a store that is not there."""
    from .store import open_store
    return open_store(_settings(args).store, create=create)


def cmd_tokens_create(args) -> int:
    from . import tokens
    token_id, token = tokens.create(_store(args, create=True), args.scope or [], args.name)
    print(json.dumps({"id": token_id, "token": token, "scopes": args.scope, "name": args.name}))
    print("pqforge: the token is shown only now; the store keeps only its hash", file=sys.stderr)
    return 0


def cmd_tokens_list(args) -> int:
    for t in _store(args).list_tokens():
        print(json.dumps({"id": t.id, "name": t.name, "scopes": t.scopes, "revoked": t.revoked,
                          "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t.created))}))
    return 0


def cmd_tokens_revoke(args) -> int:
    if not _store(args).revoke_token(args.id):
        print(f"pqforge: error: no active token {args.id!r}", file=sys.stderr)
        return 2
    print(f"revoked {args.id}")
    return 0


def cmd_bench_serve(args) -> int:
    _require_extra("fastapi", "uvicorn", "prometheus_client", "httpx")
    from ..bench import service as bench
    return bench.main(args)


def _store_options(p) -> None:
    p.add_argument("--store", help="sqlite:///PATH (default sqlite:///pqforge.db) or postgresql://...")
    p.add_argument("--config", help="TOML file with a [serve] table of settings")


def _ranged(name: str):
    """argparse type: a value of the setting ``name`` within its range (``config.RANGES``)."""
    def parse(text: str):
        try:
            value = float(text) if name in FRACTIONAL else int(text)
        except ValueError:
            value = None
        if not in_range(name, value):
            raise argparse.ArgumentTypeError(f"expected {expected(name)}, got {text!r}")
        return value
    return parse


def _list_of(parse):
    """argparse type: comma-separated values, each read by ``parse``."""
    def parse_list(text: str) -> list:
        return [parse(part) for part in text.split(",")]
    return parse_list


def add_parser(sub) -> None:
    from ..cli import positive_float, positive_int
    s = sub.add_parser("serve", help="run the HTTP signing / verification / KEM service")
    _store_options(s)
    s.add_argument("--host", help="address to listen on (default 127.0.0.1: loopback only)")
    s.add_argument("--port", type=_ranged("port"), help="port, 1 to 65535 (default 8000; 0: any free port)")
    s.add_argument("--backend", choices=["auto", "cpu", "cuda"], help="batch backend (default cpu)")
    s.add_argument("--max-batch", type=_ranged("max_batch"),
                   help="flush a queue at this many requests, %d to %d (default 256)" % RANGES["max_batch"])
    s.add_argument("--max-wait-ms", type=_ranged("max_wait_ms"),
                   help="... or when its oldest request waited this long, %d to %d (default 0: at once)"
                        % RANGES["max_wait_ms"])
    s.add_argument("--master-key-file", help="master key file (mode 0600; created when absent; default beside "
                                             "the SQLite file). PQFORGE_MASTER_KEY (base64) takes precedence")
    s.add_argument("--public-verify", action="store_true", help="let anyone verify, without a token")
    s.add_argument("--workers", type=_ranged("workers"),
                   help="server processes sharing the port, %d to %d (default 1)" % RANGES["workers"])
    s.add_argument("--ssl-certfile", help="TLS certificate (PEM); with --ssl-keyfile serves https")
    s.add_argument("--ssl-keyfile", help="TLS private key (PEM)")
    s.add_argument("--drain-timeout", type=_ranged("drain_timeout"), default=30.0,
                   help="seconds SIGTERM waits for requests in flight, %d to %d (default 30)" % RANGES["drain_timeout"])
    s.add_argument("--access-log", action="store_true", help="log every request")
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    s.add_argument("--ray", action="store_true", help="deploy on Ray Serve instead (needs the ray extra)")
    s.set_defaults(func=cmd_serve)

    tok = sub.add_parser("tokens", help="API tokens of the service").add_subparsers(dest="tokens_command",
                                                                                     required=True)
    s = tok.add_parser("create", help="create a token and print it once")
    _store_options(s)
    s.add_argument("--scope", action="append", help="admin, verify, kem, sign:* or sign:KEY_ID (repeatable)")
    s.add_argument("--name", help="a label for the token")
    s.set_defaults(func=cmd_tokens_create)
    s = tok.add_parser("list", help="list tokens (never their secrets)")
    _store_options(s)
    s.set_defaults(func=cmd_tokens_list)
    s = tok.add_parser("revoke", help="revoke a token by id")
    _store_options(s)
    s.add_argument("id")
    s.set_defaults(func=cmd_tokens_revoke)

    s = sub.add_parser("bench-serve", help="load-test the service on loopback next to the library's sign_many")
    s.add_argument("--alg", default="MAYO-2")
    s.add_argument("--concurrency", type=_list_of(positive_int), default="1,16,64",
                   help="client counts (comma-separated)")
    s.add_argument("--max-batch", type=_list_of(_ranged("max_batch")), default="64,256",
                   help="max_batch settings (comma-separated)")
    s.add_argument("--max-wait-ms", type=_list_of(_ranged("max_wait_ms")), default="0",
                   help="max_wait_ms settings (comma-separated)")
    s.add_argument("--requests", type=positive_int, default=4000, help="requests per measurement (bound)")
    s.add_argument("--seconds", type=positive_float, default=10.0, help="time limit per measurement")
    s.add_argument("--many", type=positive_int, default=256, help="messages per sign-many / verify-many request")
    s.add_argument("--many-clients", type=positive_int, default=4,
                   help="clients sending sign-many / verify-many requests at once (default 4)")
    s.add_argument("--backend", choices=["auto", "cpu", "cuda"], default="cpu")
    s.add_argument("--workers", type=_ranged("workers"), default=1, help="server processes (default 1)")
    s.add_argument("--load", choices=["auto", "wrk", "python"], default="auto",
                   help="single-message load generator: wrk (when installed: auto) or this Python process")
    s.set_defaults(func=cmd_bench_serve)
