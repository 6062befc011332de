"""Fetcher.ack_many: offsets done, commit points moved once per partition, late acks ignored."""

from __future__ import annotations

from aiokafka import AIOKafkaConsumer, TopicPartition

from connectors.kafka.fetcher import Fetcher, Partition, Pending
from connectors.kafka.offsets import PartitionOffsets


async def _nothing(parts: list[Partition]) -> None:
    return None


def _fetcher(max_uncommitted: int = 100) -> Fetcher:
    # The consumer is never started: acks only touch the fetcher's own bookkeeping.
    consumer = AIOKafkaConsumer(bootstrap_servers="localhost:1", enable_auto_commit=False)
    return Fetcher(consumer, lambda record: [record], lambda *args: None, _nothing,
                   max_uncommitted=max_uncommitted, max_buffer=100, commit_interval=1.0)


def _track(fetcher: Fetcher, tp: TopicPartition, offsets: list[int]) -> Partition:
    part = Partition(tp, PartitionOffsets(offsets[0]))
    fetcher.parts[tp] = part
    assert part.offsets is not None
    part.offsets.track_many(offsets)
    for offset in offsets:
        part.records[offset] = Pending((tp.topic, tp.partition, offset), [offset], None)
    return part


async def test_acks_across_partitions_move_each_commit_point() -> None:
    fetcher = _fetcher()
    a = _track(fetcher, TopicPartition("t", 0), list(range(10)))
    b = _track(fetcher, TopicPartition("t", 1), list(range(5, 10)))
    fetcher.ack_many([("t", 0, 1), ("t", 1, 5), ("t", 0, 0), ("t", 1, 7), ("t", 0, 3)])
    assert a.offsets is not None and b.offsets is not None
    assert (a.offsets.committable, a.offsets.inflight) == (2, 7)
    assert (b.offsets.committable, b.offsets.inflight) == (6, 3)
    assert sorted(a.records) == [2, 4, 5, 6, 7, 8, 9]
    fetcher.ack_many([("t", 0, 1), ("t", 0, 2)])  # 1 again: ignored
    assert (a.offsets.committable, a.offsets.inflight) == (4, 6)


async def test_late_acks_for_revoked_or_unfetched_partitions_are_ignored() -> None:
    fetcher = _fetcher()
    live = _track(fetcher, TopicPartition("t", 0), [0, 1])
    # Taken back by a rebalance and assigned again before anything was fetched.
    fetcher.parts[TopicPartition("t", 1)] = Partition(TopicPartition("t", 1), None)
    fetcher.ack_many([("t", 1, 5), ("t", 2, 0), ("t", 0, 0)])
    assert live.offsets is not None and live.offsets.committable == 1


async def test_a_paused_partition_wakes_the_fetch_loop_once_under_its_cap() -> None:
    fetcher = _fetcher(max_uncommitted=3)
    part = _track(fetcher, TopicPartition("t", 0), [0, 1, 2, 3])
    part.paused = True
    fetcher.ack_many([("t", 0, 1)])  # not the head: nothing committable yet
    assert not fetcher.wake.is_set()
    fetcher.ack_many([("t", 0, 0)])
    assert fetcher.wake.is_set()


