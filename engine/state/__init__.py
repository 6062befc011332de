"""Stateful bolts with Storm 2's checkpointing (``engine.state``).

A ``StatefulBolt`` gets its ``KeyValueState`` in ``init_state``; a checkpoint spout, added
by the builder, drives prepare / commit / rollback / init-state through the topology every
``topology.state.checkpoint.interval.ms``; state lives in a ``StateStore`` (SQLite under
``topology.state.dir`` by default). At least once: counts are never lower than the truth.
"""

from engine.state.bolt import StatefulBolt
from engine.state.checkpoint import (
    CHECKPOINT_COMPONENT,
    CHECKPOINT_STREAM,
    CheckpointSpout,
    CheckpointState,
)
from engine.state.kv import KeyValueState
from engine.state.store import SqliteStateStore, StateStore
from engine.state.wiring import wire_checkpoints
from engine.topology import register_transform

__all__ = [
    "CHECKPOINT_COMPONENT",
    "CHECKPOINT_STREAM",
    "CheckpointSpout",
    "CheckpointState",
    "KeyValueState",
    "SqliteStateStore",
    "StateStore",
    "StatefulBolt",
]

register_transform("state", 20, wire_checkpoints)
