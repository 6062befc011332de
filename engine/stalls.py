"""The stall monitor: what a stuck topology looks like, said once per interval.

One coroutine per running topology looks, every ``period`` (1 s of loop time), at
figures the executors keep anyway (nothing is added per tuple):

- a bolt task whose async ``execute`` has run on one tuple for ``warn_after`` seconds is
  *hung*; past the component's execute deadline (``topology.bolt.execute.timeout.secs``,
  by default the message timeout, restarted by ``reset_timeout``) the call is cancelled,
  its tuple fails with a ``TimeoutError`` and the executor goes on (one ``period`` late
  at most);
- an executor whose receive queue has stayed full for ``warn_after`` seconds;
- a spout executor waiting for room in a full queue (``blocked``);
- trees timing out: the spouts' ``failed_timeout`` counts grew since the last look.

Each gives one WARNING per ``interval`` (10 s) naming the component (a hung call also
names its tuple's source and, for a repartition hop's reader, the component whose tuples
the hop carries), and the first three
are listed by ``stalled()`` (``stats()["stalled"]``), so that a stalled pipeline never
looks idle. A call that blocks the loop itself is the loop watchdog's to report: while
the loop is held nothing here runs.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from engine.log_throttle import IntervalWarning

if TYPE_CHECKING:
    from engine.bolt_executor import BoltExecutor
    from engine.spout_executor import SpoutExecutor
    from engine.tuples import Tuple

__all__ = ["StallMonitor"]

log = logging.getLogger("engine")


def _tasks(ids: list[int]) -> str:
    return f"task {ids[0]}" if len(ids) == 1 else f"tasks {ids[0]}-{ids[-1]}"


class StallMonitor:
    """Watches one topology's executors; ``run`` until cancelled, ``stalled`` when asked."""

    def __init__(self, spouts: list[SpoutExecutor], bolts: list[BoltExecutor],
                 deadlines: Mapping[str, float], timeout_secs: float, period: float = 1.0,
                 warn_after: float = 5.0, interval: float = 10.0,
                 hops: Mapping[str, str] | None = None) -> None:
        self.spouts = spouts
        self.bolts = bolts
        self.deadlines = deadlines
        """Component -> seconds an async execute may run before it is cancelled (0: never)."""
        self.timeout_secs = timeout_secs
        self.hops = dict(hops or {})
        """A repartition hop's reader spout -> the component whose tuples it carries."""
        self.period = period
        self.warn_after = warn_after
        self._warn = IntervalWarning(log, interval)
        # bolt executor -> (tuple, first seen or last reset_timeout, the task's resets)
        self._calls: dict[int, tuple[Tuple, float, int]] = {}
        self._full: dict[int, float] = {}  # executor -> full since
        self._blocked: dict[int, float] = {}  # spout executor -> waiting since
        self._timeouts: dict[str, int] = {}
        self._stalled: list[dict[str, Any]] = []

    async def run(self) -> None:
        """Look every ``period`` seconds until cancelled."""
        loop = asyncio.get_running_loop()
        while True:
            await asyncio.sleep(self.period)
            self.check(loop.time())

    def stalled(self) -> list[dict[str, Any]]:
        """What was stuck at the last look: ``component``, ``tasks``, ``state`` (``"hung"``,
        ``"queue_full"`` or ``"blocked"``) and ``secs``; empty when nothing is."""
        return list(self._stalled)

    def check(self, now: float) -> None:
        """One look at every executor (see the module's description)."""
        stalled: list[dict[str, Any]] = []
        for i, bex in enumerate(self.bolts):
            self._check_call(i, bex, now, stalled)
            self._check_queue(i, bex.component, [t.task_id for t in bex.tasks],
                              bex.queue.full(), now, stalled)
        for i, sex in enumerate(self.spouts):
            ids = [t.task_id for t in sex.tasks]
            if sex.outbox.blocked:
                since = self._blocked.setdefault(i, now)
                stalled.append({"component": sex.component, "tasks": ids, "state": "blocked",
                                "secs": round(now - since, 1)})
                if now - since >= self.warn_after:
                    self._warn.warn(f"spout {sex.component!r} {_tasks(ids)}",
                                    "waiting %.0f s for room in a full queue downstream",
                                    now - since, now=now)
            else:
                self._blocked.pop(i, None)
        self._check_timeouts(now)
        self._stalled = stalled

    def _check_call(self, i: int, bex: BoltExecutor, now: float,
                    stalled: list[dict[str, Any]]) -> None:
        tup = bex.current if bex.outbox.busy else None
        if tup is None:
            self._calls.pop(i, None)
            return
        seen = self._calls.get(i)
        resets = bex.by_id[tup.dest].collector.resets
        if seen is None or seen[0] is not tup or seen[2] != resets:
            self._calls[i] = (tup, now, resets)  # a reset_timeout restarts the deadline
            return
        secs = now - seen[1]
        deadline = self.deadlines.get(bex.component, 0.0)
        if deadline and secs >= deadline:
            bex.cancel_current(f"execute did not return within {deadline:g} s; cancelled")
        if secs >= self.warn_after:
            stalled.append({"component": bex.component, "tasks": [tup.dest], "state": "hung",
                            "secs": round(secs, 1)})
            self._warn.warn(f"bolt {bex.component!r}", "task %d: execute() has not returned "
                            "for %.0f s (%s; the call is cancelled after %s)",
                            tup.dest, secs, self._origin(tup),
                            f"{deadline:g} s" if deadline else "never", now=now)

    def _origin(self, tup: Tuple) -> str:
        """Where ``tup`` came from, through a repartition hop if it did."""
        source = tup.source_component
        upstream = self.hops.get(source)
        if upstream is None:
            return f"a tuple from {source!r}"
        return f"a tuple from {source!r}, emitted by {upstream!r} before the repartition hop"

    def _check_queue(self, i: int, component: str, ids: list[int], full: bool, now: float,
                     stalled: list[dict[str, Any]]) -> None:
        if not full:
            self._full.pop(i, None)
            return
        secs = now - self._full.setdefault(i, now)
        if secs >= self.warn_after:
            stalled.append({"component": component, "tasks": ids, "state": "queue_full",
                            "secs": round(secs, 1)})
            self._warn.warn(f"bolt {component!r} {_tasks(ids)}", "receive queue full for "
                            "%.0f s; producers hold back, shuffle groupings send elsewhere",
                            secs, now=now)

    def _check_timeouts(self, now: float) -> None:
        counts: dict[str, int] = {}
        for sex in self.spouts:
            counts[sex.component] = counts.get(sex.component, 0) + sum(
                t.stats.failed_timeout for t in sex.tasks)
        for cid, count in counts.items():
            new = count - self._timeouts.get(cid, 0)
            self._timeouts[cid] = count
            if new > 0:
                self._warn.warn(f"spout {cid!r}", "%d trees timed out in the last %g s "
                                "(message timeout %g s)", new, self.period,
                                self.timeout_secs, n=new, now=now)
