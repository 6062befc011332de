"""The HTTP endpoint: a small HTTP/1.1 server on asyncio streams, on the topology's own
event loop, answering GET and HEAD with ``routes.Routes``.

It needs no web framework: requests are a request line and headers (bodies are not
expected and at most ``MAX_BODY`` bytes are read past), connections are kept alive as
HTTP/1.1 says, and an idle connection is closed after ``IDLE_TIMEOUT`` seconds. A request
it cannot read gets a 400 and the connection closes; any other method gets a 405.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from functools import partial
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlsplit

from engine.observe.routes import Response, Routes

if TYPE_CHECKING:
    from engine.observe.observer import Topologies

__all__ = ["HttpServer", "serve"]

log = logging.getLogger(__name__)

IDLE_TIMEOUT = 75.0
"""Seconds a kept-alive connection may wait for its next request."""
MAX_HEADERS = 100
MAX_BODY = 1 << 20

_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            413: "Content Too Large", 500: "Internal Server Error",
            503: "Service Unavailable"}


class _BadRequest(Exception):
    """The request cannot be read; answered with ``status`` and the connection closed."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


async def _read_request(reader: asyncio.StreamReader
                        ) -> tuple[str, str, str, dict[str, str]] | None:
    """Method, target, version and headers (names lower-cased) of the next request, or
    None at a clean end of the connection."""
    try:
        line = await reader.readline()
        while line in (b"\r\n", b"\n"):  # blank lines before a request are allowed
            line = await reader.readline()
        if not line:
            return None
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise _BadRequest(f"malformed request line {line[:80]!r}")
        headers: dict[str, str] = {}
        while (header := await reader.readline()) not in (b"\r\n", b"\n", b""):
            name, colon, value = header.decode("latin-1").partition(":")
            if not colon or len(headers) >= MAX_HEADERS:
                raise _BadRequest("malformed or too many header lines")
            headers[name.strip().lower()] = value.strip()
    except ValueError as exc:  # a line past the stream's limit (64 KiB)
        raise _BadRequest(f"request line or header too long: {exc}") from None
    if "chunked" in headers.get("transfer-encoding", ""):
        raise _BadRequest("a request body is not expected")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise _BadRequest("malformed Content-Length") from None
    if length > MAX_BODY:
        raise _BadRequest("a request body is not expected", 413)
    if length > 0:
        await reader.readexactly(length)
    return parts[0], parts[1], parts[2], headers


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
        return Response(405, "text/plain; charset=utf-8", b"405: Method Not Allowed")
    url = urlsplit(target)
    segments = [unquote(s) for s in url.path.lstrip("/").split("/")]
    try:
        return routes.respond(segments, dict(parse_qsl(url.query)))
    except Exception:
        log.exception("HTTP endpoint: %s %s failed", method, target)
        return Response(500, "text/plain; charset=utf-8", b"500: Internal Server Error")


async def _connection(routes: Routes, open_writers: set[asyncio.StreamWriter],
                      reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    open_writers.add(writer)
    try:
        while True:
            try:
                # A timeout scope, not wait_for: no task per request, so no extra turn of a
                # busy loop before the request is read.
                async with asyncio.timeout(IDLE_TIMEOUT):
                    request = await _read_request(reader)
            except _BadRequest as exc:
                text = f"{exc.status}: {exc}".encode()
                writer.write(_encode(Response(exc.status, "text/plain; charset=utf-8", text),
                                     keep_alive=False, head=False))
                await writer.drain()
                return
            if request is None:
                return
            method, target, version, headers = request
            answer = _answer(routes, method, target)
            keep_alive = _keep_alive(version, headers)
            writer.write(_encode(answer, keep_alive=keep_alive, head=method == "HEAD"))
            await writer.drain()
            if not keep_alive:
                return
    except (TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        pass  # idle too long, or the client went away: nothing to answer
    finally:
        open_writers.discard(writer)
        writer.close()


class HttpServer:
    """A running endpoint: ``host``, ``port`` (the bound one) and ``await close()``."""

    def __init__(self, server: asyncio.Server, sampler: asyncio.Task[None],
                 open_writers: set[asyncio.StreamWriter], host: str, port: int) -> None:
        self._server = server
        self._sampler = sampler
        self._open_writers = open_writers
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        """``http://host:port/``."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/"

    async def close(self) -> None:
        """Stop listening, close open connections and release the socket; idempotent."""
        self._server.close()
        for writer in list(self._open_writers):
            writer.close()
        self._sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._sampler
        await self._server.wait_closed()


async def serve(cluster: Topologies, host: str = "127.0.0.1", port: int = 0) -> HttpServer:
    """Serve ``cluster``'s endpoint on ``host:port`` (0: a free port) in this event loop."""
    routes = Routes(cluster)
    open_writers: set[asyncio.StreamWriter] = set()
    server = await asyncio.start_server(partial(_connection, routes, open_writers),
                                        host, port)
    sampler = asyncio.get_running_loop().create_task(routes.observer.run(),
                                                     name="stormloop-http-sampler")
    bound = server.sockets[0].getsockname()
    return HttpServer(server, sampler, open_writers, host, int(bound[1]))
