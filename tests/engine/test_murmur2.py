"""``engine.murmur2``: Kafka's key hash and default partition, value for value."""

from __future__ import annotations

import os
import random

from aiokafka.partitioner import DefaultPartitioner
from aiokafka.partitioner import murmur2 as reference_murmur2

from engine.murmur2 import default_partition, murmur2


def test_murmur2_matches_the_kafka_clients_for_every_tail_length() -> None:
    rng = random.Random(3)
    for _ in range(5000):
        data = os.urandom(rng.randint(0, 41))
        assert murmur2(data) == reference_murmur2(data)
    assert murmur2(b"") == reference_murmur2(b"")
    assert murmur2(b"\xff" * 64) == reference_murmur2(b"\xff" * 64)


def test_default_partition_is_the_producers_choice() -> None:
    rng = random.Random(5)
    for count in (1, 3, 4, 7, 64):
        partitions = list(range(count))
        for _ in range(300):
            key = os.urandom(rng.randint(1, 24))
            assert (default_partition(key, partitions, partitions)
                    == DefaultPartitioner()(key, partitions, partitions))
