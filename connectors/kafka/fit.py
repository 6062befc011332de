"""Any failed record fits: cut a failed record's JSON to at most a given number of bytes.

The rule, applied only to a record whose JSON is over ``limit`` bytes, in this order until
it fits:

1. the value is cut to the longest prefix that fits (``value_truncated: true``);
2. then the key as well (``key_truncated: true``);
3. then ``reason`` and ``error_trace`` to ``TEXT_CHARS`` characters each, and key and value
   cut again to what that leaves (the key first).

``value_size`` and ``value_sha256`` always describe the whole original value, so the
original can be found and checked at its coordinates. Base64 turns every 3 bytes into 4
characters that JSON never escapes, so the cut is computed, not searched for.
"""

from __future__ import annotations

from connectors.kafka.failed import FailedRecord

__all__ = ["MIN_LIMIT", "TEXT_CHARS", "RecordTooLarge", "fit"]

TEXT_CHARS = 1000
"""What ``reason`` and ``error_trace`` are cut to when cutting key and value is not enough."""

MIN_LIMIT = 4096
"""The smallest limit ``fit`` accepts: room for every field with cut texts."""


class RecordTooLarge(ValueError):
    """Even with value, key and texts cut, the record does not fit (a limit far too small)."""


def _room(record: FailedRecord, limit: int) -> int:
    """Raw bytes of value that fit beside the rest of ``record`` (value emptied)."""
    base = len(record.cut(0).to_json())
    # The slack covers flags that read "false" rather than "true" when nothing was cut.
    return max(0, (limit - base - 8) // 4 * 3)


def fit(record: FailedRecord, limit: int) -> tuple[FailedRecord, bytes]:
    """``record`` (cut if needed, see the module docstring) and its JSON of at most ``limit``
    bytes; raises ``RecordTooLarge`` when even the cut record does not fit."""
    payload = record.to_json()
    if len(payload) <= limit:
        return record, payload
    for key_bytes, text_chars in ((None, None), (0, None), (0, TEXT_CHARS)):
        trimmed = record.cut(len(record.value), key_bytes, text_chars)
        if key_bytes == 0 and record.key:
            # Give the key what the empty value leaves, before any value byte.
            key_room = _room(trimmed.cut(0, 0), limit)
            trimmed = record.cut(len(record.value), key_room, text_chars)
        candidate = trimmed.cut(_room(trimmed, limit))
        payload = candidate.to_json()
        if len(payload) <= limit:
            return candidate, payload
    raise RecordTooLarge(f"failed record of {record.coordinates} does not fit in {limit} bytes "
                         f"even with value, key and reason cut")
