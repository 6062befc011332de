"""Repartition keys and their partitions: the grouping fields' key bytes, and Kafka's
default partitioner with a memo. The hop's writer uses both; a stateful bolt behind the hop
finds a tuple's input partition with the same two."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from connectors.kafka.repartition_codec import key_bytes
from engine.murmur2 import default_partition

__all__ = ["KeyPartitions", "StrKeys", "record_key"]


class KeyPartitions:
    """Kafka's default partitioner (murmur2 of the key), remembering the partition of up to
    ``size`` recent keys: grouping keys repeat, and the hash is the writer's largest cost."""

    __slots__ = ("_count", "_memo", "_size")

    def __init__(self, size: int = 1 << 16) -> None:
        self._memo: dict[bytes, int] = {}
        self._count = 0
        self._size = size

    def __call__(self, key: bytes, all_partitions: list[int], available: list[int]) -> int:
        """The partition of ``key`` among ``all_partitions``, as Kafka's producer picks it."""
        if len(all_partitions) != self._count:
            self._memo.clear()
            self._count = len(all_partitions)
        partition = self._memo.get(key)
        if partition is None:
            if len(self._memo) >= self._size:
                self._memo.clear()
            partition = self._memo[key] = default_partition(key, all_partitions, available)
        return partition


class StrKeys:
    """The partition and key bytes of the common grouping value, one str, remembered for up
    to ``size`` values while the topic's partition count stays (``recount``): the writer and
    the bolt behind the hop look each word up once instead of encoding and hashing it."""

    __slots__ = ("_count", "_size", "known")

    def __init__(self, size: int = 1 << 16) -> None:
        self.known: dict[str, tuple[int, bytes]] = {}
        """``value -> (partition, key bytes)``; read it directly in a loop."""
        self._count = -1
        self._size = size

    def recount(self, count: int) -> None:
        """The topic has ``count`` partitions: forget every partition if that changed."""
        if count != self._count:
            self.known.clear()
            self._count = count

    def learn(self, value: str, partition_of: Callable[[bytes], int]) -> tuple[int, bytes]:
        """``value``'s partition (``partition_of`` its UTF-8 key bytes) and key bytes,
        remembered from now on."""
        known = self.known
        if len(known) >= self._size:
            known.clear()
        key = value.encode("utf-8")
        found = known[value] = (partition_of(key), key)
        return found


def record_key(values: Sequence[Any], at: Sequence[int]) -> bytes:
    """The repartition key of a tuple's ``values``: the grouping fields at ``at``; the same
    bytes for the writer's values and the reader's decoded ones (``key_bytes``)."""
    return key_bytes(values, at)
