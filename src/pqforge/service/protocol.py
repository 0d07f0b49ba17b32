"""uvicorn's HTTP/1.1 protocol (httptools) with each response leaving in one write.

An ASGI answer is two messages, its head and its body, and uvicorn writes each to the socket at
once: two system calls and two TCP segments per request, which cost the server more than
everything else uvicorn does for a small request (and wake the client twice). Here the writes
made during one pass of the event loop are joined and leave together at its end.
"""

from __future__ import annotations

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
except ImportError:          # uvicorn without httptools: its own choice of protocol
    HttpToolsProtocol = None


class OneWriteTransport:
    """A transport whose writes are held until the end of the current pass of the event loop and
    then written as one; everything else goes straight to the transport it wraps."""

    __slots__ = ("_transport", "_loop", "_pending")

    def __init__(self, transport, loop):
        self._transport, self._loop, self._pending = transport, loop, []

    def write(self, data) -> None:
        if not self._pending:
            self._loop.call_soon(self._flush)
        self._pending.append(data)

    def writelines(self, lines) -> None:
        for data in lines:
            self.write(data)

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self._flush()           # a last answer before "connection: close" still leaves
        self._transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self._transport.abort()

    def get_write_buffer_size(self) -> int:
        return self._transport.get_write_buffer_size() + sum(len(data) for data in self._pending)

    def __getattr__(self, name):
        return getattr(self._transport, name)


if HttpToolsProtocol is not None:
    class OneWriteProtocol(HttpToolsProtocol):
        def connection_made(self, transport) -> None:
            super().connection_made(OneWriteTransport(transport, self.loop))
else:
    OneWriteProtocol = None


def http_protocol():
    """What to give uvicorn as ``http``: the protocol above, or "auto" without httptools."""
    return OneWriteProtocol or "auto"
