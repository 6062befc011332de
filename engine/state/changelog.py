"""Changelog records: one input partition's committed state changes as Kafka records, and
their restore into the state store.

A record's key is the state key as the store keeps it (JSON). Its value starts with the
lowest input offset among the tuples whose changes the record's checkpoint carries, or a
bound below it such as the input offset committed when it was written (an ASCII integer),
then, for a put, one space and the value as JSON; a deleted key has the
offset alone (not a tombstone, so that compaction keeps it). The restore never decodes
JSON: it compares the offset and hands the bytes to SQLite.

``ChangelogRestore`` rebuilds one partition's namespace from its changelog read from the
beginning, keeping the last record of each key and writing ``batch`` records per SQLite
transaction. It skips a record whose lowest input offset is at or beyond the committed
input offset: every tuple behind it will be read again, so the key's previous record is
its value without them. A record with a lower offset is applied even if some of its
tuples will be read again (tuples complete out of order): skipping it would lose the
others, which will not; applying it over-counts those read again, as a restart does.
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


def encode_changes(changes: Mapping[Any, Any], first: int) -> list[tuple[bytes, bytes]]:
    """``changes`` (``DELETED`` for a removed key) as changelog ``(key, value)`` records
    of a checkpoint whose tuples' lowest input offset is ``first``."""
    dumps, deleted = orjson.dumps, DELETED
    head = b"%d" % first
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
            if int(offset) >= committed:
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
