"""Every public name of transactional topologies is importable from ``engine.transactional``."""

from __future__ import annotations

import inspect

import engine.transactional as tx

API_NAMES = ["TransactionalTopologyBuilder", "BatchBolt", "Committer", "TransactionAttempt",
             "MemoryTransactionalSpout", "PartitionedTransactionalSpout",
             "OpaquePartitionedTransactionalSpout"]


def test_api_names_are_exported() -> None:
    missing = [n for n in API_NAMES if n not in tx.__all__ or not hasattr(tx, n)]
    assert missing == []
    assert all(hasattr(tx, n) for n in tx.__all__)


def test_signatures_match_the_api() -> None:
    params = inspect.signature(tx.BatchBolt.prepare).parameters
    assert list(params) == ["self", "conf", "context", "collector", "attempt"]
    assert list(inspect.signature(tx.MemoryTransactionalSpout).parameters)[:3] == \
        ["data", "fields", "max_batch_size"]
    assert "parallelism" in inspect.signature(tx.TransactionalTopologyBuilder).parameters
    attempt = tx.TransactionAttempt(transaction_id=1, attempt_id=2)
    assert (attempt.transaction_id, attempt.attempt_id) == (1, 2)


def test_kafka_spouts_are_in_connectors_kafka() -> None:
    from connectors.kafka.transactional import (
        OpaqueTransactionalKafkaSpout,
        TransactionalKafkaSpout,
    )

    assert issubclass(TransactionalKafkaSpout, tx.PartitionedTransactionalSpout)
    assert issubclass(OpaqueTransactionalKafkaSpout, tx.OpaquePartitionedTransactionalSpout)
