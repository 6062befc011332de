"""A TCP relay in front of the test broker that can refuse connections or blackhole them.

Real sockets, real faults: ``refuse()`` closes every relayed connection and every new one at
once (what a stopped broker looks like), ``blackhole()`` keeps connections open and accepted
but stops moving bytes either way (a network that neither resets nor answers), ``heal()``
relays again. The broker must advertise the relay's port, so clients that follow the
metadata keep going through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

from connectors.kafka.testing_broker import TestingBroker


def free_port() -> int:
    """A port free on the loopback interface now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class FaultyLink:
    """Relays ``127.0.0.1:port`` to ``127.0.0.1:target``, with faults on demand."""

    def __init__(self, port: int, target: int) -> None:
        self.port = port
        self.target = target
        self.mode = "pass"
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._moving = asyncio.Event()
        self._moving.set()

    async def start(self) -> None:
        """Listen on ``port``."""
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", self.port)

    async def stop(self) -> None:
        """Close the listener and every relayed connection."""
        self.refuse()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def refuse(self) -> None:
        """Reset every connection now and every new one as it comes."""
        self.mode = "refuse"
        self._moving.set()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()

    def blackhole(self) -> None:
        """Keep connections open but move no byte, either way."""
        self.mode = "blackhole"
        self._moving.clear()

    def heal(self) -> None:
        """Relay again (connections held in the blackhole resume too)."""
        self.mode = "pass"
        self._moving.set()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # Ends quietly when the loop closes under it: asyncio 3.11 logs a relay task
        # that ends cancelled as an "Exception in callback".
        with contextlib.suppress(asyncio.CancelledError):
            await self._relay_until_closed(reader, writer)

    async def _relay_until_closed(self, reader: asyncio.StreamReader,
                                  writer: asyncio.StreamWriter) -> None:
        if self.mode == "refuse":
            writer.transport.abort()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, up_writer}
        await asyncio.gather(self._pump(reader, up_writer), self._pump(up_reader, writer))

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                await self._moving.wait()
                if self.mode == "refuse":
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            with contextlib.suppress(Exception):
                writer.transport.abort()


@contextlib.asynccontextmanager
async def linked_broker() -> AsyncIterator[tuple[FaultyLink, TestingBroker]]:
    """A test broker of its own, reached only through a ``FaultyLink`` it advertises."""
    port = free_port()
    broker = TestingBroker(advertised_port=port)
    link = FaultyLink(port, 0)
    broker.start()
    assert broker.port is not None
    link.target = broker.port
    await link.start()
    try:
        yield link, broker
    finally:
        await link.stop()
        broker.stop()


async def split_topics(link: FaultyLink, source_broker: TestingBroker,
                       sink_broker: TestingBroker, n: int) -> tuple[str, str, str, str]:
    """A source topic (2 partitions, ``n`` records) behind ``link`` and a sink topic on a
    broker of its own: ``(source bootstrap, source, sink, group)``, names unique."""
    from tests.connectors.kafka.helpers import produce, unique

    bootstrap = f"127.0.0.1:{link.port}"
    source, sink, group = unique("in"), unique("out"), unique("g")
    await source_broker.create_topic(source, 2)
    await sink_broker.create_topic(sink, 1)
    await produce(bootstrap, source, [(b"k%d" % i, b"v%d" % i) for i in range(n)])
    return bootstrap, source, sink, group
