"""Windowed bolts in a running topology: anchoring, acking on expiry, replay, late tuples,
validation at submit."""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest

from engine import LocalCluster, Spout, TopologyBuilder, TopologyError
from engine.testing import CaptureBolt, FailOn, FeederSpout, wait_until
from engine.windowing import BaseWindowedBolt, Count, DetachedTuple, Duration, TupleWindow
from tests.windowing.bolts import SumWindow

CONF = {"topology.message.timeout.secs": 30}


class AsyncSumWindow(SumWindow):
    async def execute(self, window: TupleWindow) -> None:  # type: ignore[override]
        self.windows.append(window)
        self.collector.emit([sum(t["n"] for t in window.get())])


class Boom(SumWindow):
    def execute(self, window: TupleWindow) -> None:
        raise RuntimeError("window went wrong")


def topology(window: BaseWindowedBolt, spout: Spout, sink: CaptureBolt,
             stream: str = "default") -> Any:
    b = TopologyBuilder()
    b.set_spout("numbers", spout)
    b.set_bolt("window", window).shuffle_grouping("numbers")
    b.set_bolt("sink", sink).shuffle_grouping("window", stream)
    return b.create_topology()


@pytest.mark.parametrize("cls", [SumWindow, AsyncSumWindow])
async def test_inputs_are_acked_when_they_expire_not_before(cls: type[SumWindow]) -> None:
    spout, sink = FeederSpout(["n"]), CaptureBolt()
    window = cls().with_tumbling_window(Count(3))
    async with LocalCluster() as cluster:
        await cluster.submit_topology("w", CONF, topology(window, spout, sink))
        for n in (1, 2, 3):
            spout.feed([n], msg_id=n)
        await wait_until(lambda: sink.values() == [[6]])
        assert spout.acked() == []  # still in the window
        for n in (4, 5, 6):
            spout.feed([n], msg_id=n)
        await wait_until(lambda: sorted(spout.acked()) == [1, 2, 3])
        assert sink.values() == [[6], [15]]
        assert spout.failed() == []
    second = window.windows[1]  # the copies share the list made in __init__
    assert [t["n"] for t in second.get()] == [4, 5, 6] == [t["n"] for t in second.get_new()]
    assert [t["n"] for t in second.get_expired()] == [1, 2, 3]
    assert second.start_timestamp is None and second.end_timestamp > 0


async def test_a_failed_downstream_emit_replays_the_windows_inputs() -> None:
    spout = FeederSpout(["n"])
    sink = CaptureBolt(fail_on=FailOn(lambda v: v[0] == 6))
    async with LocalCluster() as cluster:
        await cluster.submit_topology("w", CONF, topology(
            SumWindow().with_tumbling_window(Count(3)), spout, sink))
        for n in (1, 2, 3, 10, 20, 30):
            spout.feed([n], msg_id=n)
        await wait_until(lambda: sorted(spout.failed()) == [1, 2, 3])
        await wait_until(lambda: len(sink.values()) == 2)
        assert spout.acked() == []  # 10, 20, 30 wait in the window; 1, 2, 3 failed
        for n in (1, 2, 3):  # the source replays them
            spout.feed([n], msg_id=n)
        await wait_until(lambda: sorted(spout.acked()) == [10, 20, 30])


async def test_an_error_in_execute_window_fails_the_windows_tuples() -> None:
    spout, sink = FeederSpout(["n"]), CaptureBolt()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("w", CONF, topology(
            Boom().with_tumbling_window(Count(2)), spout, sink))
        for n in (1, 2, 3, 4):
            spout.feed([n], msg_id=n)
        await wait_until(lambda: sorted(spout.failed()) == [1, 2, 3, 4])
        stats = cluster.stats("w")["components"]["window"]
        assert stats["errors"] == 2
        assert stats["acked"] == 0  # expired after failing: not acked a second time


async def test_processing_time_window_on_the_loop_clock() -> None:
    spout, sink = FeederSpout(["n"]), CaptureBolt()
    window = SumWindow().with_window(Duration(0.2), Duration(0.05))
    async with LocalCluster() as cluster:
        await cluster.submit_topology("w", CONF, topology(window, spout, sink))
        spout.feed([5], msg_id=5)
        await wait_until(lambda: [5] in sink.values())
        # Acked once it left the window: length + slide at most, on the loop's clock.
        waited = await wait_until(lambda: spout.acked() == [5])
        assert waited < 3.0  # length + slide is 0.25 s; slack for a loaded machine
    first = window.windows[0]
    assert first.end_timestamp - first.start_timestamp == 200  # type: ignore[operator]


async def test_late_tuples_go_to_the_late_stream_and_are_acked_at_once() -> None:
    spout = FeederSpout(["n", "ts"])
    late_sink, sink = CaptureBolt(), CaptureBolt()
    window = (SumWindow().with_tumbling_window(Duration(1)).with_timestamp_field("ts")
              .with_watermark_interval(Duration(0.01)).with_late_tuple_stream("late"))
    b = TopologyBuilder()
    b.set_spout("numbers", spout)
    b.set_bolt("window", window).shuffle_grouping("numbers")
    b.set_bolt("sink", sink).shuffle_grouping("window")
    b.set_bolt("late", late_sink).shuffle_grouping("window", "late")
    async with LocalCluster() as cluster:
        await cluster.submit_topology("w", CONF, b.create_topology())
        spout.feed([1, 10_500], msg_id="a")
        spout.feed([2, 12_000], msg_id="b")  # watermark 12 s: windows ending 11 s, 12 s fire
        await wait_until(lambda: sink.values() == [[1], [2]])
        await wait_until(lambda: spout.acked() == ["a"])  # expired at the second window
        spout.feed([3, 9_000], msg_id="late")
        await wait_until(lambda: spout.acked() == ["a", "late"])
        await wait_until(lambda: len(late_sink.values()) == 1)
        detached = late_sink.values()[0][0]
        assert isinstance(detached, DetachedTuple)
        assert detached["n"] == 3 and detached["ts"] == 9_000
        assert detached.source_component == "numbers"


def test_a_late_tuple_stream_needs_event_time() -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", FeederSpout(["n"]))
    b.set_bolt("window", SumWindow().with_window(Count(3)).with_late_tuple_stream("late")
               ).shuffle_grouping("numbers")
    with pytest.raises(TopologyError, match=r"^bolt 'window': with_late_tuple_stream needs "
                                            r"event time"):
        b.create_topology()


def test_a_window_needs_a_length() -> None:
    b = TopologyBuilder()
    b.set_spout("numbers", FeederSpout(["n"]))
    b.set_bolt("window", SumWindow()).shuffle_grouping("numbers")
    with pytest.raises(TopologyError, match=r"^bolt 'window': no window length"):
        b.create_topology()


@pytest.mark.parametrize(("window", "conf", "message"), [
    (SumWindow().with_window(Duration(20), Duration(15)), {},
     r"bolt 'window': window length \+ slide is 35 s, more than "
     r"topology.message.timeout.secs = 30 s"),
    (SumWindow().with_window(Duration(31)), {},
     r"bolt 'window': window length is 31 s, more than topology.message.timeout.secs = 30 s"),
    (SumWindow().with_window(Count(10), Count(2)), {"topology.max.spout.pending": 11},
     r"bolt 'window': window length \+ slide is 12 tuples, more than "
     r"topology.max.spout.pending = 11"),
    (SumWindow().with_window(Count(5), Duration(40)), {"topology.max.spout.pending": 100},
     r"bolt 'window': window slide is 40 s, more than topology.message.timeout.secs = 30 s"),
])
async def test_windows_longer_than_the_limits_are_refused_at_submit(
        window: SumWindow, conf: dict[str, Any], message: str) -> None:
    topo = topology(window, FeederSpout(["n"]), CaptureBolt())
    async with LocalCluster() as cluster:
        with pytest.raises(TopologyError, match=message):
            await cluster.submit_topology("w", {**CONF, **conf}, topo)
        assert cluster.topologies() == []


def test_an_idle_timeout_without_event_time_is_refused() -> None:
    window = SumWindow().with_window(Duration(1)).with_idle_timeout(Duration(2))
    with pytest.raises(TopologyError, match=r"bolt 'window': with_idle_timeout needs event "
                                            r"time; call with_timestamp_field"):
        topology(window, FeederSpout(["n"]), CaptureBolt())
    with pytest.raises(ValueError, match="with_idle_timeout takes at least 1 ms"):
        SumWindow().with_idle_timeout(Duration(0))


async def test_late_tuples_without_a_stream_are_logged_throttled(caplog: Any) -> None:
    caplog.set_level(logging.INFO, logger="engine.windowing")
    spout, sink = FeederSpout(["n", "ts"]), CaptureBolt()
    window = (SumWindow().with_tumbling_window(Duration(1)).with_timestamp_field("ts")
              .with_watermark_interval(Duration(0.01)))
    async with LocalCluster() as cluster:
        await cluster.submit_topology("w", CONF, topology(window, spout, sink))
        spout.feed([1, 10_000], msg_id="first")
        spout.feed([1, 20_000], msg_id="second")
        await wait_until(lambda: len(sink.values()) == 2)
        for i in range(10):
            spout.feed([i, 5_000], msg_id=i)
        await wait_until(lambda: set(range(10)) <= set(spout.acked()))  # acked at once
    counts = [re.search(r"\((\d+) late so far", r.getMessage()) for r in caplog.records]
    assert [m.group(1) for m in counts if m] == ["1", "2", "4", "8"]


@pytest.mark.parametrize("cls", [SumWindow, AsyncSumWindow])
async def test_event_time_windows_close_at_the_end_of_a_finite_input(
        cls: type[SumWindow]) -> None:
    """Once every spout is exhausted the watermark moves past the last tuple: the last
    windows are evaluated, every tree completes and the topology is finished."""
    from connectors.memory import ListSpout

    stamped = [[n, 1000 * n] for n in range(1, 8)]  # n at n seconds
    window = (cls().with_tumbling_window(Duration(2)).with_timestamp_field("ts")
              .with_watermark_interval(Duration.of_millis(50)))
    spout, sink = ListSpout(stamped, ["n", "ts"]), CaptureBolt()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("w", CONF, topology(window, spout, sink))
        await wait_until(lambda: cluster.finished("w"), timeout=10)
        final = await cluster.kill_topology("w", wait_secs=0)
    # Windows (0, 2], (2, 4], (4, 6], (6, 8] s: the input's own watermark (7 s) closes the
    # first three; the last closes only because the input ended.
    assert sink.values() == [[1 + 2], [3 + 4], [5 + 6], [7]]
    assert sorted(spout.acked) == [(0, i) for i in range(7)]
    assert final["abandoned"] == 0


async def test_a_stop_names_the_tuples_left_in_open_windows(
        caplog: pytest.LogCaptureFixture) -> None:
    """A stop is not the end of the input (a Kafka spout is never exhausted): the windows
    stay open, and the drain's warning says why their trees were abandoned."""
    window = (SumWindow().with_tumbling_window(Duration(10)).with_timestamp_field("ts")
              .with_watermark_interval(Duration.of_millis(50)))
    spout, sink = FeederSpout(["n", "ts"]), CaptureBolt()
    async with LocalCluster() as cluster:
        await cluster.submit_topology("w", CONF, topology(window, spout, sink))
        for n in (1, 2, 3):
            spout.feed([n, 1000 * n], msg_id=n)
        await wait_until(lambda: cluster.stats("w")["components"]["window"]["executed"] == 3)
        final = await cluster.kill_topology("w", wait_secs=0.1)
    assert final["abandoned"] == 3 and sink.values() == []
    warning = [r.getMessage() for r in caplog.records if "abandoned" in r.getMessage()]
    assert warning == [
        "topology 'w': drain timed out after 0.1 s; 3 tracked trees abandoned (their spouts "
        "heard neither ack nor fail); 3 tuples were in windows not closed yet: a stop is not "
        "the end of the input, so their windows stay open; a replaying source (Kafka) emits "
        "them again on the next run"]
