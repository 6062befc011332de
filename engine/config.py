"""Topology configuration: Storm's dotted keys in a ``dict``, checked at submit time."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import ConfigError

__all__ = [
    "TOPOLOGY_ACKER_EXECUTORS",
    "TOPOLOGY_DEBUG",
    "TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE",
    "TOPOLOGY_LOOP_BLOCK_WARN_SECS",
    "TOPOLOGY_MAX_SPOUT_PENDING",
    "TOPOLOGY_MESSAGE_TIMEOUT_SECS",
    "TOPOLOGY_SPOUT_FLOW_CONTROL",
    "TOPOLOGY_STATS_SAMPLE_RATE",
    "TOPOLOGY_TICK_TUPLE_FREQ_SECS",
    "Config",
    "validate_config",
]

TOPOLOGY_MESSAGE_TIMEOUT_SECS = "topology.message.timeout.secs"
TOPOLOGY_ACKER_EXECUTORS = "topology.acker.executors"
TOPOLOGY_MAX_SPOUT_PENDING = "topology.max.spout.pending"
TOPOLOGY_TICK_TUPLE_FREQ_SECS = "topology.tick.tuple.freq.secs"
TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE = "topology.executor.receive.buffer.size"
TOPOLOGY_DEBUG = "topology.debug"
# Adapt each spout task's limit on trees in flight to the complete latency.
TOPOLOGY_SPOUT_FLOW_CONTROL = "topology.spout.flow.control"
TOPOLOGY_STATS_SAMPLE_RATE = "topology.stats.sample.rate"
# Warn when one call holds the event loop longer than this (None: no watchdog).
TOPOLOGY_LOOP_BLOCK_WARN_SECS = "topology.loop.block.warn.secs"

DEFAULTS: dict[str, Any] = {
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30,
    TOPOLOGY_ACKER_EXECUTORS: 1,
    TOPOLOGY_MAX_SPOUT_PENDING: None,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS: None,
    # Counted in tuples (a batch larger than this still enters an empty queue).
    TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE: 4096,
    TOPOLOGY_SPOUT_FLOW_CONTROL: True,
    TOPOLOGY_DEBUG: False,
    TOPOLOGY_STATS_SAMPLE_RATE: 0.05,
    TOPOLOGY_LOOP_BLOCK_WARN_SECS: 1.0,
}


class Config(dict[str, Any]):
    """A ``dict`` of Storm's dotted configuration keys, with Storm's setters."""

    def set_message_timeout_secs(self, secs: float) -> None:
        """Fail trees not completed within ``secs``."""
        self[TOPOLOGY_MESSAGE_TIMEOUT_SECS] = secs

    def set_num_ackers(self, n: int) -> None:
        """Run ``n`` acker executors; 0 acks every spout tuple right after its emit."""
        self[TOPOLOGY_ACKER_EXECUTORS] = n

    def set_max_spout_pending(self, n: int | None) -> None:
        """Stop calling ``next_tuple`` on a spout task while it has ``n`` trees pending."""
        self[TOPOLOGY_MAX_SPOUT_PENDING] = n

    def set_debug(self, debug: bool) -> None:
        """Log every emitted tuple (slow; for debugging)."""
        self[TOPOLOGY_DEBUG] = debug

    def set_tick_tuple_freq_secs(self, secs: float | None) -> None:
        """Deliver a tick tuple to every bolt task each ``secs`` seconds."""
        self[TOPOLOGY_TICK_TUPLE_FREQ_SECS] = secs


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


def _int_at_least(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


_CHECKS: dict[str, tuple[Callable[[Any], bool], str, bool]] = {
    # key: (check, what is valid, None allowed)
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: (_positive_number, "a number of seconds > 0", False),
    TOPOLOGY_ACKER_EXECUTORS: (_int_at_least(0), "an int >= 0", False),
    TOPOLOGY_MAX_SPOUT_PENDING: (_int_at_least(1), "an int >= 1 or None", True),
    TOPOLOGY_TICK_TUPLE_FREQ_SECS: (_positive_number, "a number of seconds > 0 or None", True),
    TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE: (_int_at_least(1), "an int >= 1", False),
    TOPOLOGY_DEBUG: (lambda v: isinstance(v, bool), "True or False", False),
    TOPOLOGY_SPOUT_FLOW_CONTROL: (lambda v: isinstance(v, bool), "True or False", False),
    TOPOLOGY_STATS_SAMPLE_RATE: (
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1,
        "a number from 0 to 1", False),
    TOPOLOGY_LOOP_BLOCK_WARN_SECS: (_positive_number, "a number of seconds > 0 or None", True),
}


def validate_config(conf: Mapping[str, Any], where: str = "topology") -> dict[str, Any]:
    """Return ``DEFAULTS`` overlaid with ``conf``; raise ``ConfigError`` naming a bad key."""
    merged = dict(DEFAULTS)
    merged.update(conf)
    for key, (check, valid, nullable) in _CHECKS.items():
        value = merged[key]
        if value is None and nullable:
            continue
        if not check(value):
            raise ConfigError(f"{where}: config {key!r} must be {valid}, got {value!r}")
    return merged
