"""Storm's rolling windows (10 minutes, 3 hours, all time) over cumulative counters.

Storm keeps each window as a ring of buckets; here a ring holds snapshots of the
cumulative figures taken at bucket boundaries (one per ``window / 20`` seconds), never
one entry per tuple. A window's figure is the current value minus the newest snapshot
taken at or before the window's start, over the time between the two (so a window spans
at least its length, a bucket more at most while snapshots keep coming). Time is passed
in, so the rings are a pure core. A short ring of its own (``RATE_WINDOW``, the last
minute in 5-second buckets) gives the rates per second.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

__all__ = ["ALL_TIME", "BUCKETS", "RATE_WINDOW", "WINDOWS", "Delta", "WindowRings",
           "parse_window", "window_label"]

ALL_TIME = ":all-time"
WINDOWS = ("600", "10800", ALL_TIME)
BUCKETS = 20
RATE_WINDOW = "60"
"""The recent window rates per second are taken over (a delta key, not a view window)."""
_RATE_BUCKETS = 12

Figures = Mapping[str, float]


class Delta:
    """What happened within a window: counter increases and the seconds they span."""

    __slots__ = ("elapsed", "values")

    def __init__(self, values: dict[str, float], elapsed: float) -> None:
        self.values = values
        self.elapsed = elapsed

    def __getitem__(self, key: str) -> float:
        return self.values.get(key, 0)

    def ratio(self, num: str, den: str) -> float | None:
        """``num / den`` within the window, ``None`` when ``den`` did not move."""
        d = self[den]
        return self[num] / d if d else None

    def per_sec(self, key: str) -> float | None:
        """``key``'s increase per second, ``None`` over less than a second."""
        return round(self[key] / self.elapsed, 3) if self.elapsed >= 1.0 else None


class _Ring:
    __slots__ = ("samples", "secs", "step")

    def __init__(self, secs: float, buckets: int) -> None:
        self.secs = secs
        self.step = secs / buckets
        # Two samples more than the buckets: the oldest is at or before the window's start.
        self.samples: deque[tuple[float, dict[str, float]]] = deque(maxlen=buckets + 2)

    def offer(self, now: float, figures: Figures) -> None:
        if not self.samples or now - self.samples[-1][0] >= self.step:
            self.samples.append((now, dict(figures)))

    def base(self, now: float) -> tuple[float, dict[str, float]]:
        """The newest sample at or before the window's start (the oldest if none is)."""
        start = now - self.secs
        chosen = self.samples[0]
        for sample in self.samples:
            if sample[0] > start:
                break
            chosen = sample
        return chosen


class WindowRings:
    """The 600 s and 10800 s rings of one topology, plus its start for all time.

    ``started`` is when the counters were all zero (the topology's start).
    """

    def __init__(self, started: float, windows: tuple[float, ...] = (600.0, 10800.0),
                 buckets: int = BUCKETS) -> None:
        self.started = started
        self._rings = {str(int(w)): _Ring(w, buckets) for w in windows}
        self._rings[RATE_WINDOW] = _Ring(float(RATE_WINDOW), _RATE_BUCKETS)
        for ring in self._rings.values():
            ring.samples.append((started, {}))

    def offer(self, now: float, figures: Figures) -> None:
        """Keep ``figures`` (cumulative) as a bucket boundary where one is due."""
        for ring in self._rings.values():
            ring.offer(now, figures)

    def delta(self, window: str, now: float, figures: Figures) -> Delta:
        """``figures`` minus their value at the start of ``window`` (or at the start)."""
        if window == ALL_TIME:
            return Delta(dict(figures), max(now - self.started, 0.0))
        at, base = self._rings[window].base(now)
        return Delta({k: v - base.get(k, 0) for k, v in figures.items()}, max(now - at, 0.0))


def parse_window(raw: str | None) -> str:
    """The window a request names (``600``, ``10800``, ``:all-time``; default all time)."""
    if raw is None or raw in ("", "all-time", ALL_TIME):
        return ALL_TIME
    if raw in WINDOWS:
        return raw
    raise ValueError(f"window {raw!r}: expected one of 600, 10800, :all-time")


def window_label(window: str) -> str:
    """Storm's ``windowPretty``: ``10m 0s``, ``3h 0m 0s``, ``All time``."""
    if window == ALL_TIME:
        return "All time"
    secs = int(window)
    h, rest = divmod(secs, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h {m}m {s}s" if h else f"{m}m {s}s"
