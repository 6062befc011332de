"""Kafka spout and bolt on aiokafka with storm-kafka-client semantics (docs/kafka.md).

```python
from connectors.kafka import KafkaBolt, KafkaSpout

b = TopologyBuilder()
b.set_spout("orders", KafkaSpout("orders", "broker:9092", "order-loop",
                                 value_format="json", failed_topic="orders-failed"))
b.set_bolt("enrich", Enrich(), 4).shuffle_grouping("orders")
b.set_bolt("out", KafkaBolt("orders-enriched", "broker:9092", key_field="key",
                            value_field="value", value_format="json"),
           2).shuffle_grouping("enrich")
```

At least once from topic to topic: an input offset is committed only after every tuple of
its tree was acked, and ``KafkaBolt`` acks only what the broker confirmed. Records that
keep failing, or do not decode, end on the failed topic (``failed.py``) for
``scripts/replay_failed.py``. Module map: ``spout.py`` (user-facing spout),
``consumer_spout.py`` (the consumer it is made of, which the repartition hop's reader
shares) and ``spout_options.py``, ``repartition.py`` with ``topics.py`` and ``keys.py`` (the
keyed hop), ``keyed_state.py`` and ``changelog.py`` (state behind it), ``fetcher.py``
(consumer, buffer, rebalance, commits), ``offsets.py`` and ``retry.py`` (pure bookkeeping),
``failed.py`` (the failed record), ``fit.py`` (cutting it to size), ``failed_writer.py``,
``breaker.py`` (dead-letter limit), ``outage.py`` and ``throttle.py`` (outage lines, log
throttling), ``kafka_errors.py``, ``client_options.py`` (options of every Kafka client),
``codec.py``, ``bolt.py``, ``testing_broker.py`` (Tansu for tests).

The spouts and the bolt (and the transactional Kafka spouts of ``transactional.py``) are
imported on first use, so ``connectors.kafka.failed``
(read by the Spark replay job) does not pull in the engine or aiokafka.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.kafka.bolt import KafkaBolt
    from connectors.kafka.spout import KafkaSpout
    from connectors.kafka.transactional import (
        OpaqueTransactionalKafkaSpout,
        TransactionalKafkaSpout,
    )

__all__ = ["KafkaBolt", "KafkaSpout", "OpaqueTransactionalKafkaSpout", "TransactionalKafkaSpout"]

_HOME = {
    "KafkaBolt": "connectors.kafka.bolt",
    "KafkaSpout": "connectors.kafka.spout",
    "OpaqueTransactionalKafkaSpout": "connectors.kafka.transactional",
    "TransactionalKafkaSpout": "connectors.kafka.transactional",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'connectors.kafka' has no attribute {name!r}")
    return getattr(import_module(home), name)
