"""Committer state that stays exact under replays: "value + txid" and the opaque variant.

Storm's recipe for transactional topologies. A committer stores, next to each value, the
id of the transaction that last changed it:

- ``TransactionalValue(value, txid)``: with a spout that replays a transaction with the
  same tuples, an update for the stored txid was applied already and is skipped;
- ``OpaqueValue(value, prev, txid)``: with an opaque spout a replay may carry a different
  batch, so the stored txid's update is re-applied to the value from before it (``prev``).

Both are correct because commits happen strictly in transaction-id order: once a later
txid is stored, no earlier one is ever committed again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["OpaqueValue", "TransactionalValue"]


@dataclass(frozen=True, slots=True)
class TransactionalValue:
    """A value and the txid that last changed it; ``update`` applies each txid once."""

    value: Any
    txid: int | None = None

    def update(self, txid: int, change: Callable[[Any], Any]) -> TransactionalValue:
        """``change`` applied for ``txid``, or ``self`` if ``txid`` was applied already."""
        if self.txid == txid:
            return self
        return TransactionalValue(change(self.value), txid)

    def to_json(self) -> list[Any]:
        """``[value, txid]``, for storage."""
        return [self.value, self.txid]

    @classmethod
    def from_json(cls, data: Any, initial: Any = None) -> TransactionalValue:
        """From ``to_json``'s output; ``None`` (nothing stored) gives ``initial``, no txid."""
        return cls(initial) if data is None else cls(data[0], data[1])


@dataclass(frozen=True, slots=True)
class OpaqueValue:
    """A value, the value before the txid that last changed it, and that txid.

    ``update`` for the stored txid recomputes from ``prev``, so a replayed transaction whose
    batch changed replaces its earlier contribution instead of adding to it.
    """

    value: Any
    prev: Any = None
    txid: int | None = None

    def update(self, txid: int, change: Callable[[Any], Any]) -> OpaqueValue:
        """``change`` applied for ``txid`` on the value from before ``txid``."""
        if self.txid == txid:
            return OpaqueValue(change(self.prev), self.prev, txid)
        return OpaqueValue(change(self.value), self.value, txid)

    def to_json(self) -> list[Any]:
        """``[value, prev, txid]``, for storage."""
        return [self.value, self.prev, self.txid]

    @classmethod
    def from_json(cls, data: Any, initial: Any = None) -> OpaqueValue:
        """From ``to_json``'s output; ``None`` (nothing stored) gives ``initial``, no txid."""
        return cls(initial, initial) if data is None else cls(data[0], data[1], data[2])
