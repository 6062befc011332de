"""Routing: for each stream a task emits on, which groupers choose the receiving tasks.

One ``Route`` per (task, stream), built once at start-up from the wiring
(``engine.route_table``); the collector asks it on every emit. A stream with exactly one
subscribing bolt keeps that grouper in ``single`` (the emit fast path), and where that
bolt has a single task and no custom grouping could choose otherwise, the task itself in
``only`` (no grouper call at all).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engine.grouping import CustomGrouper, Grouper
from engine.tuples import Source

__all__ = ["Route"]


@dataclass(slots=True)
class Route:
    """Where one (task, stream) sends: groupers for normal streams, allowed targets for direct."""

    source: Source
    groupers: list[Grouper] = field(default_factory=list)
    direct: bool = False
    direct_targets: frozenset[int] = frozenset()
    # The one grouper of a stream with exactly one subscriber: the emit fast path.
    single: Grouper | None = None
    # That subscriber's only task, where no grouping can choose another: no grouper call.
    only: int = -1
    only_targets: list[int] = field(default_factory=list)
    width: int = 0

    def freeze(self) -> None:
        """Precompute the fast path once every grouper is added."""
        self.single = self.groupers[0] if len(self.groupers) == 1 and not self.direct else None
        self.only = -1
        if self.single is not None and len(self.single.targets) == 1 \
                and not isinstance(self.single, CustomGrouper):
            self.only = self.single.targets[0]
            self.only_targets = [self.only]
        self.width = len(self.source.fields)
