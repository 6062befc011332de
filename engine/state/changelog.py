"""Changelog records: one input partition's committed state changes as Kafka records, and
their restore into the partition's local state.

Three kinds of record, told apart by their key:

- a **change**: the key is the state key as the store keeps it (JSON); the value starts
  with the lowest input offset among the tuples whose changes the record's checkpoint
  carries, or a bound below it such as the input offset committed when it was written (an
  ASCII integer), then, for a put, one space and the value as JSON; a deleted key has the
  offset alone (not a tombstone, so that compaction keeps it);
- a **marker** (``MARKER_KEY``), written at every checkpoint that releases tuples of the
  partition: the group's committed input offset then (-1: none) and an input offset no
  tuple of the checkpoint reached (``covered``). Compaction keeps the newest;
- the **start record** (``START_KEY``), written with the first checkpoint of a changelog
  partition that was empty: a changelog partition with markers and no start record was
  deleted and created again while its writers ran.

``ChangelogRestore`` applies records in changelog order to a ``PartitionStore``, keeping
the last record of each key, ``batch`` records per SQLite transaction, each with the
changelog offset after it: a restore cut off goes on from there. It skips a change whose
lowest input offset is at or beyond the committed input offset: every tuple behind it
will be read again, so the key's previous record is its value without them. A change with a
lower offset is applied even if some of its tuples will be read again (tuples complete out
of order): skipping it would lose the others, which will not; applying it over-counts those
read again, as a restart does. A record that cannot be read is named (``ChangelogUnreadable``)
unless a later record of the same key replaces it.

``refusal`` judges what a restore found against the group's committed input offset: state
that is gone (a changelog missing, emptied, re-created or behind the input) is refused,
never restored as empty.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from engine.state.partition_store import PartitionStore
from engine.state.store import DELETED

__all__ = ["MARKER_KEY", "RESTORE_BATCH", "START_KEY", "ChangelogRestore",
           "ChangelogUnreadable", "StateRefused", "encode_changes", "encode_marker",
           "encode_start", "not_json", "partition_namespace", "read_marker", "refusal"]

RESTORE_BATCH = 20_000
"""Changelog records applied per SQLite transaction during a restore."""

MARKER_KEY = b"\x00marker"
START_KEY = b"\x00start"


class StateRefused(RuntimeError):
    """A partition's state cannot be trusted (see ``refusal``): one line, the topology
    stops with exit status 2."""


class ChangelogUnreadable(StateRefused):
    """A changelog record that is its key's newest cannot be read: names the topic,
    partition, offset, key and cause."""

    def __init__(self, where: str, offset: int, key: bytes, cause: str) -> None:
        super().__init__(
            f"{where} offset {offset}: the record of key {key[:80]!r} cannot be read "
            f"({cause}); the partition's state cannot be restored and nothing of it is "
            f"processed: write a valid record for that key to the changelog (its newest "
            f"record wins), then start again")
        self.offset = offset
        self.key = key
        self.cause = cause


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


def encode_marker(committed: int | None, covered: int) -> tuple[bytes, bytes]:
    """The marker record of a checkpoint: the committed input offset then (None: none)
    and an input offset none of its tuples reached."""
    return MARKER_KEY, b"%d %d" % (-1 if committed is None else committed, covered)


def encode_start(committed: int | None) -> tuple[bytes, bytes]:
    """The start record of a changelog partition begun at input offset ``committed``."""
    return START_KEY, b"%d" % (-1 if committed is None else committed)


class ChangelogRestore:
    """Applies one partition's changelog records to its local state (see the module
    docstring): ``add`` records ``(offset, key, value)`` in order, then ``finish``.

    ``where`` names the changelog partition in errors; ``marker`` and ``started`` are
    what the local position knew before (a restore from the beginning: None and False).
    After ``finish``, ``marker`` is the newest marker's ``(committed, covered)`` (or None),
    ``started`` whether a start record was seen, ``records`` how many records were read."""

    def __init__(self, store: PartitionStore, namespace: str, committed: int,
                 where: str, marker: tuple[int, int] | None = None, started: bool = False,
                 batch: int = RESTORE_BATCH) -> None:
        self.store = store
        self.namespace = namespace
        self.committed = committed
        self.where = where
        self.batch = batch
        self.applied = self.skipped = self.records = 0
        self.marker = marker
        self.started = started
        self.next_offset: int | None = None
        self._pending: dict[bytes, bytes | None] = {}
        self._at: dict[bytes, int] = {}
        self._bad: dict[bytes, tuple[int, str]] = {}

    def add(self, records: Iterable[tuple[int, bytes | None, bytes | None]]) -> None:
        """Take changelog records ``(offset, key, value)``, in order; writes a batch when
        full."""
        pending, at, bad, committed = self._pending, self._at, self._bad, self.committed
        for offset, key, value in records:
            self.records += 1
            self.next_offset = offset + 1
            if key is None or value is None:
                continue  # a record this engine does not write (a tombstone, a keyless one)
            if key[:1] == b"\x00":
                self._special(offset, key, value)
                continue
            head, sep, body = value.partition(b" ")
            try:
                first = int(head)
            except ValueError:
                bad[key] = (offset, f"no input offset: starts with {head[:20]!r}")
                pending.pop(key, None)
                continue
            bad.pop(key, None)
            if first >= committed:
                self.skipped += 1
                continue
            pending[key] = body if sep else None
            at[key] = offset
            self.applied += 1
            if len(pending) >= self.batch:
                self._flush()
                pending, at = self._pending, self._at

    def _special(self, offset: int, key: bytes, value: bytes) -> None:
        if key == START_KEY:
            self.started = True
        elif key == MARKER_KEY:
            marker = read_marker(value)
            if marker is None:
                self._bad[key] = (offset, f"marker {value[:40]!r} is not two integers")
                return
            self._bad.pop(key, None)
            self.marker = marker

    def finish(self) -> int:
        """Write what is left; the number of change records applied. Raises
        ``ChangelogUnreadable`` for the first record that could not be read."""
        self._flush()
        if self._bad:
            key, (offset, cause) = min(self._bad.items(), key=lambda kv: kv[1][0])
            raise ChangelogUnreadable(self.where, offset, key, cause)
        return self.applied

    def _flush(self) -> None:
        if self.next_offset is None:
            return
        pending = self._pending
        if pending:
            self._check_json(pending)
        stop = min((o for o, _ in self._bad.values()), default=self.next_offset)
        self.store.apply(self.namespace, pending, stop, self.marker, self.started)
        self._pending, self._at = {}, {}

    def _check_json(self, pending: dict[bytes, bytes | None]) -> None:
        """Keys and values that are not JSON leave ``pending`` for the bad records."""
        records = list(pending.items())
        for i, cause in not_json(records):
            key = records[i][0]
            self._bad[key] = (self._at[key], cause)
            del pending[key]


def read_marker(value: bytes) -> tuple[int, int] | None:
    """A marker record's ``(committed, covered)``, or None if it is not two integers."""
    try:
        first, covered = (int(v) for v in value.split(b" "))
    except ValueError:
        return None
    return first, covered


def not_json(records: list[tuple[bytes, bytes | None]]) -> list[tuple[int, str]]:
    """``(index, cause)`` of each record ``(key, value)`` whose key or value (``None``: a
    delete) is not JSON: one parse of them all, then one per record only if it failed."""
    raws = [k for k, _ in records] + [v for _, v in records if v is not None]
    try:
        orjson.loads(b"[" + b",".join(raws) + b"]")
        return []
    except orjson.JSONDecodeError:
        pass
    found = []
    for i, (key, value) in enumerate(records):
        for what, raw in (("key", key), ("value", value)):
            if raw is None:
                continue
            try:
                orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                found.append((i, f"{what} is not JSON: {exc}"))
                break
    return found


def refusal(where: str, group: str, committed: int | None, restore: ChangelogRestore,
            empty: bool) -> str | None:
    """Why the state a restore found must not be used, or None when it may: the group's
    ``committed`` input offset (None: none) against the changelog partition ``where``
    (``empty``: it holds no record at all)."""
    if empty:
        if committed:
            return (f"{where} is empty, but group {group!r} committed input offset "
                    f"{committed}: the state behind those offsets is gone (the changelog "
                    f"was deleted or emptied, or the bolt was renamed or added to a running "
                    f"group)")
        return None
    marker = restore.marker
    if not restore.started and marker is not None:
        return (f"{where} has no start record: it was deleted and created again while its "
                f"writers ran, and holds only what they wrote since")
    if committed is None:
        if marker is not None and marker[0] > 0:
            return (f"group {group!r} has no committed input offset, but {where} was written "
                    f"after it committed offset {marker[0]}: the group's offsets are gone "
                    f"(expired past the broker's offsets retention, or the group renamed)")
        return None
    if marker is not None and marker[1] < committed:
        return (f"{where} covers input offsets below {marker[1]}, but group {group!r} "
                f"committed input offset {committed}: the changelog is behind the input "
                f"(it was deleted or truncated)")
    return None
