"""The loop watchdog names the call that blocks the loop, and stays quiet otherwise.

Real time here (a blocked loop cannot run a virtual clock): each test takes < 1 s.
"""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from engine import Bolt, Config, LocalCluster, TopologyBuilder
from engine.cpu_share import CpuTimes, thread_cpu, verdict
from engine.testing import FeederSpout, wait_until
from engine.watchdog import CallSite, LoopWatchdog, current_call, watchdog_for

LOG = logging.getLogger("test.watchdog")


def _blocking_execute(tup: object) -> None:
    time.sleep(0.3)  # a sync execute that holds the loop


def blocks_of(caplog: pytest.LogCaptureFixture, where: str) -> list[str]:
    """The watchdog's lines about blocks at ``where``. A busy machine can hold the loop
    elsewhere too (a log flush held it 0.31 s once under CI load): those are left out."""
    return [r.getMessage() for r in caplog.records if where in r.getMessage()]


async def test_a_blocking_call_is_reported_with_its_component_task_and_method(
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, LOG.name)
    async with LoopWatchdog(0.1, logger=LOG) as dog:
        marker = current_call()
        marker.site = CallSite("count", 3, "execute")
        _blocking_execute(None)
        marker.site = None
        await asyncio.sleep(0.06)  # the loop runs again: the next beat reports the duration
    lines = blocks_of(caplog, "_blocking_execute")
    assert dog.episodes >= 1
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
    async with LoopWatchdog(0.1, logger=LOG):
        await asyncio.sleep(0.15)
        for _ in range(20):  # 20 short steps of 10 ms, each under the threshold
            time.sleep(0.01)
            await asyncio.sleep(0)
    assert blocks_of(caplog, "test_watchdog.py") == []


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


async def test_running_topologies_share_one_watchdog_that_names_the_blocking_bolt(
        caplog: pytest.LogCaptureFixture) -> None:
    class Blocks(Bolt):
        def prepare(self, conf: object, context: object, collector: object) -> None:
            self.collector = collector

        def execute(self, tup: object) -> None:
            time.sleep(0.3)
            self.collector.ack(tup)  # type: ignore[attr-defined]

    caplog.set_level(logging.WARNING, "engine.watchdog")
    spout = FeederSpout(["v"])
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("block", Blocks()).shuffle_grouping("s")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config({"topology.loop.block.warn.secs": 0.1}),
                                      b.create_topology())
        other = TopologyBuilder()
        other.set_spout("idle", FeederSpout(["v"]))
        await cluster.submit_topology("u", Config({"topology.loop.block.warn.secs": 0.1}),
                                      other.create_topology())  # one watchdog per loop
        # Only the bolt's block counts: a busy machine may hold the loop elsewhere as well,
        # and a block that began elsewhere (a GC pause) is reported there, the bolt's sleep
        # inside it: then the bolt blocks once more.
        lines: list[str] = []
        for fed in range(1, 4):
            spout.feed(["x"], msg_id=fed)
            await wait_until(lambda n=fed: len(spout.events) == n)
            await asyncio.sleep(0.1)
            lines = blocks_of(caplog, "'block' task 2 execute()")
            if lines:
                break
    assert len(lines) == 2, lines  # once each, not once per topology
    assert "running 'block' task 2 execute() at " in lines[0]
    assert lines[1].startswith("event loop ran again after 0.")


class FakeCpu:
    """A CPU reader the test sets: what the loop thread ran and waited, in seconds."""

    def __init__(self) -> None:
        self.now = CpuTimes(10.0, 4.0)

    def __call__(self) -> CpuTimes:
        return self.now


@pytest.mark.parametrize(("ran", "waited", "says"), [
    (0.01, 0.28, "its thread got 0.01 s of CPU in those 0.{}s and waited 0.28 s for one: "
                 "the machine is starved, not the code"),
    (0.29, 0.0, "its thread got 0.29 s of CPU in those 0.{}s: the code kept the CPU busy"),
    (0.0, 0.01, "its thread got 0.00 s of CPU in those 0.{}s and waited 0.01 s for one: "
                "the code waited (a sleep, blocking I/O, a lock)"),
])
async def test_both_lines_say_whether_the_code_or_the_machine_held_the_loop(
        caplog: pytest.LogCaptureFixture, ran: float, waited: float, says: str) -> None:
    caplog.set_level(logging.WARNING, LOG.name)
    cpu = FakeCpu()
    async with LoopWatchdog(0.1, logger=LOG, cpu=cpu):
        await asyncio.sleep(0.06)  # a beat has read the CPU times before the episode
        # What the system reports once the episode is under way, whatever the machine does.
        cpu.now = CpuTimes(10.0 + ran, 4.0 + waited)
        _blocking_execute(None)
        await asyncio.sleep(0.06)
    lines = blocks_of(caplog, "_blocking_execute")
    assert len(lines) == 2, lines
    head, tail = says.split("{}")
    for line in lines:
        verdict_text = line.rsplit("; ", 1)[1]
        assert verdict_text.startswith(head) and verdict_text.endswith(tail), line


def test_without_a_run_queue_figure_the_verdict_says_what_it_cannot_tell() -> None:
    assert verdict(1.52, CpuTimes(3.0, None), CpuTimes(3.05, None)) == (
        "its thread got 0.05 s of CPU in those 1.52 s: the code waited (a sleep, blocking "
        "I/O, a lock) or the machine is starved")
    assert verdict(1.52, CpuTimes(3.0, None), CpuTimes(4.4, None)).endswith(
        ": the code kept the CPU busy")


def test_the_loop_threads_times_are_read_from_the_system() -> None:
    import threading

    read = thread_cpu(threading.get_native_id())
    first = read()
    sum(range(200_000))  # some CPU
    second = read()
    assert second.ran >= first.ran
    assert (first.waited is None) == (second.waited is None)
