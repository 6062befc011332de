"""The failed-topic record: one JSON object per record the engine gave up on.

Shared by the Kafka spout (writer) and the Spark replay job (reader), so the schema lives
in one place. Fields: ``topic``, ``partition``, ``offset`` (where the record first failed:
a replayed record keeps its original coordinates), ``key`` and ``value`` (base64, ``key``
may be null), ``attempts`` (counted across replays), ``reason`` (the last failure's cause),
``failed_at`` (epoch ms), ``topology``, ``component`` (the spout), and:

- ``error_trace``: a short traceback when the last failure was an exception, else null;
- ``failed_by``: the component that failed the tuple, when known;
- ``value_size``, ``value_sha256``: length and SHA-256 (hex) of the whole original value;
- ``value_truncated`` / ``key_truncated``: true when the value (key) was cut so the record
  fits the failed topic's size limit (``fit.py``); the original is still at its
  coordinates;
- ``first_failed_at``: when the record first failed (epoch ms; equals ``failed_at`` for a
  first failure);
- ``replayed_topic``, ``replayed_partition``, ``replayed_offset``: where the spout read a
  replayed copy, null for a first failure.

Readers accept records without the optional fields (written by older versions).
"""

from __future__ import annotations

import base64
import hashlib
import time
from dataclasses import dataclass, replace

import orjson

__all__ = ["REPLAY_HEADERS", "FailedRecord", "MalformedFailedRecord", "ReplayOrigin"]


class MalformedFailedRecord(ValueError):
    """A failed-topic payload that is not a valid failed-record JSON object."""


REPLAY_HEADERS = ("replay.original.topic", "replay.original.partition",
                  "replay.original.offset", "replay.attempts", "replay.first_failed_at")
"""Headers the replay job puts on every replayed record (UTF-8 text): where the record first
failed, how many attempts it had, and when it first failed (epoch ms)."""


@dataclass(frozen=True, slots=True)
class ReplayOrigin:
    """What a replayed record's headers say about its first failure."""

    topic: str
    partition: int
    offset: int
    attempts: int
    first_failed_at: int | None

    @classmethod
    def from_headers(cls, headers: object) -> ReplayOrigin | None:
        """The origin in a record's ``(key, value)`` headers; None when it was not replayed
        or the headers are incomplete or not numbers where numbers belong."""
        if not headers:
            return None
        found: dict[str, str] = {}
        try:
            for key, value in headers:  # type: ignore[attr-defined]
                if key in REPLAY_HEADERS and value is not None:
                    found[key] = bytes(value).decode("utf-8")
            topic, partition, offset, attempts = (found[name] for name in REPLAY_HEADERS[:4])
            first = found.get(REPLAY_HEADERS[4])
            return cls(topic, int(partition), int(offset), int(attempts),
                       int(first) if first else None)
        except (KeyError, ValueError, TypeError):
            return None


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
    error_trace: str | None = None
    failed_by: str | None = None
    value_size: int | None = None
    value_sha256: str | None = None
    value_truncated: bool = False
    key_truncated: bool = False
    first_failed_at: int | None = None
    replayed_topic: str | None = None
    replayed_partition: int | None = None
    replayed_offset: int | None = None

    @property
    def coordinates(self) -> tuple[str, int, int]:
        """``(topic, partition, offset)``: the id replay de-duplicates on."""
        return (self.topic, self.partition, self.offset)

    @classmethod
    def now(cls, topic: str, partition: int, offset: int, key: bytes | None, value: bytes,
            attempts: int, reason: str, topology: str | None = None,
            component: str | None = None, **extra: object) -> FailedRecord:
        """A record stamped with the current wall-clock time, with the size and digest of
        ``value``; ``extra`` sets optional fields (``first_failed_at`` defaults to now)."""
        now_ms = int(time.time() * 1000)
        extra.setdefault("first_failed_at", now_ms)
        return cls(topic, partition, offset, key, value, attempts, reason, now_ms, topology,
                   component, value_size=len(value),
                   value_sha256=hashlib.sha256(value).hexdigest(), **extra)  # type: ignore[arg-type]

    def cut(self, value_bytes: int, key_bytes: int | None = None,
            text_chars: int | None = None) -> FailedRecord:
        """This record with its value cut to ``value_bytes`` (and its key to ``key_bytes``,
        ``reason`` and ``error_trace`` to ``text_chars``), marked as truncated."""
        key, key_cut = self.key, self.key_truncated
        if key is not None and key_bytes is not None and len(key) > key_bytes:
            key, key_cut = key[:key_bytes], True
        value, value_cut = self.value, self.value_truncated
        if len(value) > value_bytes:
            value, value_cut = value[:value_bytes], True
        reason, trace = self.reason, self.error_trace
        if text_chars is not None:
            reason = _clip(reason, text_chars)
            trace = None if trace is None else _clip(trace, text_chars)
        return replace(self, key=key, value=value, key_truncated=key_cut,
                       value_truncated=value_cut, reason=reason, error_trace=trace)

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
            "error_trace": self.error_trace,
            "failed_by": self.failed_by,
            "value_size": self.value_size,
            "value_sha256": self.value_sha256,
            "value_truncated": self.value_truncated,
            "key_truncated": self.key_truncated,
            "first_failed_at": self.first_failed_at,
            "replayed_topic": self.replayed_topic,
            "replayed_partition": self.replayed_partition,
            "replayed_offset": self.replayed_offset,
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
                topology=_optional(obj, "topology", str),
                component=_optional(obj, "component", str),
                error_trace=_optional(obj, "error_trace", str),
                failed_by=_optional(obj, "failed_by", str),
                value_size=_optional(obj, "value_size", int),
                value_sha256=_optional(obj, "value_sha256", str),
                value_truncated=obj.get("value_truncated") is True,
                key_truncated=obj.get("key_truncated") is True,
                first_failed_at=_optional(obj, "first_failed_at", int),
                replayed_topic=_optional(obj, "replayed_topic", str),
                replayed_partition=_optional(obj, "replayed_partition", int),
                replayed_offset=_optional(obj, "replayed_offset", int),
            )
        except (ValueError, TypeError) as exc:
            raise MalformedFailedRecord(str(exc)) from None


def _typed(obj: dict, name: str, kind: type) -> object:
    value = obj[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise MalformedFailedRecord(
            f"field {name!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _optional(obj: dict, name: str, kind: type) -> object:
    return None if obj.get(name) is None else _typed(obj, name, kind)


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(0, chars - 1)] + "…"
