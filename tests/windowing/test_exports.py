"""The public names of windows and state, with the signatures users program against."""

from __future__ import annotations

import inspect

from engine import Bolt
from engine.config import TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS, TOPOLOGY_STATE_DIR
from engine.state import KeyValueState, StatefulBolt
from engine.windowing import BaseWindowedBolt, Count, Duration, TupleWindow


def test_chained_configuration_returns_the_bolt() -> None:
    bolt = BaseWindowedBolt()
    assert bolt.with_window(Count(3)) is bolt
    assert bolt.with_window(Duration(10), Duration(1)) is bolt
    assert bolt.with_tumbling_window(Count(5)) is bolt
    assert bolt.with_timestamp_field("ts") is bolt
    assert bolt.with_timestamp_extractor(lambda t: 0) is bolt
    assert bolt.with_lag(Duration(1)) is bolt
    assert bolt.with_watermark_interval(Duration(0.5)) is bolt
    assert bolt.with_idle_timeout(Duration(2)) is bolt
    assert bolt.with_late_tuple_stream("late") is bolt
    params = inspect.signature(BaseWindowedBolt.with_window).parameters
    assert list(params) == ["self", "length", "slide"] and params["slide"].default is None
    assert BaseWindowedBolt().with_window(Count(3))._spec().slide == Count(1)


def test_window_accessors() -> None:
    window = TupleWindow([1, 2], [2], [0], 1000, 2000)  # type: ignore[list-item]
    assert window.get() == [1, 2] and window.get_new() == [2] and window.get_expired() == [0]
    assert (window.start_timestamp, window.end_timestamp) == (1000, 2000)
    assert Duration(1.5).millis == 1500


def test_state_names() -> None:
    assert issubclass(StatefulBolt, Bolt)
    assert list(inspect.signature(StatefulBolt.init_state).parameters) == ["self", "state"]
    params = inspect.signature(KeyValueState.get).parameters
    assert list(params) == ["self", "key", "default"] and params["default"].default is None
    for name in ("put", "delete", "__iter__"):
        assert callable(getattr(KeyValueState, name))
    assert TOPOLOGY_STATE_DIR == "topology.state.dir"
    assert TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS == "topology.state.checkpoint.interval.ms"
