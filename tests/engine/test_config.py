"""Config values are checked at submit time; errors name the key."""

from __future__ import annotations

from typing import Any

import pytest

from engine import Config, ConfigError, LocalCluster, TopologyBuilder
from engine.config import validate_config
from engine.testing import FeederSpout


def test_setters_use_storm_keys() -> None:
    conf = Config()
    conf.set_message_timeout_secs(5)
    conf.set_num_ackers(2)
    conf.set_max_spout_pending(100)
    conf.set_debug(True)
    assert conf == {"topology.message.timeout.secs": 5, "topology.acker.executors": 2,
                    "topology.max.spout.pending": 100, "topology.debug": True}
    merged = validate_config(conf)
    assert merged["topology.tick.tuple.freq.secs"] is None
    assert merged["topology.loop.block.warn.secs"] == 1.0
    assert validate_config({"topology.loop.block.warn.secs": None})[
        "topology.loop.block.warn.secs"] is None


@pytest.mark.parametrize(("key", "value", "valid"), [
    ("topology.message.timeout.secs", 0, "a number of seconds > 0"),
    ("topology.message.timeout.secs", "30", "a number of seconds > 0"),
    ("topology.acker.executors", -1, "an int >= 0"),
    ("topology.acker.executors", 1.5, "an int >= 0"),
    ("topology.max.spout.pending", 0, "an int >= 1 or None"),
    ("topology.tick.tuple.freq.secs", -1, "a number of seconds > 0 or None"),
    ("topology.executor.receive.buffer.size", 0, "an int >= 1"),
    ("topology.debug", "yes", "true or false \\(or 1 or 0\\)"),
    ("topology.debug", 2, "true or false \\(or 1 or 0\\)"),
    ("topology.loop.block.warn.secs", 0, "a number of seconds > 0 or None"),
    ("topology.loop.block.warn.secs", True, "a number of seconds > 0 or None"),
])
async def test_bad_values_raise_at_submit(key: str, value: Any, valid: str) -> None:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"]))
    async with LocalCluster() as cluster:
        with pytest.raises(ConfigError, match=rf"^topology 't': config '{key}' must be "
                                              rf"{valid}, got {value!r}$"):
            await cluster.submit_topology("t", {key: value}, b.create_topology())


async def test_bad_component_configuration_names_the_component() -> None:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"])).add_configuration("topology.tick.tuple.freq.secs", 0)
    async with LocalCluster() as cluster:
        with pytest.raises(ConfigError, match=r"^spout 's': config "
                                              r"'topology.tick.tuple.freq.secs'"):
            await cluster.submit_topology("t", {}, b.create_topology())


@pytest.mark.parametrize(("value", "expected"), [
    (True, True), (False, False), ("true", True), ("True", True), ("1", True), (1, True),
    ("false", False), ("False", False), ("0", False), (0, False)])
def test_booleans_accept_text_and_digits(value: Any, expected: bool) -> None:
    assert validate_config({"topology.debug": value})["topology.debug"] is expected


@pytest.mark.parametrize(("key", "nearest"), [
    ("topology.max.spout.pendng", "topology.max.spout.pending"),
    ("topology.message.timeout.sec", "topology.message.timeout.secs"),
    ("topology.acker.executor", "topology.acker.executors"),
    ("topology.debg", "topology.debug"),
])
def test_unknown_topology_key_names_the_nearest_known_key(key: str, nearest: str) -> None:
    with pytest.raises(ConfigError, match=rf"^topology: unknown config key '{key}'; "
                                          rf"did you mean '{nearest}'\?$"):
        validate_config({key: 1})


def test_unknown_topology_key_far_from_any_lists_the_known_keys() -> None:
    with pytest.raises(ConfigError, match=r"unknown config key 'topology.zzz'; known keys: "
                                          r"topology.acker.executors, "):
        validate_config({"topology.zzz": 1})


def test_other_keys_pass_through_for_user_code() -> None:
    merged = validate_config({"wordcount.top": 3, "kafka.bootstrap.servers": "h:1", 7: "x"})
    assert merged["wordcount.top"] == 3
    assert merged["kafka.bootstrap.servers"] == "h:1"


def test_every_default_and_checked_key_is_known() -> None:
    from engine.config import _CHECKS, DEFAULTS, known_keys

    assert set(DEFAULTS) | set(_CHECKS) <= known_keys()


async def test_unknown_key_in_a_component_configuration_names_the_component() -> None:
    b = TopologyBuilder()
    b.set_spout("s", FeederSpout(["v"])).add_configuration("topology.tick.freq.secs", 1)
    async with LocalCluster() as cluster:
        with pytest.raises(ConfigError, match=r"^spout 's': unknown config key "
                                              r"'topology.tick.freq.secs'; did you mean "
                                              r"'topology.tick.tuple.freq.secs'\?$"):
            await cluster.submit_topology("t", {}, b.create_topology())
