"""The failed-topic record: one JSON object per record the engine gave up on.

Shared by the Kafka spout (writer) and the Spark replay job (reader), so the schema lives
in one place. Fields (api.md §10): ``topic``, ``partition``, ``offset``, ``key`` and
``value`` (base64, ``key`` may be null), ``attempts``, ``reason``, ``failed_at`` (epoch
ms), ``topology``, ``component``.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass

import orjson

__all__ = ["FailedRecord", "MalformedFailedRecord"]


class MalformedFailedRecord(ValueError):
    """A failed-topic payload that is not a valid failed-record JSON object."""


_REQUIRED = ("topic", "partition", "offset", "value", "attempts", "reason")


@dataclass(frozen=True, slots=True)
class FailedRecord:
    """A record that could not be processed, with its original coordinates and bytes."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes
    attempts: int
    reason: str
    failed_at: int
    topology: str | None = None
    component: str | None = None

    @property
    def coordinates(self) -> tuple[str, int, int]:
        """``(topic, partition, offset)``: the id replay de-duplicates on."""
        return (self.topic, self.partition, self.offset)

    @classmethod
    def now(cls, topic: str, partition: int, offset: int, key: bytes | None, value: bytes,
            attempts: int, reason: str, topology: str | None = None,
            component: str | None = None) -> FailedRecord:
        """A record stamped with the current wall-clock time."""
        return cls(topic, partition, offset, key, value, attempts, reason,
                   int(time.time() * 1000), topology, component)

    def to_json(self) -> bytes:
        """The JSON bytes written to the failed topic."""
        return orjson.dumps({
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "key": None if self.key is None else base64.b64encode(self.key).decode("ascii"),
            "value": base64.b64encode(self.value).decode("ascii"),
            "attempts": self.attempts,
            "reason": self.reason,
            "failed_at": self.failed_at,
            "topology": self.topology,
            "component": self.component,
        })

    @classmethod
    def from_json(cls, payload: bytes | str | None) -> FailedRecord:
        """Parse a failed-topic payload; raises ``MalformedFailedRecord`` saying what is wrong."""
        if payload is None:
            raise MalformedFailedRecord("empty payload")
        try:
            obj = orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            raise MalformedFailedRecord(f"not JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise MalformedFailedRecord(f"expected a JSON object, got {type(obj).__name__}")
        missing = [name for name in _REQUIRED if name not in obj]
        if missing:
            raise MalformedFailedRecord(f"missing field(s) {missing}")
        try:
            key = obj.get("key")
            return cls(
                topic=_typed(obj, "topic", str),
                partition=_typed(obj, "partition", int),
                offset=_typed(obj, "offset", int),
                key=None if key is None else base64.b64decode(key, validate=True),
                value=base64.b64decode(_typed(obj, "value", str), validate=True),
                attempts=_typed(obj, "attempts", int),
                reason=_typed(obj, "reason", str),
                failed_at=int(obj.get("failed_at") or 0),
                topology=obj.get("topology"),
                component=obj.get("component"),
            )
        except (ValueError, TypeError) as exc:
            raise MalformedFailedRecord(str(exc)) from None


def _typed(obj: dict, name: str, kind: type) -> object:
    value = obj[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise MalformedFailedRecord(
            f"field {name!r} must be {kind.__name__}, got {type(value).__name__}")
    return value
