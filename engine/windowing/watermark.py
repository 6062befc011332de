"""Watermarks for event-time windows: "every tuple stamped before W has arrived".

Storm's ``WaterMarkEventGenerator`` without its thread: ``track`` is called per tuple,
``advance`` after each batch (or at each tick of Storm's periodic watermark). The watermark
is the minimum over the input streams of the latest timestamp seen on each, minus the lag;
none is produced until every input stream has delivered a tuple. A tuple stamped before
the last watermark is late. At the end of the input (``finish``) the watermark moves past
the latest tuple seen, so that the last windows close instead of waiting for tuples that
will not come. When every stream has been quiet for a while (``idle``), event time goes on
with the clock from the latest tuple seen.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable

__all__ = ["WatermarkGenerator"]


class WatermarkGenerator:
    """Tracks the latest timestamp per input stream; produces increasing watermarks."""

    def __init__(self, streams: Iterable[Hashable], lag_ms: int) -> None:
        self.streams = frozenset(streams)
        self.lag = lag_ms
        self.latest: dict[Hashable, int] = {}
        self.last_watermark = 0

    def track(self, stream: Hashable, ts: int) -> bool:
        """Record ``ts`` from ``stream``; False when the tuple is late (``ts`` < watermark)."""
        seen = self.latest.get(stream)
        if seen is None or ts > seen:
            self.latest[stream] = ts
        return ts >= self.last_watermark

    def advance(self) -> int | None:
        """The new watermark if it moved forward, else None."""
        ts = 0
        if self.latest and all(s in self.latest for s in self.streams):
            ts = min(self.latest.values())
        ts -= self.lag
        if ts > self.last_watermark:
            self.last_watermark = ts
            return ts
        return None

    def finish(self, span_ms: int) -> int | None:
        """End of input: the watermark ``span_ms`` past the latest timestamp seen on any
        stream (enough to close every window holding a tuple), if that moves it."""
        if not self.latest:
            return None
        ts = max(self.latest.values()) + span_ms
        if ts > self.last_watermark:
            self.last_watermark = ts
            return ts
        return None

    def idle(self, quiet_ms: int) -> int | None:
        """No tuple on any stream for ``quiet_ms`` of processing time: the watermark as if
        event time had gone on with the clock since the latest timestamp seen on any stream
        (that timestamp minus the lag, plus ``quiet_ms``), if that moves it. A tuple stamped
        by a clock that went on as well is not late."""
        if not self.latest:
            return None
        ts = max(self.latest.values()) - self.lag + quiet_ms
        if ts > self.last_watermark:
            self.last_watermark = ts
            return ts
        return None
