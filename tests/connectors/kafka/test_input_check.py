"""A Kafka spout's input checked at start, on the test broker: a misspelt topic (created by
the broker on subscribe) and a topic with no record are one WARNING line each; a topic of
one batch (ListOffsets "latest" answers 1 for its 3 records here) holds records."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition

from connectors.kafka import KafkaSpout
from connectors.kafka.input_check import idle_reason
from engine import Config, LocalCluster, TopologyBuilder
from engine.testing import CaptureBolt
from tests.connectors.kafka.helpers import FAST_GROUP, high_watermarks, produce, unique


async def _run_until_checked(bootstrap: str, topic: str, tasks: int = 2) -> None:
    """Run a spout of ``tasks`` tasks on ``topic`` until its input check finished."""
    b = TopologyBuilder()
    b.set_spout("kafka", KafkaSpout(topic, bootstrap, unique("g"), **FAST_GROUP), tasks)
    b.set_bolt("sink", CaptureBolt()).shuffle_grouping("kafka")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config(), b.create_topology())
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 15
        while any(t.get_name().startswith("kafka-input-check") for t in asyncio.all_tasks()):
            assert loop.time() < deadline, "the input check never ended"
            await asyncio.sleep(0.05)
        await cluster.kill_topology("t", wait_secs=1)


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name == "connectors.kafka" and r.levelno == logging.WARNING]


async def test_a_misspelt_topic_is_one_warning_naming_the_partitions_made(
        kafka_broker, caplog: pytest.LogCaptureFixture) -> None:
    real = unique("sentences")
    await kafka_broker.create_topic(real, 1)
    typo = real.replace("sentences", "sentencs")
    with caplog.at_level(logging.WARNING, "connectors.kafka"):
        await _run_until_checked(kafka_broker.bootstrap, typo)
    lines = _warnings(caplog)
    assert len(lines) == 1, lines  # two tasks, one line
    assert lines[0].startswith(
        f"KafkaSpout 'kafka': topic {typo!r} did not exist at start (the broker created it "
        f"on subscribe with 4 partitions): is the name right? (topics on the broker: ["), lines
    assert repr(real) in lines[0]


async def test_an_empty_topic_is_one_warning(kafka_broker,
                                             caplog: pytest.LogCaptureFixture) -> None:
    topic = unique("empty")
    await kafka_broker.create_topic(topic, 2)
    with caplog.at_level(logging.WARNING, "connectors.kafka"):
        await _run_until_checked(kafka_broker.bootstrap, topic)
    lines = _warnings(caplog)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"KafkaSpout 'kafka': topic {topic!r} exists (2 partitions) "
                               f"but holds no record: the spout emits nothing until one is "
                               f"written (topics on the broker: ["), lines


async def test_a_topic_of_one_batch_holds_records(
        kafka_broker, caplog: pytest.LogCaptureFixture) -> None:
    topic, bootstrap = unique("one-batch"), kafka_broker.bootstrap
    await kafka_broker.create_topic(topic, 1)
    await produce(bootstrap, topic, [(None, b"%d" % i) for i in range(3)], partition=0)
    tp = TopicPartition(topic, 0)
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap)
    await consumer.start()
    try:  # this broker's ListOffsets "latest": the last batch's base offset plus one
        assert (await consumer.beginning_offsets([tp]), await consumer.end_offsets([tp])) == (
            {tp: 0}, {tp: 1})
    finally:
        await consumer.stop()
    assert (await high_watermarks(bootstrap, topic)) == {0: 3}
    with caplog.at_level(logging.WARNING, "connectors.kafka"):
        await _run_until_checked(bootstrap, topic)
    assert _warnings(caplog) == []


@pytest.mark.parametrize(("args", "expected"), [
    (("t", True, 2, {0: (0, 5), 1: (0, 0)}), None),
    (("t", True, 2, {0: (7, 7), 1: (0, 0)}), "topic 't' exists (2 partitions) but holds no "
                                             "record: the spout emits nothing until one is "
                                             "written"),
    (("t", True, 2, None), None),  # not known: no claim
    (("t", False, None, None), "topic 't' did not exist at start (the broker has not created "
                               "it): is the name right?"),
])
def test_idle_reason(args: tuple[Any, ...], expected: str | None) -> None:
    assert idle_reason(*args) == expected
