"""What a ``KafkaSpout`` is configured with besides its arguments: the consumer's defaults
and refused options, the failed-topic producer's options, and the spout's counters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connectors.kafka import client_options
from connectors.kafka.retry import Backoff

__all__ = ["DEFAULT_FAILED_MAX_BYTES", "DEFAULT_MAX_BACKOFF_SECS", "KafkaSpoutMetrics", "backoff",
           "consumer_config", "producer_config"]

DEFAULT_MAX_BACKOFF_SECS = 30.0
"""The longest wait between retries when ``retry_backoff_secs`` gives only the first."""

_CONSUMER_DEFAULTS: dict[str, Any] = {
    "enable_auto_commit": False,
    "auto_offset_reset": "earliest",  # as storm-kafka-client's UNCOMMITTED_EARLIEST
    # A fetch for partitions with nothing new waits this long at the broker, and the
    # consumer sends no other fetch to that broker meanwhile: a partition resumed (the
    # spout pauses one at its cap, or all while its buffer is full) waits for that
    # answer. Kafka's 500 ms stalled a busy partition behind idle ones.
    "fetch_max_wait_ms": 100,
}

_FORBIDDEN = {
    "enable_auto_commit": "the spout commits only what is done; auto commit would lose records",
    "key_deserializer": "use value_format; the spout decodes so bad records reach failed_topic",
    "value_deserializer": "use value_format; the spout decodes so bad records reach failed_topic",
    "group_instance_id": "every task would share it and fence the others; set "
                         "topology.worker.id and each task gets its own (docs/scaling.md)",
}

DEFAULT_FAILED_MAX_BYTES = 1_048_576 - 1024
"""Largest failed record by default: aiokafka's default ``max_request_size`` less room for
the batch and record headers around the JSON."""


@dataclass(slots=True)
class KafkaSpoutMetrics:
    """Counters of one ``KafkaSpout`` instance (``spout.counters``), shared by all its
    tasks (each task is a copy of the spout); per-task figures come from ``metrics()``."""

    retried: int = 0
    """Re-emits after a fail."""
    failed_records: int = 0
    """Records written to ``failed_topic`` (given up, or undecodable)."""
    decode_failures: int = 0
    """Records whose key or value did not decode with ``value_format``."""
    dropped: int = 0
    """Records given up with no ``failed_topic`` set (logged, offset done, as Storm)."""
    halted: str | None = None
    """Why a task of the spout halted (dead-letter limit, unwritable failed topic), or None."""


def consumer_config(consumer_options: Mapping[str, Any]) -> dict[str, Any]:
    """The spout's consumer defaults overlaid with the user's options (theirs win)."""
    for key, why in _FORBIDDEN.items():
        if key in consumer_options and not (key == "enable_auto_commit"
                                            and not consumer_options[key]):
            raise ValueError(f"KafkaSpout: consumer option {key!r} is not supported: {why}")
    return {**_CONSUMER_DEFAULTS, **consumer_options}


def producer_config(consumer_options: Mapping[str, Any]) -> dict[str, Any]:
    """Options of the failed-topic producer: the consumer's connection and security ones."""
    return client_options.build(client_options.shared(consumer_options), {"acks": "all"},
                                "KafkaSpout failed-topic producer")


def backoff(retry_backoff_secs: Any, max_retries: int) -> Backoff:
    """The retry schedule ``retry_backoff_secs`` asks for: a number is the first wait,
    doubling up to 30 s (or that number, if larger); a pair is ``(initial, maximum)``.
    Anything else raises ``ValueError`` with one line naming the option."""
    value = retry_backoff_secs
    if _is_number(value):
        return Backoff(float(value), max(float(value), DEFAULT_MAX_BACKOFF_SECS), max_retries)
    if isinstance(value, (tuple, list)) and len(value) == 2 and all(map(_is_number, value)):
        return Backoff(float(value[0]), float(value[1]), max_retries)
    raise ValueError(f"KafkaSpout: retry_backoff_secs must be a number of seconds (the first "
                     f"wait, doubling up to {DEFAULT_MAX_BACKOFF_SECS:g} s) or a pair "
                     f"(initial, maximum), got {value!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
