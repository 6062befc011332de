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
    ("topology.debug", "yes", "True or False"),
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
