"""Kafka spout and bolt on aiokafka with storm-kafka-client semantics (api.md §10).

``KafkaSpout`` and ``KafkaBolt`` are imported on first use, so ``connectors.kafka.failed``
(read by the Spark replay job) does not pull in the engine or aiokafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.kafka.bolt import KafkaBolt
    from connectors.kafka.spout import KafkaSpout

__all__ = ["KafkaBolt", "KafkaSpout"]


def __getattr__(name: str) -> Any:
    if name == "KafkaSpout":
        from connectors.kafka.spout import KafkaSpout
        return KafkaSpout
    if name == "KafkaBolt":
        from connectors.kafka.bolt import KafkaBolt
        return KafkaBolt
    raise AttributeError(f"module 'connectors.kafka' has no attribute {name!r}")
