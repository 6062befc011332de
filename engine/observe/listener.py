"""Listening sockets that take every waiting connection at once.

``asyncio.start_server`` on uvloop accepts one connection per turn of the event loop: on a
loop kept busy by a topology, a burst of 700 connections took 2.4 to 5.7 s to be accepted
(plain asyncio: 0.24 s), and ``/healthz`` waited behind them. Here each listening socket is
watched with ``loop.add_reader``; when it is readable, every connection waiting (up to the
backlog) is accepted in that one callback, wrapped in streams
(``asyncio.open_connection(sock=...)``) and served by ``handle`` in a task of its own.

Binding follows ``loop.create_server``: every address ``host`` resolves to, with
``SO_REUSEADDR`` (and ``IPV6_V6ONLY`` for IPv6). When accepting fails for want of file
descriptors, the socket is left alone for a second (the connections wait in the backlog)
with one WARNING a minute, as asyncio's own server does.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Awaitable, Callable

from engine.log_throttle import IntervalWarning

__all__ = ["Listener"]

log = logging.getLogger("engine.observe.server")

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

_RETRY_SECS = 1.0  # after an accept failed for want of resources


class Listener:
    """Bound, listening sockets serving ``handle``; ``close()`` then ``wait_closed()``."""

    def __init__(self, sockets: list[socket.socket], handle: Handler, backlog: int) -> None:
        self.sockets = sockets
        self._handle = handle
        self._backlog = backlog
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()  # one per connection being served
        self._warnings = IntervalWarning(log, 60.0)
        self._closed = False
        for sock in sockets:
            self._loop.add_reader(sock.fileno(), self._accept_all, sock)

    @classmethod
    async def bind(cls, host: str | None, port: int, backlog: int,
                   handle: Handler) -> Listener:
        """Listen on every address of ``host`` at ``port`` (0: a free port each)."""
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
        sockets: list[socket.socket] = []
        try:
            for family, kind, proto, _, address in dict.fromkeys(infos):
                sock = socket.socket(family, kind, proto)
                sockets.append(sock)
                _listen(sock, address, backlog)
        except OSError:
            for sock in sockets:
                sock.close()
            raise
        return cls(sockets, handle, backlog)

    def _accept_all(self, sock: socket.socket) -> None:
        for _ in range(self._backlog):
            try:
                conn, _ = sock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:  # out of file descriptors or buffers
                self._warnings.warn("HTTP endpoint", "accepting connections failed (%s); "
                                    "trying again in %g s", exc, _RETRY_SECS)
                self._loop.remove_reader(sock.fileno())
                self._loop.call_later(_RETRY_SECS, self._watch_again, sock)
                return
            conn.setblocking(False)
            task = self._loop.create_task(self._serve(conn))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _watch_again(self, sock: socket.socket) -> None:
        if not self._closed:
            self._loop.add_reader(sock.fileno(), self._accept_all, sock)

    async def _serve(self, conn: socket.socket) -> None:
        try:
            reader, writer = await asyncio.open_connection(sock=conn)
        except OSError:
            conn.close()
            return
        await self._handle(reader, writer)

    def close(self) -> None:
        """Stop listening and release the sockets; connections are their handlers' to end."""
        if self._closed:
            return
        self._closed = True
        for sock in self.sockets:
            self._loop.remove_reader(sock.fileno())
            sock.close()

    async def wait_closed(self, timeout: float = 5.0) -> None:
        """Wait up to ``timeout`` seconds for the connections' handlers to end, then cancel
        those still running."""
        if self._tasks:
            _, late = await asyncio.wait(set(self._tasks), timeout=timeout)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)


def _listen(sock: socket.socket, address: tuple[object, ...], backlog: int) -> None:
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if sock.family == socket.AF_INET6 and hasattr(socket, "IPPROTO_IPV6"):
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        raise OSError(exc.errno, f"error while attempting to bind on address "
                                 f"{address!r}: {exc.strerror}") from None
    sock.listen(backlog)
    sock.setblocking(False)
