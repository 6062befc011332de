"""Broker outages through a faulty link: one WARNING when the broker becomes unreachable and
one INFO with the outage's length when it is back, from the spout and from the bolt, for a
refused connection and for a blackhole; nothing is lost."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from connectors.kafka import KafkaBolt, KafkaSpout
from connectors.kafka.testing_broker import TestingBroker
from engine import Config, LocalCluster, TopologyBuilder
from tests.connectors.kafka.helpers import (
    FAST_GROUP,
    Slow,
    eventually,
    produce,
    read_all,
    unique,
)
from tests.connectors.kafka.netfault import FaultyLink, linked_broker

# Short client timeouts so that a blackholed request is given up on within seconds.
CLIENT = {"request_timeout_ms": 3000, "retry_backoff_ms": 100, "metadata_max_age_ms": 5000}


@pytest.fixture
async def link() -> AsyncIterator[tuple[FaultyLink, TestingBroker]]:
    async with linked_broker() as pair:
        yield pair


async def outage_run(link: FaultyLink, broker: TestingBroker, fault: str,
                     caplog: Any, buffer_size: int = 10_000) -> list[tuple[str, str]]:
    bootstrap = f"127.0.0.1:{link.port}"
    source, sink, group = unique("in"), unique("out"), unique("g")
    for topic in (source, sink):
        await broker.create_topic(topic, 1)
    n = 300
    await produce(bootstrap, source, [(b"k%d" % i, b"v%d" % i) for i in range(n)])
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(source, bootstrap, group, commit_interval_secs=0.3,
                                          retry_backoff_secs=(0.2, 1.0), max_retries=1000,
                                          outage_after_secs=2.0, buffer_size=buffer_size,
                                          **FAST_GROUP, **CLIENT))
    builder.set_bolt("slow", Slow(0.02)).shuffle_grouping("kafka")
    builder.set_bolt("out", KafkaBolt(sink, bootstrap, key_field="key", value_field="value",
                                      outage_after_secs=2.0, **CLIENT)).shuffle_grouping("slow")
    conf = Config()
    conf.set_message_timeout_secs(60)
    conf.set_max_spout_pending(50)
    caplog.set_level(logging.INFO)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("outage", conf, builder.create_topology())

        async def started() -> bool:
            return cluster.stats("outage")["components"]["kafka"]["acked"] >= 20

        await eventually(started, 30, "records flowing")
        getattr(link, fault)()

        def said(text: str) -> int:
            return sum(text in r.getMessage() for r in caplog.records
                       if r.name == "connectors.kafka")

        async def both_warned() -> bool:  # the spout and the bolt
            return said("Kafka broker unreachable") >= 2

        await eventually(both_warned, 30, "the clients' outage warnings")
        link.heal()

        async def all_acked() -> bool:
            return cluster.stats("outage")["components"]["kafka"]["acked"] >= n

        await eventually(all_acked, 60, f"{n} records through after the outage")

        async def both_back() -> bool:
            return said("reachable again") >= 2

        await eventually(both_back, 30, "the clients' lines saying the broker is back")
        await cluster.kill_topology("outage", wait_secs=5)
    out = await read_all(bootstrap, sink)
    assert {r.value for r in out} == {b"v%d" % i for i in range(n)}  # nothing lost
    return [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == "connectors.kafka" and r.levelno >= logging.INFO
            and "partitions" not in r.getMessage()]


def check_lines(lines: list[tuple[str, str]], components: list[str]) -> None:
    for who in components:
        mine = [(level, text) for level, text in lines if text.startswith(who)]
        assert [level for level, _ in mine] == ["WARNING", "INFO"], mine
        assert "Kafka broker unreachable" in mine[0][1]
        seconds = float(re.search(r"outage of ([\d.]+) s", mine[1][1])[1])  # type: ignore[index]
        assert 1.0 <= seconds <= 40.0
    assert not [line for line in lines if line[0] in ("ERROR", "CRITICAL")]


async def test_a_refused_broker_is_one_warning_and_one_info_per_client(link, caplog) -> None:
    lines = await outage_run(*link, "refuse", caplog)
    check_lines(lines, ["KafkaSpout 'kafka'", "KafkaBolt 'out'"])
    aiokafka = [r for r in caplog.records if r.name.startswith("aiokafka")]
    assert len(aiokafka) < 40, [r.getMessage() for r in aiokafka]


async def test_a_blackhole_is_detected_and_reported_the_same_way(link, caplog) -> None:
    lines = await outage_run(*link, "blackhole", caplog)
    check_lines(lines, ["KafkaSpout 'kafka'", "KafkaBolt 'out'"])


async def test_a_spout_with_every_partition_paused_reports_the_outage_too(link, caplog) -> None:
    # A buffer of 10 records and 50 pending trees: once the outage fails the bolt's
    # produces, every partition of the spout stays paused and no fetch can go unanswered.
    lines = await outage_run(*link, "refuse", caplog, buffer_size=10)
    check_lines(lines, ["KafkaSpout 'kafka'", "KafkaBolt 'out'"])


@pytest.mark.parametrize("fault", ["refuse", "blackhole"])
async def test_a_bolt_with_nothing_to_send_reports_the_outage_too(link, caplog,
                                                                  fault: str) -> None:
    """The input is empty, so the bolt sends nothing: its own probe still sees the outage,
    one WARNING, and its end, one INFO (a keyed run's writer and sink bolts stop getting
    tuples as soon as their spouts are cut off)."""
    faulty, broker = link
    bootstrap = f"127.0.0.1:{faulty.port}"
    source, sink, group = unique("in"), unique("out"), unique("g")
    for topic in (source, sink):
        await broker.create_topic(topic, 1)
    builder = TopologyBuilder()
    builder.set_spout("kafka", KafkaSpout(source, bootstrap, group, outage_after_secs=2.0,
                                          **FAST_GROUP, **CLIENT))
    builder.set_bolt("out", KafkaBolt(sink, bootstrap, key_field="key", value_field="value",
                                      outage_after_secs=2.0, **CLIENT)).shuffle_grouping("kafka")
    caplog.set_level(logging.INFO)

    def said(text: str) -> int:
        return sum(r.getMessage().startswith("KafkaBolt 'out'") and text in r.getMessage()
                   for r in caplog.records if r.name == "connectors.kafka")

    async with LocalCluster() as cluster:
        await cluster.submit_topology("idle", Config(), builder.create_topology())
        getattr(faulty, fault)()

        async def warned() -> bool:
            return said("Kafka broker unreachable") == 1

        await eventually(warned, 30, "the idle bolt's outage warning")
        faulty.heal()

        async def back() -> bool:
            return said("reachable again") == 1

        await eventually(back, 30, "the idle bolt's line saying the broker is back")
        await cluster.kill_topology("idle", wait_secs=1)
    assert said("Kafka broker unreachable") == 1
