"""Changelog records: one input partition's committed state changes as Kafka records, and
their restore into the state store.

A record's key is the state key as the store keeps it (JSON). Its value is the input offset
the change covers (the next offset to read once the change is in: an ASCII integer), then,
for a put, one space and the value as JSON; a deleted key has the offset alone (not a
tombstone, so that compaction keeps the offset it covers). The restore never decodes JSON:
it compares the offset and hands the bytes to SQLite.

``ChangelogRestore`` rebuilds one partition's namespace from its changelog read from the
beginning: it skips every record whose covered offset is beyond the committed input offset
(a change whose input will be read again), keeps the last record of each key, and writes
``batch`` records per SQLite transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from engine.state.store import DELETED, SqliteStateStore

__all__ = ["RESTORE_BATCH", "ChangelogRestore", "encode_changes", "partition_namespace"]

RESTORE_BATCH = 20_000
"""Changelog records applied per SQLite transaction during a restore."""


def partition_namespace(prefix: str, partition: int) -> str:
    """The namespace of input partition ``partition`` of the state named ``prefix``
    (``<topology>/<component>``)."""
    return f"{prefix}/p{partition}"


def encode_changes(changes: Mapping[Any, Any], covered: int) -> list[tuple[bytes, bytes]]:
    """``changes`` (``DELETED`` for a removed key) as changelog ``(key, value)`` records
    covering input offsets below ``covered``."""
    dumps, deleted = orjson.dumps, DELETED
    head = b"%d" % covered
    put = head + b" "
    return [(dumps(k), head if v is deleted else put + dumps(v)) for k, v in changes.items()]


class ChangelogRestore:
    """Rebuilds one partition's namespace from its changelog (see the module docstring):
    ``add`` records in changelog order, then ``finish``; the namespace's previous content
    is replaced."""

    def __init__(self, store: SqliteStateStore, namespace: str, committed: int,
                 batch: int = RESTORE_BATCH) -> None:
        self.store = store
        self.namespace = namespace
        self.committed = committed
        self.batch = batch
        self.applied = 0
        self.skipped = 0
        self._pending: dict[bytes, bytes | None] = {}
        store.clear(namespace)

    def add(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Take changelog records ``(key, value)``, in order; writes a batch when full."""
        pending, committed = self._pending, self.committed
        for key, value in records:
            if value is None:
                continue  # a tombstone is not a record this engine writes
            offset, sep, body = value.partition(b" ")
            if int(offset) > committed:
                self.skipped += 1
                continue
            pending[key] = body if sep else None
            self.applied += 1
            if len(pending) >= self.batch:
                self._flush()
                pending = self._pending

    def finish(self) -> int:
        """Write what is left; the number of records applied."""
        self._flush()
        return self.applied

    def _flush(self) -> None:
        if self._pending:
            self.store.restore(self.namespace, self._pending)
            self._pending = {}
