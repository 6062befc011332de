"""Topology configuration: Storm's dotted keys in a ``dict``, checked at submit time.

Every ``topology.*`` key must be one this module knows (``known_keys()``): a misspelt one
is rejected with the nearest known key suggested. Other keys pass through untouched for
user code (``wordcount.top``, ``kafka.bootstrap.servers``, ...). Booleans given as text
(``--conf topology.debug=true``) accept ``true``/``false``/``True``/``False``/``1``/``0``.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from engine import sqlite_file
from engine.errors import ConfigError

__all__ = [
    "TOPOLOGY_ACKER_EXECUTORS",
    "TOPOLOGY_BOLT_EXECUTE_TIMEOUT_SECS",
    "TOPOLOGY_DEBUG",
    "TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE",
    "TOPOLOGY_LOOP_BLOCK_WARN_SECS",
    "TOPOLOGY_MAX_SPOUT_PENDING",
    "TOPOLOGY_MESSAGE_TIMEOUT_SECS",
    "TOPOLOGY_NAME",
    "TOPOLOGY_SPOUT_FLOW_CONTROL",
    "TOPOLOGY_SPOUT_MAX_PENDING_BYTES",
    "TOPOLOGY_STATE_ALLOW_EMPTY",
    "TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS",
    "TOPOLOGY_STATE_DIR",
    "TOPOLOGY_STATE_STANDBY_REPLICAS",
    "TOPOLOGY_STATS_SAMPLE_RATE",
    "TOPOLOGY_TICK_TUPLE_FREQ_SECS",
    "TOPOLOGY_WORKERS",
    "TOPOLOGY_WORKER_ID",
    "Config",
    "known_keys",
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
# Stop calling next_tuple on a spout task while its trees in flight hold this many bytes
# of values (None: no bound in bytes; only trees of 1 KiB or more are weighed).
TOPOLOGY_SPOUT_MAX_PENDING_BYTES = "topology.spout.max.pending.bytes"
TOPOLOGY_STATS_SAMPLE_RATE = "topology.stats.sample.rate"
# Warn when one call holds the event loop longer than this (None: no watchdog).
TOPOLOGY_LOOP_BLOCK_WARN_SECS = "topology.loop.block.warn.secs"
TOPOLOGY_STATE_DIR = "topology.state.dir"
TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS = "topology.state.checkpoint.interval.ms"
# Go on with the state a changelog holds when it is gone or behind (deleted, re-created,
# a bolt renamed or added to a running group, the group's offsets lost), instead of
# refusing to start (docs/scaling.md).
TOPOLOGY_STATE_ALLOW_EMPTY = "topology.state.allow.empty"
# Behind a repartition hop: keep caught-up copies of the partitions a process does not own,
# so that a failover reads only the last few changelog records (0: none).
TOPOLOGY_STATE_STANDBY_REPLICAS = "topology.state.standby.replicas"
TOPOLOGY_NAME = "topology.name"
# Cancel an async execute still running after this long (None: the message timeout; 0: never).
TOPOLOGY_BOLT_EXECUTE_TIMEOUT_SECS = "topology.bolt.execute.timeout.secs"
# Processes that run the topology together (one host or several); above 1, fields groupings
# downstream of a shared spout cross processes through Kafka (engine/keyed).
TOPOLOGY_WORKERS = "topology.workers"
# This process's identity in its consumer groups: set, each Kafka consumer is a static member
# (its id derived from this, the component and the task) and keeps its partitions through a
# restart; None, a dynamic member. ``--workers N`` sets it in each worker.
TOPOLOGY_WORKER_ID = "topology.worker.id"

DEFAULTS: dict[str, Any] = {
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: 30,
    TOPOLOGY_ACKER_EXECUTORS: 1,
    TOPOLOGY_MAX_SPOUT_PENDING: None,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS: None,
    # Counted in tuples (a batch larger than this still enters an empty queue).
    TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE: 4096,
    TOPOLOGY_SPOUT_FLOW_CONTROL: True,
    TOPOLOGY_SPOUT_MAX_PENDING_BYTES: 256 * 1024 * 1024,
    TOPOLOGY_DEBUG: False,
    TOPOLOGY_STATS_SAMPLE_RATE: 0.05,
    TOPOLOGY_LOOP_BLOCK_WARN_SECS: 1.0,
    TOPOLOGY_STATE_DIR: sqlite_file.DEFAULT_STATE_DIR,
    TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS: 1000,
    TOPOLOGY_STATE_ALLOW_EMPTY: False,
    TOPOLOGY_STATE_STANDBY_REPLICAS: 0,
    TOPOLOGY_NAME: None,
    TOPOLOGY_BOLT_EXECUTE_TIMEOUT_SECS: None,
    TOPOLOGY_WORKERS: 1,
    TOPOLOGY_WORKER_ID: None,
}

_RESERVED_PREFIX = "topology."
_BOOLEAN_TEXT = {"true": True, "True": True, "1": True, "false": False, "False": False, "0": False}


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

    def set_num_workers(self, n: int) -> None:
        """Run the topology in ``n`` processes (Storm's ``setNumWorkers``)."""
        self[TOPOLOGY_WORKERS] = n

    def set_tick_tuple_freq_secs(self, secs: float | None) -> None:
        """Deliver a tick tuple to every bolt task each ``secs`` seconds."""
        self[TOPOLOGY_TICK_TUPLE_FREQ_SECS] = secs


def _positive_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


_WORKER_ID = re.compile(r"[A-Za-z0-9._-]{1,100}")
_WORKER_ID_VALID = "a name of 1 to 100 letters, digits, '.', '_' or '-', or None"
"""What ``topology.worker.id`` may be (the characters Kafka allows in a group instance id)."""


def _worker_id(value: Any) -> bool:
    if type(value) is int and value >= 0:  # ``--conf topology.worker.id=3`` parses as JSON
        value = str(value)
    return isinstance(value, str) and _WORKER_ID.fullmatch(value) is not None


def _int_at_least(low: int) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= low


_CHECKS: dict[str, tuple[Callable[[Any], bool], str, bool]] = {
    # key: (check, what is valid, None allowed)
    TOPOLOGY_MESSAGE_TIMEOUT_SECS: (_positive_number, "a number of seconds > 0", False),
    TOPOLOGY_ACKER_EXECUTORS: (_int_at_least(0), "an int >= 0", False),
    TOPOLOGY_MAX_SPOUT_PENDING: (_int_at_least(1), "an int >= 1 or None", True),
    TOPOLOGY_TICK_TUPLE_FREQ_SECS: (_positive_number, "a number of seconds > 0 or None", True),
    TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE: (_int_at_least(1), "an int >= 1", False),
    TOPOLOGY_DEBUG: (lambda v: isinstance(v, bool), "true or false (or 1 or 0)", False),
    TOPOLOGY_SPOUT_FLOW_CONTROL: (lambda v: isinstance(v, bool), "true or false (or 1 or 0)",
                                  False),
    TOPOLOGY_SPOUT_MAX_PENDING_BYTES: (_int_at_least(1), "an int of bytes >= 1 or None",
                                       True),
    TOPOLOGY_STATS_SAMPLE_RATE: (
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v <= 1,
        "a number from 0 to 1", False),
    TOPOLOGY_LOOP_BLOCK_WARN_SECS: (_positive_number, "a number of seconds > 0 or None", True),
    TOPOLOGY_STATE_DIR: (lambda v: isinstance(v, str | os.PathLike) and str(v) != "",
                         "a directory path", False),
    TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS: (_int_at_least(1), "an int of ms >= 1", False),
    TOPOLOGY_STATE_ALLOW_EMPTY: (lambda v: isinstance(v, bool), "true or false (or 1 or 0)",
                                 False),
    TOPOLOGY_STATE_STANDBY_REPLICAS: (_int_at_least(0), "an int >= 0", False),
    TOPOLOGY_NAME: (lambda v: isinstance(v, str) and bool(v), "a non-empty string", True),
    TOPOLOGY_BOLT_EXECUTE_TIMEOUT_SECS: (
        lambda v: _positive_number(v) or (type(v) in (int, float) and v == 0),
        "a number of seconds >= 0 or None", True),
    TOPOLOGY_WORKERS: (_int_at_least(1), "an int >= 1", False),
    TOPOLOGY_WORKER_ID: (_worker_id, _WORKER_ID_VALID, True),
}

# Keys whose value is a bool; text and 0/1 are turned into one before the checks.
_BOOLEANS = frozenset({TOPOLOGY_DEBUG, TOPOLOGY_SPOUT_FLOW_CONTROL,
                       TOPOLOGY_STATE_ALLOW_EMPTY})


def known_keys() -> frozenset[str]:
    """Every ``topology.*`` key the engine knows (any other ``topology.*`` key is an error)."""
    return frozenset(DEFAULTS) | frozenset(_CHECKS)


def _as_bool(value: Any) -> Any:
    """``value`` as a bool when it spells one (``"true"``, ``"0"``, ``1``...), else as is."""
    if isinstance(value, str):
        return _BOOLEAN_TEXT.get(value.strip(), value)
    if isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return bool(value)
    return value


def _check_names(conf: Mapping[str, Any], where: str) -> None:
    known = known_keys()
    for key in conf:
        if isinstance(key, str) and key.startswith(_RESERVED_PREFIX) and key not in known:
            # Compared without the shared prefix, which would make every key look close.
            cut = len(_RESERVED_PREFIX)
            near = difflib.get_close_matches(key[cut:], sorted(k[cut:] for k in known), n=1)
            hint = f"; did you mean {_RESERVED_PREFIX + near[0]!r}?" if near else (
                f"; known keys: {', '.join(sorted(known))}")
            raise ConfigError(f"{where}: unknown config key {key!r}{hint}")


def validate_config(conf: Mapping[str, Any], where: str = "topology") -> dict[str, Any]:
    """Return ``DEFAULTS`` overlaid with ``conf`` (booleans normalised); raise
    ``ConfigError`` naming an unknown ``topology.*`` key or a bad value."""
    _check_names(conf, where)
    merged = dict(DEFAULTS)
    merged.update(conf)
    for key in _BOOLEANS:
        merged[key] = _as_bool(merged[key])
    for key, (check, valid, nullable) in _CHECKS.items():
        value = merged[key]
        if value is None and nullable:
            continue
        if not check(value):
            raise ConfigError(f"{where}: config {key!r} must be {valid}, got {value!r}")
    return merged
