"""The key store: keys (public halves in clear, secret halves sealed), API tokens (hashes only)
and the audit trail, on SQLite (one WAL file) or PostgreSQL (psycopg 3), behind one interface.

Every method is blocking; the app calls them from worker threads. A database error that means
"the store is not reachable" (locked, disk full, server down) becomes StoreUnavailable and the
next call reconnects, so the service recovers by itself when the store comes back.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from dataclasses import dataclass

from ..errors import InvalidInput, PQForgeError


class StoreUnavailable(PQForgeError):
    """The database cannot be reached or written just now."""


@dataclass
class KeyRecord:
    id: str
    alg: str
    kind: str
    public_key: bytes
    created: float
    state: str               # enabled | disabled | destroyed
    label: str | None = None

    def public_dict(self) -> dict:
        return {"id": self.id, "alg": self.alg, "kind": self.kind, "created": self.created,
                "state": self.state, "label": self.label}


@dataclass
class TokenRecord:
    id: str
    name: str | None
    scopes: list[str]
    created: float
    revoked: bool


_SCHEMA = [
    """CREATE TABLE IF NOT EXISTS keys (
        id TEXT PRIMARY KEY, alg TEXT NOT NULL, kind TEXT NOT NULL, label TEXT,
        public_key {blob} NOT NULL, sealed_secret {blob}, created DOUBLE PRECISION NOT NULL,
        state TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS tokens (
        id TEXT PRIMARY KEY, secret_hash TEXT NOT NULL, name TEXT, scopes TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL, revoked INTEGER NOT NULL DEFAULT 0)""",
    """CREATE TABLE IF NOT EXISTS audit (
        id {serial}, time DOUBLE PRECISION NOT NULL, token_id TEXT, key_id TEXT NOT NULL,
        operation TEXT NOT NULL, message_sha256 TEXT)""",
]
_KEY_COLUMNS = "id, alg, kind, public_key, created, state, label"


class Store:
    """SQL shared by both databases; subclasses say how to connect and which errors mean 'down'."""

    placeholder = "?"
    blob = "BLOB"
    serial = "INTEGER PRIMARY KEY AUTOINCREMENT"
    unavailable_errors: tuple = ()

    def __init__(self, url: str):
        self.url = url
        self._lock = threading.Lock()
        self._conn = None

    # --- connection handling -------------------------------------------------------------------
    def _connect(self):
        raise NotImplementedError

    def _run(self, fn):
        """Run ``fn(connection)`` in one transaction, under the lock; map outages to StoreUnavailable."""
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = self._connect()
                    self._create_schema(self._conn)
                return self._transaction(self._conn, fn)
            except self.unavailable_errors as exc:
                self._drop_connection()
                raise StoreUnavailable(f"the key store is unavailable: {type(exc).__name__}") from None

    def _transaction(self, conn, fn):
        raise NotImplementedError

    def _drop_connection(self):
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # already broken; nothing more to release
                pass
            self._conn = None

    def close(self):
        with self._lock:
            self._drop_connection()

    def exposed_mode(self) -> int | None:
        """The mode of the store's file when group or others may read or write it, else None."""
        return None

    def _sql(self, text: str) -> str:
        return text.replace("?", self.placeholder)

    def _create_schema(self, conn):
        def create(cur):
            for statement in _SCHEMA:
                cur.execute(statement.format(blob=self.blob, serial=self.serial))
        self._transaction(conn, create)

    def _execute(self, sql: str, params=()):
        def go(cur):
            cur.execute(self._sql(sql), params)
            return cur.fetchall() if cur.description else cur.rowcount
        return self._run(go)

    # --- operations ----------------------------------------------------------------------------
    def ping(self) -> None:
        self._execute("SELECT 1")

    def add_key(self, record: KeyRecord, sealed_secret: bytes) -> None:
        self._execute(f"INSERT INTO keys ({_KEY_COLUMNS}, sealed_secret) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                      (record.id, record.alg, record.kind, record.public_key, record.created,
                       record.state, record.label, sealed_secret))

    @staticmethod
    def _key(row) -> KeyRecord:
        return KeyRecord(row[0], row[1], row[2], bytes(row[3]), row[4], row[5], row[6])

    def get_key(self, key_id: str) -> KeyRecord | None:
        rows = self._execute(f"SELECT {_KEY_COLUMNS} FROM keys WHERE id = ?", (key_id,))
        return self._key(rows[0]) if rows else None

    def sealed_secret(self, key_id: str) -> bytes | None:
        rows = self._execute("SELECT sealed_secret FROM keys WHERE id = ? AND state != 'destroyed'", (key_id,))
        return bytes(rows[0][0]) if rows and rows[0][0] is not None else None

    def list_keys(self, limit: int, after: str | None = None) -> list[KeyRecord]:
        """Keys in id order, at most ``limit``, starting after the id ``after`` (keyset pagination)."""
        rows = self._execute(f"SELECT {_KEY_COLUMNS} FROM keys WHERE id > ? ORDER BY id LIMIT ?",
                             (after or "", int(limit)))
        return [self._key(r) for r in rows]

    def key_algorithms(self) -> list[str]:
        return [r[0] for r in self._execute("SELECT DISTINCT alg FROM keys WHERE state = 'enabled'")]

    def set_key_state(self, key_id: str, state: str) -> bool:
        """Disable a key, or destroy it: the sealed secret is overwritten, then set to NULL."""
        if state == "destroyed":
            def destroy(cur):
                cur.execute(self._sql("UPDATE keys SET sealed_secret = ? WHERE id = ? AND sealed_secret IS NOT NULL"),
                            (b"\0" * 64, key_id))
                cur.execute(self._sql("UPDATE keys SET sealed_secret = NULL, state = 'destroyed' WHERE id = ?"),
                            (key_id,))
                return cur.rowcount
            return self._run(destroy) > 0
        return self._execute("UPDATE keys SET state = ? WHERE id = ? AND state = 'enabled'", (state, key_id)) > 0

    def add_token(self, token_id: str, secret_hash: str, name: str | None, scopes: list[str]) -> None:
        self._execute("INSERT INTO tokens (id, secret_hash, name, scopes, created, revoked) VALUES (?, ?, ?, ?, ?, 0)",
                      (token_id, secret_hash, name, json.dumps(scopes), time.time()))

    def token_hash(self, token_id: str) -> tuple[str, list[str]] | None:
        """The stored hash and scopes of a token that is not revoked."""
        rows = self._execute("SELECT secret_hash, scopes FROM tokens WHERE id = ? AND revoked = 0", (token_id,))
        return (rows[0][0], json.loads(rows[0][1])) if rows else None

    def list_tokens(self) -> list[TokenRecord]:
        rows = self._execute("SELECT id, name, scopes, created, revoked FROM tokens ORDER BY created")
        return [TokenRecord(r[0], r[1], json.loads(r[2]), r[3], bool(r[4])) for r in rows]

    def revoke_token(self, token_id: str) -> bool:
        return self._execute("UPDATE tokens SET revoked = 1 WHERE id = ? AND revoked = 0", (token_id,)) > 0

    def audit(self, rows: list[tuple]) -> None:
        """Append (time, token_id, key_id, operation, message_sha256) rows in one transaction."""
        if rows:
            self._run(lambda cur: cur.executemany(
                self._sql("INSERT INTO audit (time, token_id, key_id, operation, message_sha256) VALUES (?, ?, ?, ?, ?)"),
                rows))

    def audit_rows(self, key_id: str | None = None) -> list[tuple]:
        if key_id is None:
            return self._execute("SELECT time, token_id, key_id, operation, message_sha256 FROM audit ORDER BY id")
        return self._execute("SELECT time, token_id, key_id, operation, message_sha256 FROM audit "
                             "WHERE key_id = ? ORDER BY id", (key_id,))


class SqliteStore(Store):
    def __init__(self, url: str, create: bool = True):
        super().__init__(url)
        import sqlite3
        self._sqlite3 = sqlite3
        self.path = url[len("sqlite:///"):]
        self.create = create
        # "database is locked", "disk I/O error", "database or disk is full", unable to open
        self.unavailable_errors = (sqlite3.OperationalError,)

    def exposed_mode(self) -> int | None:
        try:
            mode = stat.S_IMODE(os.stat(self.path).st_mode)
        except FileNotFoundError:
            return None
        return mode if mode & 0o077 else None

    def _create_file(self) -> None:
        """Create the database file with mode 0600 before SQLite opens it: it holds sealed secrets,
        token hashes and the audit trail. SQLite gives its -wal and -shm files the same mode."""
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:   # another process created it first
            pass
        except OSError as exc:
            raise self._sqlite3.OperationalError(f"cannot create {self.path}: {exc.strerror}") from None

    def _connect(self):
        if not os.path.exists(self.path):
            if not self.create:
                raise InvalidInput(f"no store at {self.path} (pqforge serve or pqforge tokens create creates it)")
            self._create_file()
        conn = self._sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=5.0)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")   # an acknowledged key survives a crash
        conn.execute("PRAGMA secure_delete=ON")   # freed pages (old sealed secrets) are zeroed
        return conn

    def set_key_state(self, key_id: str, state: str) -> bool:
        changed = super().set_key_state(key_id, state)
        if state == "destroyed":   # move the pages into the database file (zeroed there) and empty the WAL
            self._run_outside_transaction("PRAGMA wal_checkpoint(TRUNCATE)")
        return changed

    def _run_outside_transaction(self, sql: str) -> None:
        with self._lock:
            try:
                if self._conn is None:
                    self._conn = self._connect()
                self._conn.execute(sql)
            except self.unavailable_errors:
                self._drop_connection()
                raise StoreUnavailable("the key store is unavailable") from None

    def _transaction(self, conn, fn):
        cur = conn.cursor()
        cur.execute("BEGIN IMMEDIATE")
        try:
            result = fn(cur)
        except BaseException:
            cur.execute("ROLLBACK")
            raise
        cur.execute("COMMIT")
        return result


class PostgresStore(Store):
    placeholder = "%s"
    blob = "BYTEA"
    serial = "BIGSERIAL PRIMARY KEY"

    def __init__(self, url: str):
        super().__init__(url)
        try:
            import psycopg
        except ImportError:
            raise InvalidInput("a postgresql:// store needs psycopg 3: pip install 'pqforge[serve]'") from None
        self._psycopg = psycopg
        self.unavailable_errors = (psycopg.OperationalError, psycopg.errors.AdminShutdown,
                                   psycopg.InterfaceError)

    def _connect(self):
        return self._psycopg.connect(self.url, connect_timeout=5, autocommit=True)

    def _transaction(self, conn, fn):
        with conn.transaction(), conn.cursor() as cur:
            return fn(cur)


def check_store_url(url: str) -> None:
    """Refuse a store URL that names no database this module can open."""
    if url.startswith(("postgresql://", "postgres://")):
        return
    if not url.startswith("sqlite:///"):
        raise InvalidInput(f"store must be sqlite:///PATH or postgresql://..., got {url.split(':', 1)[0]}:...")
    path = url[len("sqlite:///"):]
    if not path or path.endswith(("/", os.sep)):
        raise InvalidInput(f"store must be sqlite:///PATH with the path of a file, got {url!r}")


def open_store(url: str, create: bool = True) -> Store:
    """The store at ``url``; connecting creates an SQLite file only when ``create``."""
    check_store_url(url)
    if url.startswith("sqlite:///"):
        return SqliteStore(url, create)
    return PostgresStore(url)
