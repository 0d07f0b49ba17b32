"""What the private-key objects of both schemes share: ``close()`` and the ``with`` statement.

Each scheme says what closing does to its key (``close``) and how a closed key refuses use
(``_check_open``); the state is ``_closed``, set by each key's ``__init__``.
"""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

Key = TypeVar("Key", bound="ClosablePrivateKey")


class ClosablePrivateKey:
    __slots__ = ()
    _closed: bool

    def _check_open(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    @property
    def closed(self) -> bool:
        """Whether ``close()`` has run (the key cannot be used)."""
        return self._closed

    def __enter__(self: Key) -> Key:
        self._check_open()
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
