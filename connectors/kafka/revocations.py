"""Revoked partitions, told to the components of this process that keep state per partition.

A ``KafkaSpout`` calls ``revoked(group, partitions)`` while its group rebalances, before it
commits and hands the partitions over; each callback ``subscribe``d for that group and
topic is awaited, so that what it keeps for a partition is put away before the partition's
next owner starts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiokafka import TopicPartition

__all__ = ["revoked", "subscribe", "unsubscribe"]

Callback = Callable[[list[int]], Awaitable[None]]
_callbacks: dict[tuple[str, str], list[Callback]] = {}


def subscribe(group: str, topic: str, callback: Callback) -> None:
    """Call ``callback(partitions)`` when ``group`` gives up partitions of ``topic``."""
    _callbacks.setdefault((group, topic), []).append(callback)


def unsubscribe(group: str, topic: str, callback: Callback) -> None:
    """Stop calling ``callback``."""
    callbacks = _callbacks.get((group, topic), [])
    if callback in callbacks:
        callbacks.remove(callback)


async def revoked(group: str, tps: Iterable[TopicPartition]) -> None:
    """``group`` gives up ``tps``: await every callback of their topics."""
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    for topic, partitions in by_topic.items():
        for callback in list(_callbacks.get((group, topic), ())):
            await callback(sorted(partitions))
