"""Repartition keys and their partitions: the grouping fields' key bytes, and Kafka's
default partitioner with a memo. The hop's writer uses both; a stateful bolt behind the hop
finds a tuple's input partition with the same two."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from connectors.kafka.repartition_codec import key_bytes
from engine.murmur2 import default_partition

__all__ = ["KeyPartitions", "record_key"]


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


def record_key(values: Sequence[Any], at: Sequence[int]) -> bytes:
    """The repartition key of a tuple's ``values``: the grouping fields at ``at``; the same
    bytes for the writer's values and the reader's decoded ones (``key_bytes``)."""
    return key_bytes(values, at)
