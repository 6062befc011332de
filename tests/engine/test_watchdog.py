"""The loop watchdog names the call that blocks the loop, and stays quiet otherwise.

Real time here (a blocked loop cannot run a virtual clock): each test takes < 1 s.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from engine.watchdog import CallSite, LoopWatchdog, current_call, watchdog_for

LOG = logging.getLogger("test.watchdog")


def _blocking_execute(tup: object) -> None:
    time.sleep(0.3)  # a sync execute that holds the loop


async def test_a_blocking_call_is_reported_with_its_component_task_and_method(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, LOG.name)
    async with LoopWatchdog(0.1, logger=LOG) as dog:
        marker = current_call()
        marker.site = CallSite("count", 3, "execute")
        _blocking_execute(None)
        marker.site = None
        await asyncio.sleep(0.06)  # the loop runs again: the next beat reports the duration
    lines = [r.getMessage() for r in caplog.records]
    assert dog.episodes == 1
    assert len(lines) == 2, lines
    assert lines[0].startswith("event loop blocked for ")
    assert "running 'count' task 3 execute() at " in lines[0]
    assert "in _blocking_execute" in lines[0]
    assert lines[1].startswith("event loop ran again after 0.")
    blocked = float(lines[1].split("after ")[1].split(" s")[0])
    assert 0.25 <= blocked < 0.6


async def test_an_idle_or_busy_but_yielding_loop_is_not_reported(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, LOG.name)
    async with LoopWatchdog(0.1, logger=LOG) as dog:
        await asyncio.sleep(0.15)
        for _ in range(20):  # 20 short steps of 10 ms, each under the threshold
            time.sleep(0.01)
            await asyncio.sleep(0)
    assert dog.episodes == 0 and caplog.records == []


async def test_the_marker_is_one_object_per_loop_and_restores_on_exit() -> None:
    marker = current_call()
    assert current_call() is marker
    site = CallSite("s", 1, "next_tuple")
    with marker.running(site):
        assert marker.site is site
    assert marker.site is None


def test_a_bad_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^LoopWatchdog threshold must be > 0 s, got 0$"):
        LoopWatchdog(0)


def test_the_config_key_sets_the_threshold_or_turns_it_off() -> None:
    dog = watchdog_for({"topology.loop.block.warn.secs": 0.5})
    assert dog is not None and dog.threshold == 0.5 and dog.period == 0.125
    assert watchdog_for({"topology.loop.block.warn.secs": None}) is None
    default = watchdog_for({})
    assert default is not None and default.threshold == 1.0
