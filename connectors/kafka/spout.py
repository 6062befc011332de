"""``KafkaSpout``: one tracked tuple per Kafka record, at least once (docs/kafka.md); the
consumer behind it is ``consumer_spout.ConsumerSpout``. What it adds is the repartition hop:
a fields grouping downstream of it crosses processes through a Kafka topic
(``repartition.py``) under ``topology.workers`` > 1.
"""

from __future__ import annotations

from connectors.kafka.consumer_spout import ConsumerSpout, KafkaSpoutMetrics
from connectors.kafka.repartition import hop
from connectors.kafka.spout_options import consumer_config, producer_config
from engine import Bolt, Spout

__all__ = ["KafkaSpout", "KafkaSpoutMetrics", "consumer_config", "producer_config"]


class KafkaSpout(ConsumerSpout):
    """Consumer-group subscription to ``topics``; emits ``fields`` of each record.

    ``fields`` are taken from the record: any of ``topic``, ``partition``, ``offset``,
    ``key``, ``value``, ``timestamp``, ``headers``. ``retry_backoff_secs`` is the wait
    before the first retry (doubling up to 30 s) or a pair ``(initial, maximum)``.
    Keywords beyond Storm's spout:
    ``max_uncommitted_offsets`` (per partition, pause above it; by default 250,000, so
    that the engine's in-flight limit, not this, paces a spout whose acks wait for a
    checkpoint: with 10,000 a four-partition spout ran at 40,000 trees per round),
    ``commit_interval_secs`` (periodic commit; the spout also commits once
    ``topology.max.spout.pending`` offsets are ready, see ``commits.py``), ``buffer_size``
    (records fetched ahead), ``dead_letter_limit`` (a ``DeadLetterLimit``; off by
    default), ``failed_max_bytes`` (largest failed record, by default the producer's
    ``max_request_size`` less 1 KiB), ``log_throttle_secs``, ``outage_after_secs`` and
    ``revoke_drain_secs`` (how long a rebalance lets the records emitted from the
    partitions it takes complete before their commit). Everything else is passed to
    ``AIOKafkaConsumer`` (SASL/SSL included, see ``client_options``) and overrides the
    spout's defaults.
    """

    def repartition_hop(self, receiver: str, key_fields: tuple[str, ...],
                        fields: tuple[str, ...]) -> tuple[Bolt, Spout]:
        """The writer bolt and reader spout that carry a fields grouping into ``receiver``
        across processes, through the topic ``<group_id>-<receiver>-repartition``."""
        return hop(self, receiver, key_fields, fields)
