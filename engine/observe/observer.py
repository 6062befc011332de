"""The cluster as the HTTP views see it: running topologies, their figures and windows.

An ``Observer`` samples each running topology's cumulative figures into its window rings
when a bucket boundary is due: from a background task (``run``) and on every read, so
windows stay right whether or not anything is scraped.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any, Protocol

from engine.errors import TopologyError
from engine.observe.api import component_json, flatten, topology_json, topology_summary
from engine.observe.figures import component_errors, topology_stats, topology_status
from engine.observe.windows import RATE_WINDOW, WINDOWS, Delta, WindowRings

if TYPE_CHECKING:
    from engine.runtime import RunningTopology

__all__ = ["Observer", "Topologies"]

SAMPLE_EVERY_SECS = 5.0


class Topologies(Protocol):
    """What the views read of a cluster (``LocalCluster`` is one)."""

    def runtimes(self) -> dict[str, RunningTopology]:
        """The running topologies by name."""
        ...


class Observer:
    """Reads a cluster's running topologies; one per HTTP app.

    Errors are shown by exception type only unless ``show_errors``: their texts and
    tracebacks may carry what the served port must not (a password in a message).
    """

    def __init__(self, cluster: Topologies, show_errors: bool = False) -> None:
        self.cluster = cluster
        self.show_errors = show_errors
        self._rings: dict[str, tuple[RunningTopology, WindowRings]] = {}

    def runtimes(self) -> dict[str, RunningTopology]:
        """The running topologies by name."""
        return self.cluster.runtimes()

    def runtime(self, name: str) -> RunningTopology:
        """The running topology ``name``; ``TopologyError`` if there is none."""
        running = self.cluster.runtimes()
        rt = running.get(name)
        if rt is None:
            raise TopologyError(f"topology {name!r}: not running; running: {sorted(running)}")
        return rt

    def _ring(self, rt: RunningTopology) -> WindowRings:
        held = self._rings.get(rt.name)
        if held is None or held[0] is not rt:  # new, or a new topology of the same name
            held = (rt, WindowRings(rt.started_at or rt.clock()))
            self._rings[rt.name] = held
        return held[1]

    def sample(self) -> None:
        """Offer every running topology's figures to its rings; forget stopped ones."""
        running = self.runtimes()
        for name in list(self._rings):
            if name not in running:
                del self._rings[name]
        for rt in running.values():
            if rt.started_at:
                self._ring(rt).offer(rt.clock(), flatten(topology_stats(rt)))

    async def run(self, every: float = SAMPLE_EVERY_SECS) -> None:
        """Sample every ``every`` seconds until cancelled."""
        while True:
            self.sample()
            await asyncio.sleep(every)

    def deltas(self, rt: RunningTopology, stats: dict[str, Any],
               windows: tuple[str, ...] = WINDOWS) -> dict[str, Delta]:
        """The ``Delta`` of ``rt`` in each of ``windows`` (default: all) as of now."""
        now = rt.clock()
        figures = flatten(stats)
        ring = self._ring(rt)
        ring.offer(now, figures)
        return {w: ring.delta(w, now, figures) for w in windows}

    def topologies(self) -> dict[str, Any]:
        """``/api/v1/topologies``."""
        return {"topologies": [topology_summary(topology_stats(rt))
                               for rt in self.runtimes().values()]}

    def topology(self, name: str, window: str) -> dict[str, Any]:
        """``/api/v1/topology/{name}``."""
        rt = self.runtime(name)
        stats = topology_stats(rt)
        errors = {cid: component_errors(rt, cid, self.show_errors)
                  for cid in rt.topology.components}
        return topology_json(stats, window, self.deltas(rt, stats, (*WINDOWS, RATE_WINDOW)),
                             errors)

    def component(self, name: str, cid: str, window: str) -> dict[str, Any]:
        """``/api/v1/topology/{name}/component/{id}``."""
        rt = self.runtime(name)
        if cid not in rt.topology.components:
            raise TopologyError(f"topology {name!r}: no component {cid!r}; "
                                f"components: {sorted(rt.topology.components)}")
        stats = topology_stats(rt)
        deltas = self.deltas(rt, stats, (window, RATE_WINDOW))
        return component_json(stats, cid, window, deltas,
                              component_errors(rt, cid, self.show_errors), time.time())

    def readiness(self) -> str | None:
        """``None`` when every topology is active with its spouts opened, else why not."""
        running = self.runtimes()
        if not running:
            return "no topology is running"
        for name, rt in sorted(running.items()):
            status = topology_status(rt)
            if status != "ACTIVE":
                why = "opening its spouts" if status == "STARTING" else "being killed"
                return f"topology {name!r} is {why}"
        return None
