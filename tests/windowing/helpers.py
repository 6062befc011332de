"""Driving a window manager by hand: feed items with timestamps, collect what it reports."""

from __future__ import annotations

from typing import Any

from engine.windowing.build import build_manager
from engine.windowing.manager import Activation, Expired, WindowManager
from engine.windowing.spec import Count, Duration, WindowSpec
from engine.windowing.watermark import WatermarkGenerator


class Driver:
    """A window manager built from a spec as the executor builds it, plus its watermarks."""

    def __init__(self, length: Count | Duration, slide: Count | Duration | None = None, *,
                 event_time: bool = False, lag_ms: int = 0) -> None:
        spec = WindowSpec(length, Count(1) if slide is None else slide, lag_ms=lag_ms,
                          timestamp_field="ts" if event_time else None)
        self.manager: WindowManager = build_manager(spec)
        self.manager.start()
        self.watermarks = WatermarkGenerator(["s"], lag_ms)
        self.activations: list[Activation] = []
        self.expired: list[Any] = []
        self.late: list[Any] = []

    def add(self, item: Any, ts: int, now: int | None = None) -> None:
        """Add ``item`` stamped ``ts``; in event time it may be late."""
        if self.watermarks.track("s", ts):
            self.manager.add(item, ts, ts if now is None else now)
        else:
            self.late.append(item)
        self._collect()

    def watermark(self) -> int | None:
        """Compute the watermark as the executor's interval timer does; feed it if it moved."""
        ts = self.watermarks.advance()
        if ts is not None:
            self.manager.add_watermark(ts, ts)
        self._collect()
        return ts

    def fire(self, now: int) -> None:
        """The processing-time slide timer fires at ``now``."""
        self.manager.trigger.fire(now)  # type: ignore[attr-defined]
        self._collect()

    def _collect(self) -> None:
        for out in self.manager.take_outputs():
            if isinstance(out, Expired):
                self.expired.extend(out.items)
            else:
                self.activations.append(out)

    def windows(self) -> list[list[Any]]:
        """The items of every activation so far."""
        return [a.items for a in self.activations]
