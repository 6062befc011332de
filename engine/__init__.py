"""Apache Storm's reliability model on one asyncio event loop.

Spouts and bolts form a topology; every tuple emitted with a ``msg_id`` starts a tree
tracked by XOR ackers, and the spout hears exactly one of ``ack`` or ``fail`` for it.
"""

from engine import hotpath

hotpath.prefer_source()  # before any hot-path module is imported

# ruff: noqa: E402 (the switch above must run before these imports)

from engine.cluster import LocalCluster
from engine.collector import BasicOutputCollector, OutputCollector
from engine.components import BasicBolt, Bolt, Spout
from engine.config import (
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_DEBUG,
    TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_STATS_SAMPLE_RATE,
    TOPOLOGY_TICK_TUPLE_FREQ_SECS,
    TOPOLOGY_WORKERS,
    Config,
)
from engine.context import TopologyContext
from engine.errors import ConfigError, FailedException, TopologyError
from engine.failure import FailReason
from engine.gc_tuning import tune_gc
from engine.spout_collector import SpoutOutputCollector
from engine.topology import OutputFieldsDeclarer, Topology, TopologyBuilder
from engine.tuples import Fields, Tuple

__all__ = [
    "TOPOLOGY_ACKER_EXECUTORS",
    "TOPOLOGY_DEBUG",
    "TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE",
    "TOPOLOGY_MAX_SPOUT_PENDING",
    "TOPOLOGY_MESSAGE_TIMEOUT_SECS",
    "TOPOLOGY_STATS_SAMPLE_RATE",
    "TOPOLOGY_TICK_TUPLE_FREQ_SECS",
    "TOPOLOGY_WORKERS",
    "BasicBolt",
    "BasicOutputCollector",
    "Bolt",
    "Config",
    "ConfigError",
    "FailReason",
    "FailedException",
    "Fields",
    "LocalCluster",
    "OutputCollector",
    "OutputFieldsDeclarer",
    "Spout",
    "SpoutOutputCollector",
    "Topology",
    "TopologyBuilder",
    "TopologyContext",
    "TopologyError",
    "Tuple",
    "tune_gc",
]

hotpath.warn_if_stale()
hotpath.warn_if_plain()
