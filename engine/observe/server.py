"""The HTTP endpoint: a small HTTP/1.1 server on asyncio streams, on the topology's own
event loop, answering GET and HEAD with ``routes.Routes``.

It needs no web framework: requests are read by ``http_request`` (a request it cannot
read gets a 400 and the connection closes; any other method than GET and HEAD a 405), and
connections are kept alive as HTTP/1.1 says. Bounds, so that slow or many clients cannot
hold the endpoint (or ``/healthz``) up:

- a kept-alive connection may wait ``IDLE_TIMEOUT`` seconds for its next request, and a
  request must be whole ``HEAD_TIMEOUT`` seconds after its first byte (a client sending
  its headers a byte at a time is dropped then); a response must be taken within
  ``SEND_TIMEOUT`` seconds;
- at most ``max_connections`` connections are open (``MAX_CONNECTIONS`` unless told):
  one more is answered 503 and closed at once;
- the listening socket queues ``BACKLOG`` connections not yet accepted, so a burst of
  connections waits in the kernel instead of being dropped (a dropped SYN costs the client
  a 1 s retransmit), and every waiting connection is accepted at once (``listener``).

Lines for an operator (on ``engine.observe.server``, one per minute per kind): the
connection limit reached, and clients dropped for a slow request head.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlsplit

from engine.log_throttle import IntervalWarning
from engine.observe.http_request import BadRequest, Request, read_request
from engine.observe.listener import Listener
from engine.observe.routes import Response, Routes

if TYPE_CHECKING:
    from engine.observe.observer import Topologies

__all__ = ["HttpServer", "serve"]

log = logging.getLogger(__name__)

IDLE_TIMEOUT = 75.0
"""Seconds a kept-alive connection may wait for its next request."""
HEAD_TIMEOUT = 5.0
"""Seconds from a request's first byte until it is read whole."""
SEND_TIMEOUT = 30.0
"""Seconds a client may take to take a response in."""
MAX_CONNECTIONS = 1000
"""Connections open at once, unless ``serve`` is told otherwise."""
BACKLOG = 1024
"""Connections the kernel queues before they are accepted."""

_TEXT = "text/plain; charset=utf-8"
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            413: "Content Too Large", 500: "Internal Server Error",
            503: "Service Unavailable"}


def _encode(answer: Response, *, keep_alive: bool, head: bool) -> bytes:
    lines = [f"HTTP/1.1 {answer.status} {_REASONS.get(answer.status, 'Unknown')}",
             f"Content-Type: {answer.content_type}",
             f"Content-Length: {len(answer.body)}",
             "Connection: keep-alive" if keep_alive else "Connection: close"]
    if answer.status == 405:
        lines.append("Allow: GET, HEAD")
    head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head_bytes if head else head_bytes + answer.body


def _keep_alive(version: str, headers: dict[str, str]) -> bool:
    connection = headers.get("connection", "").lower()
    if version == "HTTP/1.0":
        return "keep-alive" in connection
    return "close" not in connection


def _answer(routes: Routes, method: str, target: str) -> Response:
    """The response to one request."""
    if method not in ("GET", "HEAD"):
        return Response(405, _TEXT, b"405: Method Not Allowed")
    url = urlsplit(target)
    segments = [unquote(s) for s in url.path.lstrip("/").split("/")]
    try:
        return routes.respond(segments, dict(parse_qsl(url.query)))
    except Exception:
        log.exception("HTTP endpoint: %s %s failed", method, target)
        return Response(500, _TEXT, b"500: Internal Server Error")


class _Connections:
    """What every connection of one server shares: the routes, the open connections and
    the operator lines; ``handle`` serves one connection to its end."""

    def __init__(self, routes: Routes, max_connections: int) -> None:
        self.routes = routes
        self.max_connections = max_connections
        self.open: set[asyncio.StreamWriter] = set()
        self._full = IntervalWarning(log, 60.0)  # one line a minute per kind
        self._slow = IntervalWarning(log, 60.0)
        self._closed = False

    def close(self) -> None:
        """Close every open connection, and any connection handed over from now on."""
        self._closed = True
        for writer in list(self.open):
            writer.close()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Serve requests on one connection until it closes, fails or times out."""
        if self._closed:
            writer.close()
            return
        if len(self.open) >= self.max_connections:
            self._full.warn("HTTP endpoint", "%d connections open, the limit; new ones are "
                            "answered 503 (raise max_connections, or look for clients "
                            "holding connections)", len(self.open))
            writer.write(_encode(Response(503, _TEXT, b"503: too many connections"),
                                 keep_alive=False, head=False))
            writer.close()
            return
        self.open.add(writer)
        try:
            while (request := await self._next_request(reader, writer)) is not None:
                answer = _answer(self.routes, request.method, request.target)
                keep_alive = _keep_alive(request.version, request.headers)
                await _send(writer, _encode(answer, keep_alive=keep_alive,
                                            head=request.method == "HEAD"))
                if not keep_alive:
                    return
        except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
            pass  # too slow, or the client went away: nothing to answer
        finally:
            self.open.discard(writer)
            writer.close()

    async def _next_request(self, reader: asyncio.StreamReader,
                            writer: asyncio.StreamWriter) -> Request | None:
        """The next request, or None when the connection is to close without one."""
        started = False
        try:
            # A timeout scope, not wait_for: no task per request, so no extra turn of a
            # busy loop before the request is read.
            async with asyncio.timeout(IDLE_TIMEOUT) as deadline:
                first = await reader.read(1)
                if not first:
                    return None
                started = True
                deadline.reschedule(asyncio.get_running_loop().time() + HEAD_TIMEOUT)
                return await read_request(reader, first)
        except BadRequest as exc:
            text = f"{exc.status}: {exc}".encode()
            await _send(writer, _encode(Response(exc.status, _TEXT, text), keep_alive=False,
                                        head=False))
            return None
        except TimeoutError:
            if started:
                self._slow.warn("HTTP endpoint", "a request not whole %.0f s after its "
                                "first byte (from %s); connection closed", HEAD_TIMEOUT,
                                writer.get_extra_info("peername"))
            return None


async def _send(writer: asyncio.StreamWriter, data: bytes) -> None:
    writer.write(data)
    async with asyncio.timeout(SEND_TIMEOUT):
        await writer.drain()


class HttpServer:
    """A running endpoint: ``host``, ``port`` (the bound one) and ``await close()``."""

    def __init__(self, listener: Listener, sampler: asyncio.Task[None],
                 connections: _Connections, host: str, port: int) -> None:
        self._listener = listener
        self._sampler = sampler
        self._connections = connections
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        """``http://host:port/``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def close(self) -> None:
        """Stop listening, close open connections and release the socket; idempotent."""
        self._listener.close()
        self._connections.close()
        self._sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sampler
        await self._listener.wait_closed()


async def serve(cluster: Topologies, host: str = "127.0.0.1", port: int = 0, *,
                show_errors: bool = False, max_connections: int = MAX_CONNECTIONS
                ) -> HttpServer:
    """Serve ``cluster``'s endpoint on ``host:port`` (0: a free port) in this event loop.

    ``show_errors``: serve the text and traceback of the components' errors (by default
    only their exception type, ``Routes``); ``max_connections``: connections open at once.
    """
    if max_connections < 1:
        raise ValueError(f"serve_http: max_connections must be >= 1, got {max_connections}")
    routes = Routes(cluster, show_errors=show_errors)
    connections = _Connections(routes, max_connections)
    listener = await Listener.bind(host, port, BACKLOG, connections.handle)
    sampler = asyncio.get_running_loop().create_task(routes.observer.run(),
                                                     name="stormloop-http-sampler")
    bound = listener.sockets[0].getsockname()
    return HttpServer(listener, sampler, connections, host, int(bound[1]))
