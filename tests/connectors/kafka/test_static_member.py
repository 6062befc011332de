"""Static member ids: one per consumer (component and task), stable for a worker id, none
without one or with a session too short to outlast a restart; a group_instance_id of the
user's is refused; a hop's reader gets its own."""

from __future__ import annotations

import logging
from types import SimpleNamespace

import pytest

from connectors.kafka import KafkaSpout
from connectors.kafka.repartition import hop
from connectors.kafka.static_member import instance_id
from engine.config import TOPOLOGY_WORKER_ID, validate_config
from engine.errors import ConfigError
from engine.keyed import reader_id


def _task(component: str, index: int) -> SimpleNamespace:
    return SimpleNamespace(component_id=component, task_index=index)


def test_each_consumer_of_a_worker_has_its_own_stable_id() -> None:
    conf = {TOPOLOGY_WORKER_ID: "host-a-1"}
    ids = {instance_id(conf, _task(c, i), {}) for c in ("sentences", reader_id("count"))
           for i in (0, 1)}
    assert ids == {"host-a-1-sentences-0", "host-a-1-sentences-1",
                   "host-a-1-__count-repartition-0", "host-a-1-__count-repartition-1"}
    assert instance_id(conf, _task("sentences", 1), {}) == "host-a-1-sentences-1"  # again


def test_without_a_worker_id_a_consumer_is_a_dynamic_member() -> None:
    assert instance_id({}, _task("sentences", 0), {}) is None
    assert instance_id(validate_config({}), _task("sentences", 0), {}) is None


def test_a_component_id_is_made_fit_for_kafka() -> None:
    conf = {TOPOLOGY_WORKER_ID: 7}  # --conf topology.worker.id=7 reads as a number
    assert instance_id(conf, _task("my spout/1", 2), {}) == "7-my_spout_1-2"
    long = instance_id({TOPOLOGY_WORKER_ID: "w"}, _task("c" * 400, 12), {})
    assert long is not None and len(long) == 249 and long.endswith("c-12")


@pytest.mark.parametrize("bad", ["", "a b", "x" * 101, "é", -1, True, 1.5])
def test_a_bad_worker_id_is_one_line(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^topology: config 'topology.worker.id' must be a "
                                          r"name of 1 to 100 letters"):
        validate_config({TOPOLOGY_WORKER_ID: bad})


def test_a_group_instance_id_in_the_consumer_options_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^KafkaSpout: consumer option 'group_instance_id' "
                                         r"is not supported: every task would share it"):
        KafkaSpout("t", "localhost:9092", "g", group_instance_id="host-a")


def test_a_hop_reader_carries_no_instance_id_of_its_upstream() -> None:
    upstream = KafkaSpout("t", "localhost:9092", "g")
    _, reader = hop(upstream, "count", ("word",), ("word",))
    assert "group_instance_id" not in reader.consumer_options
    assert "group_instance_id" not in upstream.consumer_options


def test_a_session_that_cannot_outlast_a_restart_keeps_a_dynamic_member(caplog) -> None:
    log = logging.getLogger("t")
    conf = {TOPOLOGY_WORKER_ID: "w"}
    with caplog.at_level(logging.WARNING, logger="t"):
        for index in range(3):  # every task of the component
            assert instance_id(conf, _task("short", index), {"session_timeout_ms": 2000},
                               log) is None
        assert instance_id(conf, _task("long", 0), {"session_timeout_ms": 6000}, log) == (
            "w-long-0")
    assert [r.getMessage() for r in caplog.records] == [
        "KafkaSpout 'short': session_timeout_ms=2000 cannot outlast a restart of this "
        "process, so its consumers stay dynamic members of their group (a restart is a "
        "rebalance); give it 6000 or more for static membership (docs/scaling.md)"]
