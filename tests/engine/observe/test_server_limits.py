"""The endpoint under slow, many and malformed clients, over loopback sockets: a request
head has a deadline, open connections a cap, the listen backlog takes a burst and every
waiting connection is accepted at once (uvloop's own server took one per loop turn), a bad
``Content-Length`` is a 400, and ``/healthz`` answers in under a second through it all,
under asyncio and uvloop.

Counts are bounded (200 slow clients, a burst of 700) and every client stops by itself.
"""

from __future__ import annotations

import asyncio
import sys
import time

import pytest
import uvloop

from engine import LocalCluster
from engine.observe import server as server_module
from tests.engine.observe.test_server import _exchange


@pytest.fixture(params=["asyncio", "uvloop"], scope="module")
def event_loop_policy(request: pytest.FixtureRequest) -> asyncio.AbstractEventLoopPolicy:
    """Each test once per event loop (uvloop is the engine's default where installed)."""
    if request.param == "uvloop":
        return uvloop.EventLoopPolicy()
    return asyncio.DefaultEventLoopPolicy()


HEALTHZ = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
ENDLESS_HEAD = b"GET /healthz HTTP/1.1\r\nX-Padding: " + b"a" * 1000  # never finished


async def healthz_secs(port: int) -> float:
    """Seconds for one GET /healthz on a new connection, to the end of the answer."""
    start = time.perf_counter()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(HEALTHZ)
    answer = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200 OK") and answer.endswith(b"ok\n"), answer
    return time.perf_counter() - start


async def slow_client(port: int, every: float, give_up: float) -> float | None:
    """Send a request head a byte every ``every`` seconds, never finishing it; how long
    after the first byte the server closed the connection (None: still open after
    ``give_up`` seconds)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    start = time.perf_counter()
    try:
        for byte in ENDLESS_HEAD[:int(give_up / every)]:
            writer.write(bytes([byte]))
            try:
                if await asyncio.wait_for(reader.read(1), every) == b"":
                    return time.perf_counter() - start
            except TimeoutError:
                continue
        return None
    except ConnectionError:
        return time.perf_counter() - start
    finally:
        writer.close()


async def test_slow_clients_are_dropped_at_the_head_deadline_and_healthz_stays_quick(
        monkeypatch) -> None:
    monkeypatch.setattr(server_module, "HEAD_TIMEOUT", 1.0, raising=False)
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        try:
            slow = [asyncio.ensure_future(slow_client(server.port, 0.1, 6.0))
                    for _ in range(200)]
            await asyncio.sleep(0.2)  # every slow client has begun its head
            probes = []
            while not all(task.done() for task in slow):
                probes.append(await healthz_secs(server.port))
                await asyncio.sleep(0.05)
            dropped = [task.result() for task in slow]
        finally:
            await server.close()
    assert all(d is not None for d in dropped), f"{dropped.count(None)} slow clients held"
    assert all(0.9 <= d < 4.0 for d in dropped), sorted(dropped)  # type: ignore[operator]
    assert max(probes) < 1.0, f"/healthz worst {max(probes):.3f} s over {len(probes)} probes"


@pytest.mark.parametrize("length", [b"-1", b"+5", b"1 2", b"0x10", b"\xd9\xa3"])
async def test_a_bad_content_length_is_a_400(length: bytes) -> None:
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        try:
            [answer] = await _exchange(server.port, b"GET /healthz HTTP/1.1\r\n"
                                       b"Content-Length: " + length + b"\r\n\r\n")
            [twice] = await _exchange(server.port, b"GET /healthz HTTP/1.1\r\n"
                                      b"Content-Length: 1\r\nContent-Length: 2\r\n\r\nxx")
            [good] = await _exchange(server.port, b"GET /healthz HTTP/1.1\r\n"
                                     b"Content-Length: 2\r\n\r\nxx")
        finally:
            await server.close()
    assert answer.startswith(b"HTTP/1.1 400 ") and b"Content-Length" in answer.split(
        b"\r\n\r\n")[1], answer
    assert b"Connection: close" in answer
    assert twice.startswith(b"HTTP/1.1 400 ") and b"conflicting" in twice
    assert good.startswith(b"HTTP/1.1 200 ")


async def test_connections_past_the_cap_get_a_503_until_one_closes(caplog) -> None:
    async with LocalCluster() as cluster:
        server = await cluster.serve_http(max_connections=3)
        try:
            held = [await asyncio.open_connection("127.0.0.1", server.port)
                    for _ in range(3)]
            await asyncio.sleep(0.05)  # accepted
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            refused = await asyncio.wait_for(reader.read(), 5)
            writer.close()
            held[0][1].close()
            await asyncio.sleep(0.05)  # the server saw it close
            secs = await healthz_secs(server.port)
            for _, w in held[1:]:
                w.close()
        finally:
            await server.close()
    assert refused.startswith(b"HTTP/1.1 503 ") and b"Connection: close" in refused
    assert secs < 1.0
    assert any("3 connections open, the limit" in r.getMessage() for r in caplog.records)


_BURST = """
import selectors, socket, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
request = b"GET /healthz HTTP/1.1\\r\\nConnection: close\\r\\n\\r\\n"
sys.stdin.buffer.readline()  # go
selector, socks = selectors.DefaultSelector(), []
for _ in range(n):  # every connect at once: non-blocking, no wait between them
    sock = socket.socket()
    sock.setblocking(False)
    sock.connect_ex(("127.0.0.1", port))
    socks.append(sock)
    selector.register(sock, selectors.EVENT_WRITE)
start = time.perf_counter()
with socket.create_connection(("127.0.0.1", port), timeout=10) as probe:
    pending = n
    while pending and time.perf_counter() - start < 5:  # the burst's requests
        for key, _ in selector.select(0.05):
            key.fileobj.send(request)
            selector.unregister(key.fileobj)
            pending -= 1
    probe.sendall(request)
    answer = b""
    while chunk := probe.recv(4096):
        answer += chunk
took = time.perf_counter() - start
assert answer.endswith(b"ok\\n"), answer
print(took)
"""


async def burst(port: int, n: int, stall: float) -> float:
    """A process of its own opens ``n`` connections at once, each sending GET /healthz,
    while this loop is stalled for ``stall`` seconds; seconds until its /healthz after
    them was answered."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _BURST, str(port), str(n), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    await proc.stdin.drain()
    time.sleep(stall)  # the loop is held while the burst arrives
    out, err = await asyncio.wait_for(proc.communicate(), 60)  # a loaded machine: slow start
    assert proc.returncode == 0, err.decode(errors="replace")[-2000:]
    return float(out)


async def busy(stop: asyncio.Event) -> None:
    """Keep the loop turning with 1 ms of work per step, as executors do under load."""
    while not stop.is_set():
        start = time.perf_counter()
        while time.perf_counter() - start < 0.001:
            pass
        await asyncio.sleep(0)


async def test_a_burst_of_700_connections_on_a_stalled_then_busy_loop_keeps_healthz_quick(
        ) -> None:
    async with LocalCluster() as cluster:
        server = await cluster.serve_http()
        stop = asyncio.Event()
        workers = [asyncio.ensure_future(busy(stop)) for _ in range(3)]
        try:
            took = await burst(server.port, 700, stall=0.2)
        finally:
            stop.set()
            await asyncio.gather(*workers)
            await server.close()
    assert took < 1.0, f"/healthz took {took:.3f} s after a burst of 700"
