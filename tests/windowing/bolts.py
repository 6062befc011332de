"""A windowed bolt the windowing tests share: it sums each window and keeps every window."""

from __future__ import annotations

from typing import Any

from engine.windowing import BaseWindowedBolt, TupleWindow


class SumWindow(BaseWindowedBolt):
    """Emits the sum of ``n`` over the window; records every window it sees."""

    def __init__(self) -> None:
        self.windows: list[TupleWindow] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["sum"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, window: TupleWindow) -> None:
        self.windows.append(window)
        self.collector.emit([sum(t["n"] for t in window.get())])
