"""Event time for one task of a windowed bolt: each tuple's stamp, whether it is late, and
the watermark.

A stamp is read from the tuple's timestamp field (by its position in the tuple's stream)
or by the extractor, and must be an int (ms). Each input stream's latest stamp is told to
the watermark generator; a tuple stamped before the last watermark is late and sent off
(``LateTuples``). The watermark moves after each batch of tuples (``after_batch``) unless
the window asked for Storm's periodic one (``with_watermark_interval``): then only at the
ticks of that interval (``tick``). Two rules move it at a tick with no new tuple since
the last one, so that the last windows close and their tuples' trees complete: once told
the input ended, past the latest tuple by the window's length and slide; with an idle
timeout (``with_idle_timeout``), once the input has been quiet that long while the window
holds tuples, on with the clock from the latest tuple (a Kafka topic written once never
says it ended).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from operator import attrgetter, itemgetter
from typing import Any

from engine.tuples import Source, Tuple
from engine.usercall import fail_on_error
from engine.windowing.late import LateTuples
from engine.windowing.spec import Duration, WindowSpec
from engine.windowing.watermark import WatermarkGenerator

__all__ = ["NO_STAMP", "EventTime"]

NO_STAMP = -(1 << 63)  # below every stamp: none was read yet
_SRC = attrgetter("_src")
_VALUES = attrgetter("values")
_INT = {int}

Batch = list[Tuple] | tuple[Tuple, ...]


class EventTime:
    """The stamps, lateness and watermark of one task (``name`` in errors) reading
    ``streams`` for a window configured by ``spec``."""

    def __init__(self, name: str, spec: WindowSpec, streams: Iterable[Hashable],
                 late: LateTuples) -> None:
        self.name = name
        self.spec = spec
        self.late = late
        self.watermarks = WatermarkGenerator(streams, spec.lag_ms)
        field = spec.timestamp_field
        self.extract: Callable[[Tuple], Any] = (spec.timestamp_extractor
                                                or (lambda t: t[field]))
        self.per_batch = spec.watermark_interval_ms is None
        self.input_ended = False
        self.fresh = False  # a tuple came since the last watermark tick
        self.quiet_since: int | None = None  # the last tick that saw a tuple (epoch ms)

    def stamp(self, tup: Tuple) -> int | None:
        """``tup``'s event time; None when it is late (then it is sent off and acked)."""
        ts = self.checked(tup, self.extract(tup))
        self.fresh = True
        if self.watermarks.track((tup.source_component, tup.source_stream), ts):
            return ts
        self.late.send(tup, ts, self.watermarks.last_watermark)
        return None

    def checked(self, tup: Tuple, ts: Any) -> int:
        """``ts``, or ``TypeError`` naming ``tup`` when it is not int milliseconds."""
        if type(ts) is not int and (not isinstance(ts, int) or isinstance(ts, bool)):
            raise TypeError(f"{self.name}: event time of {tup!r} is {ts!r}; timestamps must "
                            f"be int milliseconds")
        return ts

    def after_batch(self) -> int | None:
        """The watermark to add after a batch, if it moves per batch and moved."""
        return self.watermarks.advance() if self.per_batch else None

    def tick(self, now: int, holding: bool) -> int | None:
        """The watermark to add at a tick at ``now`` (epoch ms), if it moved; with nothing
        new since the last tick, as ``_quiet_watermark`` says (``holding``: the window
        holds tuples)."""
        ts = self.watermarks.advance()
        if self.fresh:  # a tuple came: the end or the quiet waits a tick more
            self.quiet_since = now
        else:
            ts = self._quiet_watermark(now, holding) or ts
        self.fresh = False
        return ts

    def _quiet_watermark(self, now: int, holding: bool) -> int | None:
        """No tuple since the last tick: at the end of the input, the watermark past the
        latest tuple; once the input has been quiet for the idle timeout while the window
        holds tuples, event time going on with the clock. The quiet counts from the tick
        that saw the last tuple, so event time never runs ahead of the clock."""
        if self.input_ended:
            return self.watermarks.finish(self._closing_span_ms())
        idle, since = self.spec.idle_timeout_ms, self.quiet_since
        if idle is None or since is None or not holding or now - since < idle:
            return None
        return self.watermarks.idle(now - since)

    def _closing_span_ms(self) -> int:
        """How far past the latest tuple the watermark must go for every window holding a
        tuple to close and let it expire: a window's length and slide (0 for counts)."""
        spec = self.spec
        return sum(d.millis for d in (spec.length, spec.slide) if isinstance(d, Duration))

    def on_time(self, batch: Batch, out: Any) -> tuple[list[Tuple], list[int]]:
        """The tuples of ``batch`` not late by their event time, and their stamps; a late
        one is sent off here, one without an int stamp fails (through ``out``). The
        watermark cannot move within a batch, so each stream's latest stamp is told to it
        once per run of tuples from one source, and a stamp field is read by its position
        in that source.

        The common batch (one source, int stamps in a field, none late) is read in a few
        passes at C speed; any other goes tuple by tuple."""
        srcs = set(map(_SRC, batch))
        if len(srcs) == 1:
            at = self._stamp_at(batch[0])
            if at >= 0:
                stamps = list(map(itemgetter(at), map(_VALUES, batch)))
                if (set(map(type, stamps)) == _INT
                        and min(stamps) >= self.watermarks.last_watermark):
                    self._seen(srcs.pop(), max(stamps))
                    return list(batch), stamps
        return self._on_time_each(batch, out)

    def _on_time_each(self, batch: Batch, out: Any) -> tuple[list[Tuple], list[int]]:
        items: list[Tuple] = []
        stamps: list[int] = []
        extract, checked = self.extract, self.checked
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
                fail_on_error(out, exc, (tup,))
                continue
            if ts > high:
                high = ts
            if ts >= watermark:
                items.append(tup)
                stamps.append(ts)
            else:
                self.late.send(tup, ts, watermark)
        self._seen(src, high)
        return items, stamps

    def _stamp_at(self, tup: Tuple) -> int:
        """Where ``on_time`` finds the stamps of tuples from ``tup``'s source: -2 nowhere
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
            self.watermarks.track((src.component, src.stream), high)
            self.fresh = True
