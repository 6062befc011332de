"""Late tuples of event-time windows: stamped before the watermark, never put in a window.

Storm's rule: a late tuple goes, as a detached copy anchored to it, to the late-tuple stream
when one is configured (``with_late_tuple_stream``), else it is logged (throttled); either
way it is acked at once.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from engine.tuples import Tuple

__all__ = ["LATE_TUPLE_FIELD", "DetachedTuple", "LateTuples"]

log = logging.getLogger("engine.windowing")

LATE_TUPLE_FIELD = "late_tuple"


@dataclass(frozen=True, slots=True)
class DetachedTuple:
    """A late tuple as sent on the late-tuple stream: its values and where it came from."""

    values: list[Any]
    fields: list[str]
    source_component: str
    source_task: int
    source_stream: str

    def __getitem__(self, key: int | str) -> Any:
        return self.values[self.fields.index(key) if isinstance(key, str) else key]

    @classmethod
    def of(cls, tup: Tuple) -> DetachedTuple:
        """A copy of ``tup`` that holds no engine bookkeeping."""
        return cls(list(tup.values), list(tup.fields), tup.source_component, tup.source_task,
                   tup.source_stream)


class LateTuples:
    """Sends off the late tuples of one task (``name`` in the log): each is acked once sent
    to ``stream`` or, with no stream, counted and logged at 1, 2, 4, 8, ... of them."""

    def __init__(self, name: str, out: Any, stream: str | None) -> None:
        self.name = name
        self.out = out
        self.stream = stream
        self.count = 0
        """Late tuples logged (those without a late-tuple stream)."""

    def send(self, tup: Tuple, ts: int, watermark: int) -> None:
        """``tup``, stamped ``ts`` before ``watermark``, is late: send it off and ack it."""
        if self.stream is not None:
            self.out.emit([DetachedTuple.of(tup)], tup, self.stream)
        else:
            self.count += 1
            if self.count & (self.count - 1) == 0:  # 1st, 2nd, 4th, 8th, ...: throttled
                log.info("%s: late tuple %r stamped %d, before the watermark %d; not "
                         "processed (%d late so far; with_lag(...) allows more disorder)",
                         self.name, tup, ts, watermark, self.count)
        self.out.ack(tup)
