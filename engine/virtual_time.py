"""An event loop whose clock jumps ahead whenever every task is idle.

``VirtualTimeLoop`` is an ordinary selector loop except for time: ``loop.time()`` starts
at 0 and moves only when the loop would otherwise wait for its next timer, and then it
jumps straight to that timer (trio's ``MockClock(autojump_threshold=0)``). Ready I/O is
still polled first, and with no timer pending the loop blocks for real (on the
self-pipe, so threads can still wake it). ``asyncio.sleep(30)`` therefore returns at
once, ``asyncio.wait_for`` times out at once, and work that never idles is unaffected:
a test sees exactly the interleaving it would at full speed, minus the waiting.

Use it with pytest-asyncio by overriding the loop policy in a test module::

    from engine.testing import VirtualTimePolicy

    @pytest.fixture
    def event_loop_policy():
        return VirtualTimePolicy()

    async def test_tree_times_out():
        ...   # topology.message.timeout.secs = 30 runs in milliseconds

or from a plain test through the ``virtual_loop`` fixture (``engine.testing`` is a pytest
plugin; ``tests/conftest.py`` loads it)::

    def test_backoff(virtual_loop):
        virtual_loop.run(main())          # run_until_complete
        assert virtual_loop.time() == 7.5  # virtual seconds spent

Durations read with ``loop.time()`` (or ``engine.clock``) are virtual; ``time.monotonic()``
is not and must not be used for timeouts in code under test.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

__all__ = ["VirtualTimeLoop", "VirtualTimePolicy"]

T = TypeVar("T")


class _JumpingSelector(selectors.BaseSelector):
    """A real selector that, asked to wait ``timeout`` seconds, advances the clock instead."""

    def __init__(self, loop: VirtualTimeLoop) -> None:
        self._real = selectors.DefaultSelector()
        self._loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._real.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._real.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:
            return self._real.select(None)  # nothing scheduled: only I/O or a thread can help
        ready = self._real.select(0)
        if ready or timeout <= 0:
            return ready
        self._loop.advance(timeout)
        return []

    def close(self) -> None:
        self._real.close()

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._real.get_map()


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """A selector loop on virtual time that autojumps to the next timer when idle."""

    def __init__(self, start: float = 0.0) -> None:
        self._virtual_now = start
        super().__init__(_JumpingSelector(self))

    def time(self) -> float:
        """Virtual seconds: they pass only while every task is idle."""
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` ahead (the loop does this itself when idle)."""
        if seconds < 0:
            raise ValueError(f"virtual time cannot go back: advance({seconds})")
        self._virtual_now += seconds

    def run(self, main: Coroutine[Any, Any, T]) -> T:
        """Run ``main`` to completion on this loop and return its result."""
        return self.run_until_complete(main)


class VirtualTimePolicy(asyncio.DefaultEventLoopPolicy):
    """An event-loop policy whose new loops are ``VirtualTimeLoop``s (for pytest-asyncio)."""

    def new_event_loop(self) -> asyncio.AbstractEventLoop:
        return VirtualTimeLoop()
