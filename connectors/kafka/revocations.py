"""Partitions assigned and revoked, told to the components of this process that keep state
per partition; partitions held back while their state is restored.

A ``KafkaSpout`` calls ``revoked(group, partitions)`` while its group rebalances, before it
commits and hands the partitions over, and ``assigned(group, partitions)`` once it tracks
new ones; each callback ``subscribe``d for that group and topic is awaited, so that what
it keeps for a partition is put away before the partition's next owner starts.
``hold_back``/``release`` mark partitions whose state is being restored: the spout does not
fetch them meanwhile (``held_back``), so their records do not pile up as pending trees.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiokafka import TopicPartition

__all__ = ["assigned", "held_back", "hold_back", "release", "revoked", "subscribe",
           "unsubscribe"]

Callback = Callable[[list[int]], Awaitable[None]]
_callbacks: dict[tuple[str, str, str], list[Callback]] = {}
_held: dict[str, set[TopicPartition]] = {}


def subscribe(group: str, topic: str, callback: Callback, event: str = "revoked") -> None:
    """Call ``callback(partitions)`` when ``group`` gives up (``event`` "revoked") or gets
    ("assigned") partitions of ``topic``."""
    _callbacks.setdefault((group, topic, event), []).append(callback)


def unsubscribe(group: str, topic: str, callback: Callback, event: str = "revoked") -> None:
    """Stop calling ``callback``."""
    callbacks = _callbacks.get((group, topic, event), [])
    if callback in callbacks:
        callbacks.remove(callback)


async def revoked(group: str, tps: Iterable[TopicPartition]) -> None:
    """``group`` gives up ``tps``: await every callback of their topics."""
    await _tell(group, tps, "revoked")


async def assigned(group: str, tps: Iterable[TopicPartition]) -> None:
    """``group`` got ``tps``: await every callback of their topics."""
    await _tell(group, tps, "assigned")


async def _tell(group: str, tps: Iterable[TopicPartition], event: str) -> None:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    for topic, partitions in by_topic.items():
        for callback in list(_callbacks.get((group, topic, event), ())):
            await callback(sorted(partitions))


def hold_back(group: str, tp: TopicPartition) -> None:
    """Do not fetch ``tp`` in ``group`` until ``release``."""
    _held.setdefault(group, set()).add(tp)


def release(group: str, tp: TopicPartition) -> None:
    """Fetch ``tp`` again."""
    _held.get(group, set()).discard(tp)


def held_back(group: str) -> set[TopicPartition]:
    """The partitions ``group``'s spouts in this process must not fetch now."""
    return _held.get(group, set())
