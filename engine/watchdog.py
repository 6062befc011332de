"""A watchdog for the event loop: who blocked it, and for how long.

A heartbeat runs on the loop every ``threshold / 4``; a daemon thread wakes as often and,
when the last beat is older than ``threshold``, logs one WARNING for the blocked episode,
naming the user call that is running (from the loop's ``CurrentCall`` marker) and the line
the loop thread is on. When the loop runs again, the next beat logs how long it was blocked.
Both lines go through an ``ErrorThrottle`` (5 episodes per 10 s are reported), and both
say how much CPU the loop's thread got in the episode and how long it waited for one
(``cpu_share``): a call that kept the CPU busy is the code's doing; a loop whose thread
sat in the run queue was starved by an overloaded machine, whatever call it was in.

The marker is for executors; setting it costs one attribute store on each side of a call::

    marker = current_call()                   # once per executor, on the loop
    where = CallSite("count", 3, "execute")   # once per task and method
    ...
    marker.site = where
    execute(tup)                              # sync or async user code
    marker.site = None

(``with marker.running(where): ...`` does the same where speed does not matter.) For an
``async`` method the marker names the user call that entered last and has not returned;
the line of code the loop thread is on is reported beside it and is always exact.

Time: the thread cannot ask a blocked loop the time, so both sides read the injected
``clock`` (``time.monotonic`` unless a test gives another), and the injected ``cpu``
reader (the loop thread's ``cpu_share.thread_cpu`` unless a test gives another).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from engine.config import TOPOLOGY_LOOP_BLOCK_WARN_SECS
from engine.cpu_share import CpuTimes, thread_cpu, verdict
from engine.log_throttle import ErrorThrottle

__all__ = ["CallSite", "CurrentCall", "LoopWatchdog", "current_call", "watchdog_for"]

log = logging.getLogger("engine.watchdog")


@dataclass(frozen=True, slots=True)
class CallSite:
    """A user method of one task: what the watchdog names when that call blocks the loop."""

    component: str
    task: int
    method: str

    def __str__(self) -> str:
        return f"{self.component!r} task {self.task} {self.method}()"


class CurrentCall:
    """The user call the loop is running now (``site``), set by executors around user code."""

    __slots__ = ("__weakref__", "site")

    def __init__(self) -> None:
        self.site: CallSite | None = None

    @contextmanager
    def running(self, site: CallSite) -> Iterator[None]:
        """Mark ``site`` as running for the body (restoring the previous mark after)."""
        before, self.site = self.site, site
        try:
            yield
        finally:
            self.site = before


_markers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, CurrentCall] = (
    weakref.WeakKeyDictionary())


def current_call(loop: asyncio.AbstractEventLoop | None = None) -> CurrentCall:
    """The marker of ``loop`` (default: the running loop); the same object on every call."""
    loop = loop or asyncio.get_running_loop()
    marker = _markers.get(loop)
    if marker is None:
        marker = _markers[loop] = CurrentCall()
    return marker


class LoopWatchdog:
    """Reports calls that block the running loop longer than ``threshold`` seconds.

    ``start()`` on the loop, ``stop()`` (or ``async with``) when done; one per loop.
    """

    def __init__(self, threshold: float = 1.0, logger: logging.Logger | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 cpu: Callable[[], CpuTimes] | None = None) -> None:
        if threshold <= 0:
            raise ValueError(f"LoopWatchdog threshold must be > 0 s, got {threshold!r}")
        self.threshold = threshold
        self.period = threshold / 4
        self._log = logger or log
        self._clock = clock
        self._cpu = cpu  # the loop thread's CPU times; set at start() unless injected
        self._throttle = ErrorThrottle(self._log)
        self._beat = 0.0
        self._beat_cpu = CpuTimes(0.0, None)  # read with each beat
        self._episode_cpu = self._beat_cpu  # the last beat's, when an episode began
        self._blocked_since: float | None = None  # set by the thread while reported
        self._episode: str = ""
        self.episodes = 0
        """Blocked episodes seen so far (reported or throttled)."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._marker: CurrentCall | None = None
        self._loop_thread = 0

    def start(self) -> None:
        """Start the heartbeat on the running loop and the watching thread."""
        self._loop = asyncio.get_running_loop()
        self._marker = current_call(self._loop)
        self._loop_thread = threading.get_ident()
        if self._cpu is None:
            self._cpu = thread_cpu(threading.get_native_id())
        self._beat = self._clock()
        self._beat_cpu = self._cpu()
        self._handle = self._loop.call_later(self.period, self._on_beat)
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, name="loop-watchdog", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop both sides; returns at once (the thread exits within one period)."""
        self._stop.set()
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    async def __aenter__(self) -> LoopWatchdog:
        self.start()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.stop()

    def _on_beat(self) -> None:
        now = self._clock()
        assert self._cpu is not None
        cpu = self._cpu()
        since = self._blocked_since
        if since is not None:
            self._blocked_since = None
            ok, _ = self._throttle.allow(now)
            if ok:
                self._log.warning("event loop ran again after %.2f s blocked (%s); %s",
                                  now - since, self._episode,
                                  verdict(now - since, self._episode_cpu, cpu))
        self._beat = now
        self._beat_cpu = cpu
        if self._loop is not None and not self._stop.is_set():
            self._handle = self._loop.call_later(self.period, self._on_beat)

    def _watch(self) -> None:
        while not self._stop.wait(self.period):
            beat = self._beat
            late = self._clock() - beat
            if late <= self.threshold or self._blocked_since is not None:
                continue
            self.episodes += 1
            self._episode = self._describe()
            self._episode_cpu = start_cpu = self._beat_cpu
            self._blocked_since = beat
            ok, dropped = self._throttle.allow(self._clock())
            if ok:
                assert self._cpu is not None
                extra = f"; {dropped} blocked episodes not reported" if dropped else ""
                self._log.warning("event loop blocked for %.2f s so far (threshold %g s), "
                                  "running %s; %s%s", late, self.threshold, self._episode,
                                  verdict(late, start_cpu, self._cpu()), extra)

    def _describe(self) -> str:
        site = self._marker.site if self._marker is not None else None
        where = "no user call" if site is None else str(site)
        frame = sys._current_frames().get(self._loop_thread)
        if frame is not None:
            where += f" at {frame.f_code.co_filename}:{frame.f_lineno} in {frame.f_code.co_name}"
        return where


def watchdog_for(conf: Mapping[str, Any]) -> LoopWatchdog | None:
    """The watchdog a validated topology ``conf`` asks for (None when the key is None)."""
    threshold = conf.get(TOPOLOGY_LOOP_BLOCK_WARN_SECS, 1.0)
    return None if threshold is None else LoopWatchdog(float(threshold))
