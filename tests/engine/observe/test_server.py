"""The endpoint's own HTTP/1.1 server: keep-alive, HEAD, and clear answers to requests it
does not serve, over a raw socket."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from engine import LocalCluster

ROOT = Path(__file__).resolve().parents[3]


async def _exchange(port: int, *requests: bytes) -> list[bytes]:
    """Send ``requests`` on one connection; the raw bytes read after each until the
    response is complete (its Content-Length read) or the server closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    answers = []
    try:
        for request in requests:
            writer.write(request)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length:")), 0)
            body = b"" if b"HEAD" in request[:4] else await reader.readexactly(length)
            answers.append(head + body)
    finally:
        writer.close()
    return answers


async def test_one_connection_serves_several_requests_and_head_has_no_body() -> None:
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        try:
            first, head, second = await _exchange(
                server.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                b"HEAD /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                b"GET /api/v1/topologies?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        finally:
            await server.close()
    assert first.startswith(b"HTTP/1.1 200 OK\r\n") and first.endswith(b"\r\n\r\nok\n")
    assert b"Connection: keep-alive" in first
    assert head.startswith(b"HTTP/1.1 200 OK\r\n") and head.endswith(b"\r\n\r\n")
    assert b"Content-Length: 3" in head
    assert b"application/json" in second and second.endswith(b'{"topologies":[]}')


async def test_unknown_path_method_and_garbage_get_clear_answers() -> None:
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        try:
            [missing] = await _exchange(server.port, b"GET /nope HTTP/1.1\r\n\r\n")
            [post] = await _exchange(server.port, b"POST /metrics HTTP/1.1\r\n"
                                                  b"Content-Length: 2\r\n\r\nhi")
            [garbage] = await _exchange(server.port, b"hello there\r\n\r\n")
            [bad_window] = await _exchange(server.port,
                                           b"GET /api/v1/topology/x?window=7 HTTP/1.1\r\n\r\n")
            [old] = await _exchange(server.port, b"GET /healthz HTTP/1.0\r\n\r\n")
        finally:
            await server.close()
    assert missing.startswith(b"HTTP/1.1 404 ")
    assert post.startswith(b"HTTP/1.1 405 ") and b"Allow: GET, HEAD" in post
    assert garbage.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in garbage
    assert bad_window.startswith(b"HTTP/1.1 400 ") and b'"error"' in bad_window
    assert b"Connection: close" in old


async def test_close_ends_open_connections_and_frees_the_port() -> None:
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        await server.close()
        assert await asyncio.wait_for(reader.read(), 5) == b""  # closed by the server
        writer.close()
        again = await cluster.serve_http(port=server.port)
        await again.close()
        await server.close()  # idempotent


_WITHOUT_AIOHTTP = """
import asyncio, sys
from urllib.request import urlopen
sys.modules["aiohttp"] = None  # as if it were not installed
from engine import LocalCluster

async def main():
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        body = await asyncio.to_thread(lambda: urlopen(server.url + "healthz").read())
        await server.close()
        try:
            cluster.http_app()
        except ModuleNotFoundError as exc:
            print(body.decode().strip(), "|", exc)

asyncio.run(main())
"""


def test_the_endpoint_serves_without_aiohttp_and_http_app_says_what_it_needs() -> None:
    out = subprocess.run([sys.executable, "-c", _WITHOUT_AIOHTTP], capture_output=True,
                         text=True, timeout=60, check=True, cwd=ROOT).stdout.strip()
    assert out.startswith("ok | http_app() returns an aiohttp application and needs aiohttp")
    assert "pip install 'stormloop[aiohttp]'" in out


async def test_an_idle_connection_is_closed_after_the_idle_timeout(monkeypatch) -> None:
    from engine.observe import server as server_module

    monkeypatch.setattr(server_module, "IDLE_TIMEOUT", 0.05)
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /healthz HTTP/1.1\r\n\r\n")  # and then nothing more
            answer = await asyncio.wait_for(reader.read(), 5)  # the answer, then the close
            assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"ok\n")
            writer.close()
        finally:
            await server.close()
