"""Reading one HTTP/1.1 request off a stream: the request line, the headers, and a body
that is read past (the endpoint serves GET and HEAD; a body is not expected).

Every way a client can get the request wrong is a ``BadRequest`` carrying the status to
answer (400, or 413 for a body over ``MAX_BODY``), after which the connection closes. How
long reading may take is the server's business (``server.py``), not this module's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

__all__ = ["MAX_BODY", "MAX_HEADERS", "BadRequest", "Request", "content_length",
           "read_request"]

MAX_HEADERS = 100
MAX_BODY = 1 << 20


class BadRequest(Exception):
    """The request cannot be read; answered with ``status`` and the connection closed."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Request:
    """A request's head: method, target, version and headers (names lower-cased)."""

    method: str
    target: str
    version: str
    headers: dict[str, str]


async def read_request(reader: asyncio.StreamReader, first: bytes) -> Request:
    """The request whose first byte, ``first``, was read already; its body is read past.

    Raises ``BadRequest`` for a malformed head or length, ``IncompleteReadError`` when
    the client goes away within it.
    """
    try:
        line = await _request_line(reader, first)
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            raise BadRequest(f"malformed request line {line[:80]!r}")
        headers = await _headers(reader)
    except ValueError as exc:  # a line past the stream's limit (64 KiB)
        raise BadRequest(f"request line or header too long: {exc}") from None
    if "chunked" in headers.get("transfer-encoding", ""):
        raise BadRequest("a request body is not expected")
    length = content_length(headers)
    if length > 0:
        await reader.readexactly(length)
    return Request(parts[0], parts[1], parts[2], headers)


async def _request_line(reader: asyncio.StreamReader, first: bytes) -> bytes:
    line = first if first == b"\n" else first + await reader.readline()
    while line in (b"\r\n", b"\n"):  # blank lines before a request are allowed
        line = await reader.readline()
    if not line.endswith(b"\n"):
        raise asyncio.IncompleteReadError(line, None)  # the client went away mid-line
    return line


async def _headers(reader: asyncio.StreamReader) -> dict[str, str]:
    headers: dict[str, str] = {}
    while (header := await reader.readline()) not in (b"\r\n", b"\n"):
        if not header.endswith(b"\n"):
            raise asyncio.IncompleteReadError(header, None)
        name, colon, value = header.decode("latin-1").partition(":")
        if not colon or len(headers) >= MAX_HEADERS:
            raise BadRequest("malformed or too many header lines")
        name, value = name.strip().lower(), value.strip()
        if name == "content-length" and headers.get(name, value) != value:
            raise BadRequest("conflicting Content-Length headers")
        headers[name] = value
    return headers


def content_length(headers: dict[str, str]) -> int:
    """The body's length from ``Content-Length`` (0 without one); ``BadRequest`` unless it
    is a plain decimal number (no sign, no spaces inside) of at most ``MAX_BODY``."""
    raw = headers.get("content-length")
    if raw is None:
        return 0
    if not (raw.isascii() and raw.isdigit()):
        raise BadRequest(f"malformed Content-Length {raw[:20]!r}: expected a number of bytes")
    length = int(raw)
    if length > MAX_BODY:
        raise BadRequest("a request body is not expected", 413)
    return length
