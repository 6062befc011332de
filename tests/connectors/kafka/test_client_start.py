"""A client whose start fails or is cancelled is closed: nothing is left for aiokafka to
report as unclosed at exit. Real sockets, no broker: a refused port, and a listener that
never answers."""

from __future__ import annotations

import asyncio
import gc
import socket
import warnings
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError

from connectors.kafka.client_start import started

CLIENTS = [AIOKafkaProducer, AIOKafkaConsumer]  # the two that check, at exit, they were closed


def unclosed_after(run: Callable[[], Coroutine[Any, Any, None]]) -> list[str]:
    """What aiokafka reports unclosed once ``run`` is over and its objects are gone."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        asyncio.run(run())
        gc.collect()
    return [str(w.message) for w in caught if "Unclosed" in str(w.message)]


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda k: k.__name__)
def test_a_refused_start_raises_and_leaves_nothing_open(kind: type) -> None:
    async def run() -> None:
        with pytest.raises(KafkaConnectionError):
            await started(kind(bootstrap_servers="127.0.0.1:1", request_timeout_ms=2000))

    assert unclosed_after(run) == []


@pytest.mark.parametrize("kind", CLIENTS, ids=lambda k: k.__name__)
def test_a_cancelled_start_leaves_nothing_open(kind: type) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)

    async def run() -> None:
        client = kind(bootstrap_servers=f"127.0.0.1:{silent.getsockname()[1]}")
        starting = asyncio.ensure_future(started(client))
        await asyncio.sleep(0.2)
        assert not starting.done(), "the listener answered: nothing to cancel"
        starting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await starting

    try:
        assert unclosed_after(run) == []
    finally:
        silent.close()
