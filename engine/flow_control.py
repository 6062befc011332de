"""Flow control: an adaptive limit on one spout task's trees in flight (pure: time is an argument).

Why: when a topology is slower than its spouts, every tree emitted beyond what the slowest
bolt clears within the message timeout waits in a queue, times out, is replayed and is
executed for nothing; goodput collapses (and a large ``topology.max.spout.pending`` does
not help, it only sets how deep the queues get). The cure is to keep the trees in flight
near what the topology completes well inside the timeout.

How (additive increase, multiplicative decrease on complete latency, as TCP Reno does on
loss, with delay as the signal):

- The limit starts at ``INITIAL_LIMIT`` and, while the spout is held back by it, grows by
  one per acked tree (doubling per round trip: *slow start*) until the first cut or the
  first latency above half the target (the signal lags a round trip behind the limit,
  and doubling overshoots by that much), then by ``1 / limit`` per acked tree (one per
  round trip: *congestion avoidance*). It never
  grows while the spout emits less than it allows, so an idle or source-bound spout keeps
  the limit it had.
- A sampled complete latency above the *target* cuts the limit to ``BETA`` times the trees
  then in flight (never below ``MIN_LIMIT``); so does a tree that timed out. The target is
  ``timeout * TARGET_FRACTION`` (a tree waiting in queues then never reaches its timeout,
  and the memory held stays a tenth of what the timeout would allow), raised to twice
  the smallest latency seen lately where the work itself is slow (a bolt whose every
  call takes seconds is not a queue), and never above half the timeout.
- One cut per round trip: a signal from a tree emitted before the last cut says nothing
  about the new limit and is ignored. So is a latency beyond the timeout: only a tree kept
  alive by ``reset_timeout`` gets there, and its user chose that.
- ``topology.max.spout.pending`` stays a hard cap: the limit never exceeds it.
- A limit on trees is no limit on bytes: 64 trees of 10 MB values hold 640 MB. So the
  spout executor also stops a task while its trees in flight hold
  ``topology.spout.max.pending.bytes`` of values (weighed at emit by the collector), and
  a round stopped that way does not count as ``limited``: the limit on trees does not
  grow while bytes hold the spout back.
- A bolt that keeps tuples un-acked by design (a window until it slides past them, a
  stateful bolt until the checkpoint that covers them) says for how long in ``hold_secs``.
  Complete latency cannot tell such a hold from queueing, and a limit that grows once
  per round trip grows once per hold: minutes to reach the tens of thousands of trees a
  10 s window holds, and never where the hold is counted in tuples (a count window, an
  event-time window whose watermark moves only as more tuples arrive). So a spout
  upstream of a window runs without the adaptive limit, bounded by
  ``topology.max.spout.pending`` alone, as Storm's spouts are.
- A spout whose longest hold downstream is a checkpoint's (a stateful bolt acks only at
  the commit that covers a tuple) gets a ``HoldLimit`` instead: the trees it needs in
  flight are what it completes per second times the checkpoint round, so the limit
  follows ``HEADROOM`` times that, measured per round, between ``HOLD_MIN_LIMIT`` and a
  memory bound, ``HOLD_MAX_LIMIT`` (and the cap). It needs no latency signal, queueing
  stays within a few rounds, and a stalled checkpoint stops the spout within a couple of
  rounds' worth of trees, which also bounds what a crash then replays.

Cost when nothing is overloaded: one integer comparison per ``next_tuple`` call (as the
cap already had) and a few float operations per batch of acks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

__all__ = [
    "BETA",
    "HEADROOM",
    "HOLD_MAX_LIMIT",
    "HOLD_MIN_LIMIT",
    "INITIAL_LIMIT",
    "MIN_LIMIT",
    "TARGET_FRACTION",
    "FlowLimit",
    "HoldLimit",
    "checkpoint_round",
    "longest_hold",
]

INITIAL_LIMIT: Final = 64
MIN_LIMIT: Final = 1
BETA: Final = 0.7
TARGET_FRACTION: Final = 0.1
# A spout paced by checkpoints: the limit is HEADROOM x (trees acked per second) x the
# round, within these bounds (per spout task; a held tree costs about half a kilobyte
# beyond its tuples' values, so the upper bound is some 125 MB). The upper bound lets a
# spout completing 100,000 trees a second run through a 1 s round without waiting for it.
HEADROOM: Final = 2.0
HOLD_MIN_LIMIT: Final = 10_000
HOLD_MAX_LIMIT: Final = 250_000
# The latency floor (smallest recent latency) is kept per window of this many timeouts.
_FLOOR_WINDOW_TIMEOUTS: Final = 1.0


class FlowLimit:
    """The adaptive in-flight limit of one spout task; ``limit`` is the int in force.

    Guarantees: ``MIN_LIMIT <= limit`` and, with a cap, ``limit <= cap``; the limit only
    grows on acks that came while it held the spout back (``limited``); it is cut at most
    once per round trip, only on a latency above ``target()`` or a timeout.
    """

    __slots__ = ("_cap", "_cut_at", "_floor", "_floor_prev", "_floor_start", "_ssthresh",
                 "_value", "cuts", "limit", "limited", "timeout")

    def __init__(self, timeout: float, cap: int | None = None,
                 initial: int = INITIAL_LIMIT, now: float = 0.0) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout!r}")
        self.timeout = timeout
        self._cap = cap
        self._value = float(initial if cap is None else min(initial, cap))
        self._ssthresh = float("inf")
        self._cut_at = float("-inf")
        self._floor = float("inf")
        self._floor_prev = float("inf")
        self._floor_start = now
        self.limit = max(MIN_LIMIT, int(self._value))
        """The limit in force: ``next_tuple`` is not called while this many trees are pending."""
        self.limited = False
        """Set by the executor when the limit stopped a round; acks grow the limit only then."""
        self.cuts = 0

    def target(self) -> float:
        """The complete latency above which the limit is cut (seconds)."""
        floor = min(self._floor, self._floor_prev)
        return min(self.timeout * 0.5, max(self.timeout * TARGET_FRACTION, 2 * floor))

    def acked(self, n: int) -> None:
        """``n`` trees were acked; grow the limit if it was what held the spout back."""
        if not self.limited or n <= 0:
            return
        value = self._value
        if value < self._ssthresh:
            value += n
        else:
            value += n / value
        if self._cap is not None and value > self._cap:
            value = float(self._cap)
        self._value = value
        self.limit = int(value)

    def latency(self, started: float, now: float, in_flight: int) -> bool:
        """A tree emitted at ``started`` was acked at ``now``; True when this cut the limit."""
        seconds = now - started
        if now - self._floor_start >= self.timeout * _FLOOR_WINDOW_TIMEOUTS:
            self._floor_prev, self._floor, self._floor_start = self._floor, seconds, now
        elif seconds < self._floor:
            self._floor = seconds
        if started < self._cut_at or seconds > self.timeout:
            return False  # old news, or a tree kept alive by reset_timeout: not a queue
        target = self.target()
        if seconds <= target:
            if seconds > target * 0.5 and self._value < self._ssthresh:
                self._ssthresh = self._value  # half way there: grow by one per round trip
            return False
        return self._cut(now, in_flight)

    def timed_out(self, now: float, in_flight: int) -> bool:
        """A tree of this task timed out at ``now``; True when this cut the limit."""
        if now - self.timeout < self._cut_at:
            return False  # emitted before the last cut
        return self._cut(now, in_flight)

    def _cut(self, now: float, in_flight: int) -> bool:
        value = max(float(MIN_LIMIT), min(self._value, float(in_flight)) * BETA)
        self._value = self._ssthresh = value
        self.limit = int(value)
        self._cut_at = now
        self.cuts += 1
        return True


def longest_hold(bolts: Iterable[tuple[str, Any]],
                 conf: Mapping[str, Mapping[str, Any]]) -> tuple[float, str | None]:
    """The longest by-design hold among ``(component id, bolt)`` pairs, and whose it is.

    A bolt declares its hold with ``hold_secs(conf) -> float`` (the longest it keeps a
    tuple un-acked on purpose, ``math.inf`` when unbounded in time); a bolt without one
    holds nothing. ``conf`` maps component id to that component's config.
    """
    longest, who = 0.0, None
    for cid, bolt in bolts:
        hold = getattr(bolt, "hold_secs", None)
        seconds = 0.0 if hold is None else float(hold(conf[cid]))
        if seconds > longest:
            longest, who = seconds, cid
    return longest, who


class HoldLimit(FlowLimit):
    """The in-flight limit of a spout task paced by checkpoints (see the module docstring).

    A stateful bolt acks a tuple only at the commit that covers it, so acks come in a burst
    per checkpoint and complete latency is about a round whatever the load: no signal of
    queueing. What the spout needs in flight is its throughput times the round; the limit
    is ``HEADROOM`` times that, re-measured once per ``round_secs`` from the task's count
    of acked trees (``acked_count``), within ``HOLD_MIN_LIMIT`` and ``ceiling()``.

    Guarantees: ``HOLD_MIN_LIMIT`` (or the cap, if lower) ``<= limit <= ceiling()``; while
    the spout is held back the limit grows by ``2 * HEADROOM`` per round; a round without
    acks (a stalled checkpoint) leaves it as it was, so trees in flight stay within about
    ``HEADROOM`` rounds of what the topology completed before the stall.
    """

    __slots__ = ("_acked_count", "_clock", "_rate", "_round", "_window_acks",
                 "_window_start")

    def __init__(self, timeout: float, round_secs: float, acked_count: Callable[[], int],
                 clock: Callable[[], float], cap: int | None = None) -> None:
        super().__init__(timeout, cap, now=clock())
        if round_secs <= 0:
            raise ValueError(f"round_secs must be > 0, got {round_secs!r}")
        self._round = round_secs
        self._acked_count = acked_count
        self._clock = clock
        self._rate = 0.0
        # No measurement until the first ack: the time before it (a consumer group's join,
        # the first checkpoint round) says nothing about the rate.
        self._window_start: float | None = None
        self._window_acks = acked_count()
        self._value = float(self.ceiling())
        self.limit = int(self._value)

    def ceiling(self) -> int:
        """The memory bound: ``HOLD_MAX_LIMIT``, or the cap if lower."""
        return HOLD_MAX_LIMIT if self._cap is None else min(HOLD_MAX_LIMIT, self._cap)

    def target(self) -> float:
        """How long a call must hang before its queue's tuples count as stranded (the spout
        executor's widening): half the timeout, as no latency is measured here."""
        return self.timeout * 0.5

    def acked(self, n: int) -> None:
        """Acks while the limit held the spout back: time to re-measure, perhaps."""
        self.observe(self._clock())

    def latency(self, started: float, now: float, in_flight: int) -> bool:
        """A sampled ack: time to re-measure the rate, perhaps. Never cuts."""
        self.observe(now)
        return False

    def timed_out(self, now: float, in_flight: int) -> bool:
        """A timeout cuts nothing: the next rounds' rate says what the topology completes."""
        self.observe(now)
        return False

    def observe(self, now: float) -> None:
        """Once per round: the limit becomes ``HEADROOM`` x the best of the last two rounds'
        rates x the round. A gap of more than two rounds since the last look (no acks: a
        stall, or too few to sample) only restarts the measurement, as does the first ack:
        the window starts there, so that the burst of acks it opens counts."""
        if self._window_start is None:
            self._window_start, self._window_acks = now, self._acked_count()
            return
        elapsed = now - self._window_start
        if elapsed < self._round:
            return
        acks = self._acked_count()
        if elapsed <= 2 * self._round and acks > self._window_acks:
            rate = (acks - self._window_acks) / elapsed
            best, self._rate = max(rate, self._rate), rate
            low = min(HOLD_MIN_LIMIT, self.ceiling())
            self._value = min(float(self.ceiling()), max(low, HEADROOM * best * self._round))
            self.limit = int(self._value)
        self._window_start, self._window_acks = now, acks


def checkpoint_round(bolt: Any, conf: Mapping[str, Any]) -> float | None:
    """The checkpoint round that paces ``bolt``'s hold (``checkpoint_round(conf)`` on the
    bolt), or None when its hold is not a checkpoint's (a window's, or none)."""
    paced = getattr(bolt, "checkpoint_round", None)
    return None if paced is None else paced(conf)
