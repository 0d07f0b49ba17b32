"""``pqforge serve``: an HTTP signing, verification and KEM service around the batch API.

Single-message requests for the same (key, operation) are batched dynamically into
``sign_many`` / ``verify_many`` calls; keys live in SQLite or PostgreSQL with the secret halves
sealed under AES-256-GCM; callers authenticate with scoped bearer tokens.

    from pqforge.service import Settings, create_app
    app = create_app(Settings(store="sqlite:///pqforge.db"))

Needs the ``serve`` extra (FastAPI, uvicorn, httpx, prometheus-client, psycopg).
"""

from .config import Settings

__all__ = ["Settings", "create_app"]


def create_app(settings: Settings | None = None, submit=None):
    from .app import create_app as _create_app
    return _create_app(settings or Settings(), submit)
