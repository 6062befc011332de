"""The whole failure loop on the test broker and a local Spark session.

A running topology's bolt rejects "poison" records until a switch is flipped; after its
retries the KafkaSpout sends them to the failed topic. The replay job puts them back on
the topic the engine consumes and, with the switch flipped, the running engine processes
them: the output topic ends up holding every input record.
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson

from connectors.kafka import KafkaBolt, KafkaSpout
from connectors.spark.job import run_replay
from connectors.spark.replay import ReplayOptions
from engine import BasicBolt, Config, FailedException, LocalCluster, TopologyBuilder
from tests.connectors.kafka.helpers import FAST_GROUP, eventually, high_watermarks, read_all
from tests.connectors.spark.helpers import unique


class Switch:
    """Shared by every task of the gate (set in ``__init__``, so copies share it)."""

    def __init__(self) -> None:
        self.accept_poison = False


class Gate(BasicBolt):
    """Passes ``(key, value)`` on; fails values starting with ``poison`` while the switch is off."""

    def __init__(self, switch: Switch) -> None:
        self.switch = switch

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    def execute(self, tup: Any, collector: Any) -> None:
        if tup["value"].startswith("poison") and not self.switch.accept_poison:
            raise FailedException(f"rejected {tup['value']}")
        collector.emit([tup["key"], tup["value"]])


def _topology(bootstrap: str, source: str, failed: str, output: str, switch: Switch) -> Any:
    builder = TopologyBuilder()
    spout = KafkaSpout(source, bootstrap, unique("engine"), failed_topic=failed, max_retries=2,
                       retry_backoff_secs=(0.05, 0.2), commit_interval_secs=0.5, **FAST_GROUP)
    builder.set_spout("source", spout)
    builder.set_bolt("gate", Gate(switch), 2).shuffle_grouping("source")
    builder.set_bolt("sink", KafkaBolt(output, bootstrap, key_field="key", value_field="value"),
                     2).shuffle_grouping("gate")
    return builder.create_topology()


async def _count(bootstrap: str, topic: str) -> int:
    return sum((await high_watermarks(bootstrap, topic)).values())


async def test_replayed_failures_complete_the_output(kafka_broker, spark) -> None:
    bootstrap = kafka_broker.bootstrap
    source, failed, output = unique("source"), unique("failed"), unique("output")
    for topic in (source, failed, output):
        await kafka_broker.create_topic(topic, 2)
    values = [f"poison-{i}" if i % 20 == 7 else f"ok-{i}" for i in range(100)]
    await _produce(bootstrap, source, values)
    switch, conf = Switch(), Config()
    conf.set_message_timeout_secs(10)
    group = unique("replay")

    async with LocalCluster() as cluster:
        await cluster.submit_topology("loop", conf, _topology(bootstrap, source, failed,
                                                              output, switch))

        async def settled(failures: int, outputs: int) -> bool:
            return (await _count(bootstrap, failed), await _count(bootstrap, output)) == (
                failures, outputs)

        await eventually(lambda: settled(5, 95), 60, "5 failed records and 95 outputs")
        dry = await asyncio.to_thread(
            run_replay, ReplayOptions(bootstrap, failed, group_id=group, dry_run=True), spark)
        assert (dry.read, dry.replayed, await _count(bootstrap, source)) == (5, 5, 100)

        switch.accept_poison = True
        done = await asyncio.to_thread(
            run_replay, ReplayOptions(bootstrap, failed, group_id=group), spark)
        assert (done.read, done.malformed, done.duplicates, done.replayed) == (5, 0, 0, 5)
        assert done.by_topic == {(source, source): 5}
        await eventually(lambda: settled(5, 100), 60, "100 outputs after the replay")

        again = await asyncio.to_thread(
            run_replay, ReplayOptions(bootstrap, failed, group_id=group), spark)
        assert (again.read, again.replayed) == (0, 0)
        await cluster.kill_topology("loop", wait_secs=5)

    assert await _count(bootstrap, source) == 105  # the inputs and the 5 replayed once
    out = await read_all(bootstrap, output)
    assert sorted(r.value.decode() for r in out) == sorted(values)


async def test_records_that_keep_failing_stop_at_max_attempts(kafka_broker, spark) -> None:
    bootstrap = kafka_broker.bootstrap
    source, failed, output = unique("source"), unique("failed"), unique("output")
    for topic in (source, failed, output):
        await kafka_broker.create_topic(topic, 1)
    values = [f"poison-{i}" if i in (3, 8) else f"ok-{i}" for i in range(10)]
    await _produce(bootstrap, source, values)
    switch, conf = Switch(), Config()  # the switch stays off: the bug is never fixed
    conf.set_message_timeout_secs(10)
    group = unique("replay")
    options = ReplayOptions(bootstrap, failed, group_id=group, max_attempts=5)

    async with LocalCluster() as cluster:
        await cluster.submit_topology("loop", conf, _topology(bootstrap, source, failed,
                                                              output, switch))
        await eventually(lambda: _settled(bootstrap, failed, 2), 60, "2 failed records")
        first = await asyncio.to_thread(run_replay, options, spark)
        assert (first.read, first.replayed, first.over_attempts) == (2, 2, 0)
        await eventually(lambda: _settled(bootstrap, failed, 4), 60, "2 failed again")
        second = await asyncio.to_thread(run_replay, options, spark)
        assert (second.read, second.replayed, second.over_attempts) == (2, 0, 2)
        await cluster.kill_topology("loop", wait_secs=5)

    records = [orjson.loads(r.value) for r in await read_all(bootstrap, failed)]
    by_offset: dict[int, list[dict[str, Any]]] = {}
    for rec in records:
        by_offset.setdefault(rec["offset"], []).append(rec)
    assert sorted(by_offset) == [3, 8]  # both failures of a record name its first failure
    for offset, (once, again) in by_offset.items():
        assert (once["attempts"], again["attempts"]) == (3, 6)
        assert (again["topic"], again["partition"]) == (source, 0)
        assert again["replayed_topic"] == source and again["replayed_offset"] >= 10
        assert again["first_failed_at"] == once["failed_at"]
        assert again["reason"] == f"FailedException: rejected poison-{offset}"
    assert await _count(bootstrap, source) == 12  # replayed once, then held back


async def _settled(bootstrap: str, failed: str, failures: int) -> bool:
    return await _count(bootstrap, failed) == failures


async def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    from tests.connectors.kafka.helpers import produce

    await produce(bootstrap, topic, [(f"k{i}".encode(), v.encode())
                                     for i, v in enumerate(values)])
