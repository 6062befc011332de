"""Transactional topologies: exactly-once batches on the engine's own spouts, bolts, ackers.

Batches are processed in parallel and committed strictly in transaction-id order; a failed
batch is replayed with the same transaction id and the same tuples (docs/transactional.md).
"""

from engine.transactional.attempt import TransactionAttempt
from engine.transactional.builder import TransactionalTopologyBuilder
from engine.transactional.committer import BatchBolt, Committer
from engine.transactional.maps import OpaqueMap, SqliteMap, TransactionalMap
from engine.transactional.memory import MemoryTransactionalSpout
from engine.transactional.spout import (
    BatchCollector,
    OpaquePartitionedTransactionalSpout,
    PartitionedTransactionalSpout,
    TransactionalSpout,
)
from engine.transactional.state import TRANSACTIONAL_STATE_DIR, TransactionalState
from engine.transactional.values import OpaqueValue, TransactionalValue

__all__ = [
    "TRANSACTIONAL_STATE_DIR",
    "BatchBolt",
    "BatchCollector",
    "Committer",
    "MemoryTransactionalSpout",
    "OpaqueMap",
    "OpaquePartitionedTransactionalSpout",
    "OpaqueValue",
    "PartitionedTransactionalSpout",
    "SqliteMap",
    "TransactionAttempt",
    "TransactionalMap",
    "TransactionalSpout",
    "TransactionalState",
    "TransactionalTopologyBuilder",
    "TransactionalValue",
]
