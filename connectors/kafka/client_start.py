"""Starting an aiokafka client without leaving it open when the start fails.

A ``start()`` that raises (no broker at the address: ``KafkaConnectionError``) or is
cancelled (Ctrl-C while the replay job's writer connects; a start given a timeout) leaves
the client's connections open, and at exit aiokafka's own check reports it:
``Unclosed AIOKafkaProducer`` and the object's repr, two lines after the one that said
what went wrong. ``started`` closes the client before the error goes on.
"""

from __future__ import annotations

import contextlib
from typing import Any, TypeVar

__all__ = ["started"]

Client = TypeVar("Client")


async def started(client: Client) -> Client:
    """``client`` (an aiokafka consumer, producer or admin client), started. If its start
    raises or is cancelled, the client is closed first and the same error goes on."""
    try:
        await client.start()  # type: ignore[attr-defined]
    except BaseException:
        await _close(client)
        raise
    return client


async def _close(client: Any) -> None:
    close = getattr(client, "stop", None) or client.close  # the admin client closes
    with contextlib.suppress(Exception):
        await close()
