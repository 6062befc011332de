"""The windowing executor: a ``Bolt`` that runs a user's ``BaseWindowedBolt``.

Storm's ``WindowedBoltExecutor``, as an adapter the topology builder puts around the user's
bolt, so the engine runs it like any bolt. Per input tuple it stamps the tuple (the event
loop's clock, or the tuple's own event time: ``event_time``), feeds the window manager, and
acts on what the manager reports, in order:

- expired tuples are acked (``acking``: through the collector the executor was given; in a
  stateful topology that collector holds the acks until the covering checkpoint commits);
- an activation calls the user's ``execute(window)``; whatever it emits without explicit
  anchors is anchored to every tuple of the window, so a downstream failure replays the
  window's inputs. If ``execute(window)`` raises, the error is reported and every tuple of
  the window is failed (they replay; the window is evaluated again with them).

Late tuples (event time, stamped before the last watermark) are acked at once, after a
copy went to the late-tuple stream if one is configured (``late``). Time-driven work (the
slide timer of processing-time windows, the watermark of event-time ones) runs in timers
owned by the executor, on the running loop's clock (``timers``); they are cancelled at
``cleanup``. Whether the user's ``execute`` runs synchronously, a batch at a time, or
awaited under a lock is the subclass's (``sync_executor``, ``async_executor``).
"""

from __future__ import annotations

import asyncio
import copy
import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from engine.anchoring import AnchoringCollector
from engine.components import Bolt
from engine.context import TopologyContext
from engine.state.checkpoint import CHECKPOINT_STREAM
from engine.topology import OutputFieldsDeclarer
from engine.tuples import Tuple
from engine.usercall import awaitable, report_on_error
from engine.windowing.acking import WindowAcks
from engine.windowing.bolt import BaseWindowedBolt, TupleWindow
from engine.windowing.build import build_manager
from engine.windowing.event_time import EventTime
from engine.windowing.late import LATE_TUPLE_FIELD, LateTuples
from engine.windowing.manager import Activation, Expired
from engine.windowing.policies import TimeTrigger
from engine.windowing.spec import Duration, WindowSpec, check_limits
from engine.windowing.timers import Timers

__all__ = ["WindowedBoltExecutor"]


class WindowedBoltExecutor(Bolt):
    """Runs one task of a ``BaseWindowedBolt``; see the module docstring for the contract."""

    def __init__(self, inner: BaseWindowedBolt, component_id: str) -> None:
        self.inner = inner
        self.spec: WindowSpec = inner._spec()
        self.spec.check(f"bolt {component_id!r}")

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        self.inner.declare_output_fields(declarer)
        if self.spec.late_tuple_stream is not None:
            declarer.declare([LATE_TUPLE_FIELD], stream=self.spec.late_tuple_stream)

    def component_configuration(self) -> dict[str, Any] | None:
        return self.inner.component_configuration()

    def hold_secs(self, conf: dict[str, Any]) -> float:
        """How long a tuple can stay un-acked here by design: the window's length plus its
        slide in processing time; unbounded in time for a count window and in event time
        (there the watermark moves only as later tuples arrive). Flow control reads this
        (``engine.flow_control.longest_hold``)."""
        spec = self.spec
        if (spec.event_time or not isinstance(spec.length, Duration)
                or not isinstance(spec.slide, Duration)):
            return math.inf
        return (spec.length.millis + spec.slide.millis) / 1000

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Any) -> None:
        """Check the window against the limits, prepare the user's bolt, start the timers."""
        spec = self.spec
        self.name = f"bolt {context.component_id!r}"
        check_limits(self.name, spec, conf)
        self.bolt = copy.copy(self.inner)
        self.out = collector
        # Emits without anchors made during ``execute(window)`` are anchored to the
        # window's tuples (outside it, they get none).
        self.collector = AnchoringCollector(collector)
        self.acks = WindowAcks(collector)
        self._user_execute = awaitable(self.bolt, "execute")
        loop = asyncio.get_running_loop()
        self._loop_time = loop.time
        # Window timestamps are epoch ms, advanced by the loop's clock (virtual in tests).
        self._epoch = time.time() - loop.time()
        self.timers = Timers(loop.time, lambda exc: report_on_error(self.out, exc))
        self.manager = build_manager(spec)
        self.event_time: EventTime | None = None
        if spec.event_time:
            streams = [s for s in context.this_sources() if s[1] != CHECKPOINT_STREAM]
            late = LateTuples(self.name, collector, spec.late_tuple_stream)
            self.event_time = EventTime(self.name, spec, streams, late)
        await awaitable(self.bolt, "prepare")(conf, context, self.collector)
        self.start()

    def start(self) -> None:
        """Let triggers fire and start the timers."""
        self.manager.start()
        spec = self.spec
        if spec.event_time:
            self._spawn(spec.watermark_tick_ms, self._on_watermark_tick)
        elif isinstance(spec.slide, Duration):
            self._spawn(spec.slide.millis, self._on_slide_tick)

    def now_ms(self) -> int:
        """Epoch milliseconds on the running loop's clock."""
        return int((self._loop_time() + self._epoch) * 1000)

    # -- feeding the manager -----------------------------------------------------------------

    def add(self, tup: Tuple) -> None:
        """Stamp ``tup`` and queue it, or send it off as late."""
        now = self.now_ms()
        ts = self.stamp(tup, now)
        if ts is not None:
            self.manager.add(tup, ts, now)

    def stamp(self, tup: Tuple, now: int) -> int | None:
        """``tup``'s timestamp: ``now`` by processing time, else its event time; None when
        it is late (then it is sent off and acked here)."""
        if self.event_time is None:
            return now
        return self.event_time.stamp(tup)

    def watermark_after_batch(self, now: int) -> None:
        """A batch (or a tuple) was queued: move the watermark, if it moves per batch and
        the window started (as a periodic watermark starts with the window's timers)."""
        event_time = self.event_time
        if event_time is not None and self.manager.started:
            ts = event_time.after_batch()
            if ts is not None:
                self.manager.add_watermark(ts, now)

    def _on_slide_tick(self) -> None:
        trigger = self.manager.trigger
        assert isinstance(trigger, TimeTrigger)
        trigger.fire(self.now_ms())

    def _on_watermark_tick(self) -> None:
        assert self.event_time is not None
        now = self.now_ms()
        ts = self.event_time.tick(now, len(self.manager) > 0)
        if ts is not None:
            self.manager.add_watermark(ts, now)

    def in_windows(self) -> int:
        """Tuples this task holds in its window (not acked yet: their trees are pending)."""
        manager = getattr(self, "manager", None)
        return 0 if manager is None else len(manager)

    def input_ended(self) -> None:
        """Every spout is exhausted: an event-time window closes its last windows at the
        first watermark tick with no new tuple (``EventTime.tick``)."""
        if self.event_time is not None:
            self.event_time.input_ended = True

    # -- acting on the manager's outputs -------------------------------------------------------

    def activations(self) -> Iterator[Activation]:
        """The manager's outputs in order: expiries are acked here, activations yielded."""
        for out in self.manager.take_outputs():
            if isinstance(out, Expired):
                self.acks.expire(out.items)
            else:
                yield out

    @contextmanager
    def evaluating(self, act: Activation) -> Iterator[None]:
        """Around ``execute(window)``: an error fails the window's tuples (and is reported,
        not raised); anchoring to the window ends with it."""
        try:
            yield
        except BaseException as exc:
            self.acks.fail(act.new if self.spec.incremental else act.items, exc)
        else:
            self.evaluated(act)
        finally:
            self.collector.anchors = None

    def _window(self, act: Activation) -> TupleWindow:
        length = self.spec.length
        start = act.reference_time - length.millis if isinstance(length, Duration) else None
        # The whole window (Storm's), listed only if an emit comes; or, with
        # ``with_incremental()``, the evaluation's new tuples.
        self.collector.anchors = act.new if self.spec.incremental else act.window
        return TupleWindow(act.window, act.new, act.expired, start, act.reference_time,
                           act.size)

    def evaluated(self, act: Activation) -> None:
        """``execute(window)`` returned for ``act`` (a hook for stateful windows)."""

    def _spawn(self, every_ms: int, tick: Callable[[], None]) -> None:
        self.timers.every(every_ms, lambda: self._tick(tick))

    async def _tick(self, tick: Callable[[], None]) -> None:
        raise NotImplementedError

    async def cleanup(self) -> None:
        """Stop the timers, then the user's ``cleanup``."""
        timers = getattr(self, "timers", None)
        if timers is not None:
            await timers.cancel()
        if hasattr(self, "bolt"):
            await awaitable(self.bolt, "cleanup")()
