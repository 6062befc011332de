"""The windowing executor: a ``Bolt`` that runs a user's ``BaseWindowedBolt``.

Storm's ``WindowedBoltExecutor``, as an adapter the topology builder puts around the user's
bolt, so the engine runs it like any bolt. Per input tuple it stamps the tuple (the event
loop's clock, or the tuple's own event time), feeds the window manager, and acts on what the
manager reports, in order:

- expired tuples are acked (through the collector the executor was given: in a stateful
  topology that collector holds the acks until the covering checkpoint commits);
- an activation calls the user's ``execute(window)``; whatever it emits without explicit
  anchors is anchored to every tuple of the window, so a downstream failure replays the
  window's inputs. If ``execute(window)`` raises, the error is reported and every tuple of
  the window is failed (they replay; the window is evaluated again with them).

Late tuples (event time, stamped before the last watermark) are acked at once, after a
copy went to the late-tuple stream if one is configured. Once told the input ended (every
spout exhausted: ``input_ended``), an event-time executor closes its last windows: at the
first watermark tick with no new tuple it moves the watermark past the latest tuple, so
their trees complete and a finite topology finishes. Time-driven work (the slide timer
of processing-time windows, the watermark of event-time ones) runs in timer tasks owned by
the executor, on the running loop's clock; they are cancelled at ``cleanup``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any

from engine.anchoring import AnchoringCollector
from engine.components import Bolt
from engine.context import TopologyContext
from engine.state.checkpoint import CHECKPOINT_STREAM
from engine.topology import OutputFieldsDeclarer
from engine.tuples import Source, Tuple
from engine.usercall import awaitable, fail_on_error, report_on_error
from engine.windowing.bolt import BaseWindowedBolt, TupleWindow
from engine.windowing.manager import Activation, Expired, WindowManager
from engine.windowing.policies import (
    CountEviction,
    CountTrigger,
    TimeEviction,
    TimeTrigger,
    WatermarkCountEviction,
    WatermarkCountTrigger,
    WatermarkTimeEviction,
    WatermarkTimeTrigger,
)
from engine.windowing.spec import Count, Duration, WindowSpec, check_limits
from engine.windowing.watermark import WatermarkGenerator

__all__ = ["LATE_TUPLE_FIELD", "DetachedTuple", "WindowedBoltExecutor", "build_manager",
           "windowed_executor"]

log = logging.getLogger("engine.windowing")

LATE_TUPLE_FIELD = "late_tuple"

NO_STAMP = -(1 << 63)  # below every stamp: none was read yet
_SRC = attrgetter("_src")
_VALUES = attrgetter("values")
_INT = {int}


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


def build_manager(spec: WindowSpec) -> WindowManager:
    """The window manager with Storm's policies for ``spec``."""
    length, slide = spec.length, spec.slide
    if isinstance(length, Count):
        eviction: Any = (WatermarkCountEviction(length.value) if spec.event_time
                         else CountEviction(length.value))
    else:
        assert isinstance(length, Duration)
        eviction = (WatermarkTimeEviction(length.millis, spec.lag_ms) if spec.event_time
                    else TimeEviction(length.millis))
    if isinstance(slide, Count):
        trigger: Any = WatermarkCountTrigger if spec.event_time else CountTrigger
        n = slide.value
    else:
        trigger = WatermarkTimeTrigger if spec.event_time else TimeTrigger
        n = slide.millis
    return WindowManager(eviction, lambda m, e: trigger(n, m, e), spec.incremental)


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
        self._timers: list[asyncio.Task[None]] = []
        self._user_execute = awaitable(self.bolt, "execute")
        loop = asyncio.get_running_loop()
        self._loop_time = loop.time
        # Window timestamps are epoch ms, advanced by the loop's clock (virtual in tests).
        self._epoch = time.time() - loop.time()
        self.manager = build_manager(spec)
        self.watermarks: WatermarkGenerator | None = None
        self.late = 0
        self._failed_ids: set[int] = set()  # failed by an evaluation, still in the window
        self._extract: Callable[[Tuple], Any] | None = None
        self._input_ended = False
        self._fresh = False  # a tuple came since the last watermark tick
        if spec.event_time:
            streams = [s for s in context.this_sources() if s[1] != CHECKPOINT_STREAM]
            self.watermarks = WatermarkGenerator(streams, spec.lag_ms)
            field = spec.timestamp_field
            self._extract = spec.timestamp_extractor or (lambda t: t[field])
        await awaitable(self.bolt, "prepare")(conf, context, self.collector)
        self.start()

    def start(self) -> None:
        """Let triggers fire and start the timers."""
        self.manager.start()
        spec = self.spec
        if spec.event_time:
            self._spawn(spec.watermark_interval_ms, self._on_watermark_tick)
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
        if self._extract is None:
            return now
        ts = self._checked(tup, self._extract(tup))
        assert self.watermarks is not None
        self._fresh = True
        if self.watermarks.track((tup.source_component, tup.source_stream), ts):
            return ts
        self._late(tup, ts)
        return None

    def _checked(self, tup: Tuple, ts: Any) -> int:
        if type(ts) is not int and (not isinstance(ts, int) or isinstance(ts, bool)):
            raise TypeError(f"{self.name}: event time of {tup!r} is {ts!r}; timestamps must "
                            f"be int milliseconds")
        return ts

    def _late(self, tup: Tuple, ts: int) -> None:
        stream = self.spec.late_tuple_stream
        if stream is not None:
            self.out.emit([DetachedTuple.of(tup)], tup, stream)
        else:
            self.late += 1
            if self.late & (self.late - 1) == 0:  # 1st, 2nd, 4th, 8th, ...: throttled
                assert self.watermarks is not None
                log.info("%s: late tuple %r stamped %d, before the watermark %d; not "
                         "processed (%d late so far; with_lag(...) allows more disorder)",
                         self.name, tup, ts, self.watermarks.last_watermark, self.late)
        self.out.ack(tup)

    def _on_slide_tick(self) -> None:
        trigger = self.manager.trigger
        assert isinstance(trigger, TimeTrigger)
        trigger.fire(self.now_ms())

    def _on_watermark_tick(self) -> None:
        assert self.watermarks is not None
        ts = self.watermarks.advance()
        if self._input_ended and not self._fresh:  # tuples still in flight wait a tick more
            ts = self.watermarks.finish(self._closing_span_ms()) or ts
        self._fresh = False
        if ts is not None:
            self.manager.add_watermark(ts, self.now_ms())

    def in_windows(self) -> int:
        """Tuples this task holds in its window (not acked yet: their trees are pending)."""
        manager = getattr(self, "manager", None)
        return 0 if manager is None else len(manager)

    def input_ended(self) -> None:
        """Every spout is exhausted: close the last event-time windows (module docstring)."""
        self._input_ended = True

    def _closing_span_ms(self) -> int:
        """How far past the latest tuple the watermark must go for every window holding a
        tuple to close and let it expire: a window's length and slide (0 for counts)."""
        spec = self.spec
        return sum(d.millis for d in (spec.length, spec.slide) if isinstance(d, Duration))

    # -- acting on the manager's outputs -------------------------------------------------------

    def activations(self) -> Iterator[Activation]:
        """The manager's outputs in order: expiries are acked here, activations yielded."""
        for out in self.manager.take_outputs():
            if isinstance(out, Expired):
                self._expire(out)
            else:
                yield out

    @contextmanager
    def evaluating(self, act: Activation) -> Iterator[None]:
        """Around ``execute(window)``: an error fails the window's tuples (and is reported,
        not raised); anchoring to the window ends with it."""
        try:
            yield
        except BaseException as exc:
            self._failed(act, exc)
        else:
            self.evaluated(act)
        finally:
            self.collector.anchors = None

    def _window(self, act: Activation) -> TupleWindow:
        length = self.spec.length
        start = act.reference_time - length.millis if isinstance(length, Duration) else None
        self.collector.anchors = act.new if act.items is None else act.items
        return TupleWindow(act.items, act.new, act.expired, start, act.reference_time,
                           act.size)

    def _expire(self, out: Expired) -> None:
        ack, failed = self.out.ack, self._failed_ids
        if not failed:
            deque(map(ack, out.items), 0)  # every one acked, at C speed
            return
        for tup in out.items:
            if failed and id(tup) in failed:
                failed.discard(id(tup))  # failed with its window already: no second outcome
            else:
                ack(tup)

    def evaluated(self, act: Activation) -> None:
        """``execute(window)`` returned for ``act`` (a hook for stateful windows)."""

    def _failed(self, act: Activation, exc: BaseException) -> None:
        failed = self._failed_ids
        tuples = act.new if act.items is None else act.items
        fresh = [tup for tup in tuples if id(tup) not in failed]
        fail_on_error(self.out, exc, fresh)
        failed.update(id(tup) for tup in fresh)

    def _spawn(self, every_ms: int, tick: Callable[[], None]) -> None:
        self._timers.append(asyncio.get_running_loop().create_task(self._every(every_ms, tick)))

    async def _every(self, every_ms: int, tick: Callable[[], None]) -> None:
        """Call ``tick`` at a fixed rate until cancelled; an error is reported, not fatal."""
        every = every_ms / 1000
        due = self._loop_time() + every
        while True:
            await asyncio.sleep(max(0.0, due - self._loop_time()))
            due += every
            if due < self._loop_time():  # fell behind by more than a period: realign
                due = self._loop_time() + every
            try:
                await self._tick(tick)
            except BaseException as exc:
                report_on_error(self.out, exc)

    async def _tick(self, tick: Callable[[], None]) -> None:
        raise NotImplementedError

    async def cleanup(self) -> None:
        """Stop the timers, then the user's ``cleanup``."""
        timers = getattr(self, "_timers", [])
        for task in timers:
            task.cancel()
        await asyncio.gather(*timers, return_exceptions=True)
        if hasattr(self, "bolt"):
            await awaitable(self.bolt, "cleanup")()


class SyncWindowedBoltExecutor(WindowedBoltExecutor):
    """For a plain ``def execute(window)``: everything runs without awaiting."""

    executes_batches = True  # the bolt executor hands it whole queue batches

    def execute(self, tup: Tuple) -> None:
        self.execute_batch((tup,))

    def execute_batch(self, batch: list[Tuple] | tuple[Tuple, ...]) -> None:
        """``execute`` each tuple of a queue batch: all are stamped with one reading of
        the clock and queued in one call; the window's outputs are acted on after them."""
        now = self.now_ms()
        if self._extract is None:
            items = [tup for tup in batch if not tup.is_tick()]
            stamps = [now] * len(items)
        else:
            items, stamps = self._on_time(batch)
        self.manager.add_all(items, stamps, now)
        self.drain()

    def _on_time(self, batch: list[Tuple] | tuple[Tuple, ...]) -> tuple[list[Tuple], list[int]]:
        """The tuples of ``batch`` not late by their event time, and their stamps; a late
        one is sent off here, one without an int stamp fails. The watermark cannot move
        within a batch, so each stream's latest stamp is told to it once per run of tuples
        from one source, and a stamp field is read by its position in that source.

        The common batch (one source, int stamps in a field, none late) is read in a few
        passes at C speed; any other goes tuple by tuple."""
        srcs = set(map(_SRC, batch))
        if len(srcs) == 1:
            at = self._stamp_at(batch[0])
            if at >= 0:
                stamps = list(map(itemgetter(at), map(_VALUES, batch)))
                assert self.watermarks is not None
                if (set(map(type, stamps)) == _INT
                        and min(stamps) >= self.watermarks.last_watermark):
                    self._seen(srcs.pop(), max(stamps))
                    return list(batch), stamps
        return self._on_time_each(batch)

    def _on_time_each(self, batch: list[Tuple] | tuple[Tuple, ...]
                      ) -> tuple[list[Tuple], list[int]]:
        items: list[Tuple] = []
        stamps: list[int] = []
        extract, checked = self._extract, self._checked
        assert extract is not None and self.watermarks is not None
        watermark = self.watermarks.last_watermark
        src: Source | None = None
        at, high = -1, NO_STAMP
        for tup in batch:
            if tup._src is not src:
                self._seen(src, high)
                src, at, high = tup._src, self._stamp_at(tup), NO_STAMP
            if at < -1:
                continue  # a tick
            try:
                ts = tup.values[at] if at >= 0 else extract(tup)
                if type(ts) is not int:
                    ts = checked(tup, ts)
            except BaseException as exc:
                fail_on_error(self.out, exc, (tup,))
                continue
            if ts > high:
                high = ts
            if ts >= watermark:
                items.append(tup)
                stamps.append(ts)
            else:
                self._late(tup, ts)
        self._seen(src, high)
        return items, stamps

    def _stamp_at(self, tup: Tuple) -> int:
        """Where ``_on_time`` finds the stamps of tuples from ``tup``'s source: -2 nowhere
        (a tick), -1 through the extractor, else the timestamp field's position."""
        if tup.is_tick():
            return -2
        field, fields = self.spec.timestamp_field, tup.fields
        if self.spec.timestamp_extractor is not None or field is None or field not in fields:
            return -1  # the extractor (or ``tup[field]``, which names the missing field)
        return fields.index(field)

    def _seen(self, src: Source | None, high: int) -> None:
        """Tuples from ``src`` came, the latest stamped ``high`` (``NO_STAMP``: none read)."""
        if src is not None and high != NO_STAMP:
            assert self.watermarks is not None
            self.watermarks.track((src.component, src.stream), high)
            self._fresh = True

    def drain(self) -> None:
        """Act on the manager's outputs (most tuples cause none: nothing to start then)."""
        if not self.manager.outputs:
            return
        for act in self.activations():
            with self.evaluating(act):
                self.bolt.execute(self._window(act))

    async def _tick(self, tick: Callable[[], None]) -> None:
        tick()
        self.drain()


class AsyncWindowedBoltExecutor(WindowedBoltExecutor):
    """For ``async def execute(window)``: a lock keeps timers and tuples from interleaving."""

    async def prepare(self, conf: dict[str, Any], context: TopologyContext,
                      collector: Any) -> None:
        self._lock = asyncio.Lock()
        await super().prepare(conf, context, collector)

    async def execute(self, tup: Tuple) -> None:
        if tup.is_tick():
            return
        async with self._lock:
            self.add(tup)
            await self.drain()

    async def drain(self) -> None:
        """Act on the manager's outputs (the lock is held)."""
        for act in self.activations():
            with self.evaluating(act):
                await self._user_execute(self._window(act))

    async def _tick(self, tick: Callable[[], None]) -> None:
        async with self._lock:
            tick()
            await self.drain()


def windowed_executor(component_id: str, bolt: BaseWindowedBolt) -> WindowedBoltExecutor:
    """The executor for ``bolt``: synchronous or not, as its ``execute`` is."""
    is_async = inspect.iscoroutinefunction(bolt.execute)
    cls = AsyncWindowedBoltExecutor if is_async else SyncWindowedBoltExecutor
    return cls(bolt, component_id)
