"""Kafka's murmur2 hash, the one every Kafka client partitions keyed records by.

It lives with the compiled hot-path modules because a Kafka bolt hashes the key of every
record it writes: as plain Python this hash was the largest single cost of the Kafka
word count's output side.
"""

from __future__ import annotations

from typing import Final

from mypy_extensions import i64

__all__ = ["default_partition", "murmur2"]

_M: Final[i64] = 0x5BD1E995
_MASK: Final[i64] = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 of ``data``, unsigned: the Java client's ``Utils.murmur2`` (and
    ``aiokafka.partitioner.murmur2``) as a number in ``[0, 2**32)``."""
    length: i64 = len(data)
    h: i64 = 0x9747B28C ^ length
    body: i64 = length & ~3
    i: i64 = 0
    # Products stay below 2**63: both factors are under 2**32 and _M under 2**31.
    while i < body:
        k: i64 = (i64(data[i]) | (i64(data[i + 1]) << 8) | (i64(data[i + 2]) << 16)
                  | (i64(data[i + 3]) << 24))
        k = (k * _M) & _MASK
        k ^= k >> 24
        h = ((h * _M) & _MASK) ^ ((k * _M) & _MASK)
        i += 4
    extra = length & 3
    if extra:
        if extra == 3:
            h ^= i64(data[body + 2]) << 16
        if extra >= 2:
            h ^= i64(data[body + 1]) << 8
        h = ((h ^ i64(data[body])) * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    return h ^ (h >> 15)


def default_partition(key: bytes, all_partitions: list[int], available: list[int]) -> int:
    """Kafka's default partition of a keyed record: murmur2 of the key made positive,
    modulo the topic's partition count (``available`` is not consulted, as in Kafka)."""
    return all_partitions[(murmur2(key) & 0x7FFFFFFF) % len(all_partitions)]
