"""Logs an operator can use: errors throttled per component, one warning per interval for
conditions that last, and a stalled pipeline that says so. On virtual time."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from engine import Bolt, Config, LocalCluster, Spout, TopologyBuilder
from engine.cli import _status
from engine.testing import VirtualTimePolicy
from tests.engine.helpers import Hold


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Ticking(Spout):
    """One tracked tuple every 2 ms (an async ``next_tuple``), or raising when ``bad``."""

    def __init__(self, bad: bool = False) -> None:
        self.bad = bad

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.n = collector, 0

    async def next_tuple(self) -> None:
        await asyncio.sleep(0.002)
        if self.bad:
            raise ValueError(f"no input {self.n}")
        self.collector.emit([self.n], msg_id=self.n)
        self.n += 1


class Raises(Bolt):
    def execute(self, tup: Any) -> None:
        raise ValueError(f"boom {tup[0]}")


def _lines(caplog: pytest.LogCaptureFixture, level: int, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level
            and text in r.getMessage()]


async def _run(spout: Spout, bolt: Bolt, secs: float, parallelism: int = 1,
               **conf: Any) -> dict[str, Any]:
    b = TopologyBuilder()
    b.set_spout("src", spout)
    b.set_bolt("work", bolt, parallelism).shuffle_grouping("src")
    # Flow control off: these tests drive the conditions it would otherwise prevent.
    c = Config({"topology.message.timeout.secs": 2, "topology.spout.flow.control": False})
    c.update(conf)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", c, b.create_topology())
        await asyncio.sleep(secs)
        return cluster.stats("t")


async def test_a_bolt_raising_on_every_tuple_logs_five_errors_per_ten_seconds(
        caplog: pytest.LogCaptureFixture) -> None:
    stats = await _run(Ticking(), Raises(), 30.5, parallelism=2)
    errors = stats["components"]["work"]["errors"]
    lines = _lines(caplog, logging.ERROR, "bolt 'work'")
    assert errors > 10000
    assert 10 <= len(lines) <= 20  # 5 per 10 s window: windows start at 0, 10, 20, 30 s
    suppressed = [line for line in lines if "similar errors suppressed in the last 10 s" in line]
    assert suppressed
    counted = sum(int(line.rsplit("(", 1)[1].split()[0]) for line in suppressed)
    assert errors - len(lines) - 500 <= counted <= errors - len(lines)  # 500: the last 1 s


async def test_a_raising_next_tuple_is_throttled_too(caplog: pytest.LogCaptureFixture) -> None:
    stats = await _run(Ticking(bad=True), Hold(), 20.5)
    lines = _lines(caplog, logging.ERROR, "spout 'src'")
    assert stats["components"]["src"]["errors"] > 1000  # one call per idle back-off
    assert 10 <= len(lines) <= 15
    assert all("ValueError: no input" in line for line in lines)


async def test_timeouts_give_one_warning_per_interval_naming_the_spout(
        caplog: pytest.LogCaptureFixture) -> None:
    stats = await _run(Ticking(), Hold(), 30.5)
    lines = _lines(caplog, logging.WARNING, "trees timed out")
    assert stats["components"]["src"]["failed_timeout"] > 5000
    assert 2 <= len(lines) <= 3
    assert all(line.startswith("spout 'src': ") for line in lines)
    assert "(message timeout 2 s)" in lines[0]
    assert "times since the last report" in lines[-1]


async def test_a_full_queue_warns_once_per_interval_and_the_pipeline_says_it_is_stalled(
        caplog: pytest.LogCaptureFixture) -> None:
    class Slow(Bolt):
        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        async def execute(self, tup: Any) -> None:
            await asyncio.sleep(0.5)
            self.collector.ack(tup)

    b = TopologyBuilder()
    b.set_spout("src", Ticking())
    b.set_bolt("work", Slow()).shuffle_grouping("src")
    conf = Config({"topology.message.timeout.secs": 600,
                   "topology.executor.receive.buffer.size": 2,
                   "topology.spout.flow.control": False})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", conf, b.create_topology())
        await asyncio.sleep(25.5)
        stats = cluster.stats("t")
        line = _status("t", stats, {"src"}, {"acked": 0.0, "t": 0.0})
    states = {(s["component"], s["state"]) for s in stats["stalled"]}
    assert ("work", "queue_full") in states
    assert ("src", "blocked") in states
    full = _lines(caplog, logging.WARNING, "receive queue full")
    assert 2 <= len(full) <= 3
    assert full[0].startswith("bolt 'work' task 2: receive queue full for ")
    assert " stalled=" in line and "work:queue_full" in line and "src:blocked" in line


async def test_nothing_is_stalled_when_the_pipeline_keeps_up() -> None:
    class Fast(Bolt):
        def prepare(self, conf: Any, context: Any, collector: Any) -> None:
            self.collector = collector

        def execute(self, tup: Any) -> None:
            self.collector.ack(tup)

    stats = await _run(Ticking(), Fast(), 8.5)
    assert stats["stalled"] == []
    assert stats["components"]["src"]["acked"] > 1000
    assert " stalled=" not in _status("t", stats, {"src"}, {"acked": 0.0, "t": 0.0})
