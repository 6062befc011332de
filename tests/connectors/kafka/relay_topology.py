"""A relay for the process-level tests: Kafka topic → (optionally slow) bolt → Kafka topic.

    python -m engine run tests/connectors/kafka/relay_topology.py \\
        --conf kafka.bootstrap.servers=HOST:PORT --conf relay.source=IN --conf relay.sink=OUT \\
        --conf relay.group=G [--conf relay.delay.secs=0.002]

Each record's key and value are written unchanged to the sink, so a test can tell exactly
which inputs reached the output and how often.
"""

from __future__ import annotations

import asyncio
from typing import Any

from connectors.kafka import KafkaBolt, KafkaSpout
from engine import BasicBolt, Config, Topology, TopologyBuilder

CONF: dict[str, Any] = {
    "relay.delay.secs": 0.0,
    "topology.max.spout.pending": 200,
    "topology.message.timeout.secs": 10,
}


class Relay(BasicBolt):
    """Re-emits ``(key, value)``, after ``delay`` seconds."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["key", "value"])

    async def execute(self, tup: Any, collector: Any) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)
        collector.emit([tup["key"], tup["value"]])


def build(conf: Config) -> Topology:
    """Source → relay (2 tasks) → sink, with a fast-joining consumer group."""
    bootstrap = str(conf["kafka.bootstrap.servers"])
    spout = KafkaSpout(str(conf["relay.source"]), bootstrap, str(conf["relay.group"]),
                       value_format="bytes", commit_interval_secs=0.2,
                       session_timeout_ms=2000, heartbeat_interval_ms=250,
                       auto_offset_reset="earliest")
    builder = TopologyBuilder()
    builder.set_spout("source", spout)
    builder.set_bolt("relay", Relay(float(conf["relay.delay.secs"])), 2).shuffle_grouping(
        "source")
    builder.set_bolt("sink", KafkaBolt(str(conf["relay.sink"]), bootstrap, key_field="key",
                                       value_field="value", value_format="bytes"),
                     2).shuffle_grouping("relay")
    return builder.create_topology()
