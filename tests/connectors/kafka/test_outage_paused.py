"""A source broker outage while the spout has every partition paused (its pending trees at
the limit, its buffer full) is still one WARNING and one INFO from the spout, with the sink
on a broker of its own that never goes away (so the bolt has nothing to say)."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import pytest

from connectors.kafka import KafkaBolt, KafkaSpout
from connectors.kafka.testing_broker import TestingBroker
from engine import Bolt, Config, LocalCluster, TopologyBuilder
from tests.connectors.kafka.helpers import FAST_GROUP, eventually, read_all
from tests.connectors.kafka.netfault import linked_broker, split_topics

CLIENT = {"request_timeout_ms": 3000, "retry_backoff_ms": 100, "metadata_max_age_ms": 5000}


class Gate(Bolt):
    """Holds every tuple until ``opened`` is set, then passes it on anchored and acks it."""

    def __init__(self, opened: asyncio.Event) -> None:
        self.opened = opened

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    async def execute(self, tup: Any) -> None:
        await self.opened.wait()
        self.collector.emit([tup["key"], tup["value"]], anchors=tup)
        self.collector.ack(tup)


def spout_lines(caplog: Any) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == "connectors.kafka" and r.getMessage().startswith("KafkaSpout")]


def all_paused(cluster: LocalCluster) -> bool:
    tasks = cluster.stats("paused")["metrics"].get("kafka", {})
    parts = [p for task in tasks.values() for p in task["partitions"]]
    return bool(parts) and all(p["paused"] for p in parts)


@pytest.mark.parametrize("fault", ["refuse", "blackhole"])
async def test_a_source_outage_with_every_partition_paused_is_reported(
        kafka_broker: TestingBroker, fault: str, caplog: Any) -> None:
    caplog.set_level(logging.INFO)
    async with linked_broker() as (link, source_broker):
        n = 200
        source_bootstrap, source, sink, group = await split_topics(link, source_broker,
                                                                   kafka_broker, n)
        opened = asyncio.Event()
        builder = TopologyBuilder()
        builder.set_spout("kafka", KafkaSpout(
            source, source_bootstrap, group, buffer_size=10, commit_interval_secs=0.3,
            outage_after_secs=2.0, **FAST_GROUP, **CLIENT))
        builder.set_bolt("gate", Gate(opened)).shuffle_grouping("kafka")
        builder.set_bolt("out", KafkaBolt(sink, kafka_broker.bootstrap, key_field="key",
                                          value_field="value", outage_after_secs=2.0,
                                          **CLIENT)).shuffle_grouping("gate")
        conf = Config()
        conf.set_message_timeout_secs(120)
        conf.set_max_spout_pending(10)
        async with LocalCluster() as cluster:
            await cluster.submit_topology("paused", conf, builder.create_topology())

            async def paused() -> bool:
                return all_paused(cluster)

            await eventually(paused, 30, "every partition of the spout paused")
            getattr(link, fault)()

            async def warned() -> bool:
                return any(level == "WARNING" for level, _ in spout_lines(caplog))

            await eventually(warned, 20, "the spout's outage WARNING")
            link.heal()
            opened.set()

            async def all_acked() -> bool:
                return cluster.stats("paused")["components"]["kafka"]["acked"] >= n

            await eventually(all_acked, 60, f"{n} records through after the outage")

            async def back() -> bool:
                return any(level == "INFO" and "reachable again" in text
                           for level, text in spout_lines(caplog))

            await eventually(back, 20, "the spout's INFO line at the outage's end")
            await cluster.kill_topology("paused", wait_secs=5)
    lines = [(level, text) for level, text in spout_lines(caplog)
             if "partitions" not in text]
    assert [level for level, _ in lines] == ["WARNING", "INFO"], lines
    assert "Kafka broker unreachable" in lines[0][1]
    assert f"bootstrap servers {source_bootstrap})" in lines[0][1]  # the source's, not the sink's
    seconds = float(re.search(r"outage of ([\d.]+) s", lines[1][1])[1])  # type: ignore[index]
    assert 0.5 <= seconds <= 40.0
    bolt = [r for r in caplog.records if r.getMessage().startswith("KafkaBolt")]
    assert not bolt, [r.getMessage() for r in bolt]  # its broker stayed up
    out = await read_all(kafka_broker.bootstrap, sink)
    assert {r.value for r in out} == {b"v%d" % i for i in range(n)}  # nothing lost
