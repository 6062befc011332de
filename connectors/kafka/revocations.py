"""Partitions assigned and revoked, told to the components of this process that keep state
per partition; partitions held back while their state is restored.

A ``KafkaSpout`` calls ``revoked(group, partitions)`` while its group rebalances, before it
commits and hands the partitions over, and ``assigned(group, partitions)`` once it tracks
new ones; each callback ``subscribe``d for that group and topic is awaited, so that what
it keeps for a partition is put away before the partition's next owner starts.
``hold_back``/``release`` mark partitions whose state is being restored: the spout does not
fetch them meanwhile (``held_back``), so their records do not pile up as pending trees.
``track``/``position``: each spout's fetcher says where a partition it holds stands (its
committed and fetched offsets), which a changelog's records and markers carry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable

from aiokafka import TopicPartition

__all__ = ["assigned", "held_back", "hold_back", "position", "release", "revoked",
           "subscribe", "track", "unsubscribe", "untrack"]

Callback = Callable[[list[int]], Awaitable[None]]
_callbacks: dict[tuple[str, str, str], list[Callback]] = {}
_held: dict[str, set[TopicPartition]] = {}
Lookup = Callable[[TopicPartition], "tuple[int, int] | None"]
_trackers: dict[str, list[Lookup]] = {}


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


def track(group: str, lookup: Lookup) -> None:
    """``lookup(tp)`` tells ``(committed, fetched)`` offsets of partitions a spout of
    ``group`` holds (None for others)."""
    _trackers.setdefault(group, []).append(lookup)


def untrack(group: str, lookup: Lookup) -> None:
    """Stop asking ``lookup``."""
    lookups = _trackers.get(group, [])
    if lookup in lookups:
        lookups.remove(lookup)


def position(group: str, tp: TopicPartition) -> tuple[int, int] | None:
    """``(committed, fetched)``: the input offset the spout of this process that holds
    ``tp`` in ``group`` committed last (or started at), and the one it fetches next; None
    when no spout here holds it."""
    for lookup in _trackers.get(group, ()):
        found = lookup(tp)
        if found is not None:
            return found
    return None
