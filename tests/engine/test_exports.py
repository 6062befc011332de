"""The engine's public names are importable from ``engine``, and ``Config`` has Storm's
setters."""

from __future__ import annotations

import engine
from engine import Config

API_NAMES = [
    "TopologyBuilder", "Config", "Spout", "Bolt", "BasicBolt", "FailedException",
    "LocalCluster", "TopologyError", "ConfigError", "Tuple", "Fields", "TopologyContext",
    "OutputCollector", "TOPOLOGY_MESSAGE_TIMEOUT_SECS", "TOPOLOGY_ACKER_EXECUTORS",
    "TOPOLOGY_MAX_SPOUT_PENDING", "TOPOLOGY_TICK_TUPLE_FREQ_SECS",
    "TOPOLOGY_EXECUTOR_RECEIVE_BUFFER_SIZE", "TOPOLOGY_DEBUG",
]


def test_api_names_are_exported() -> None:
    missing = [n for n in API_NAMES if n not in engine.__all__ or not hasattr(engine, n)]
    assert missing == []


def test_errors_are_value_errors() -> None:
    assert issubclass(engine.TopologyError, ValueError)
    assert issubclass(engine.ConfigError, ValueError)


def test_config_is_a_dict_with_setters() -> None:
    assert issubclass(Config, dict)
    for setter in ("set_message_timeout_secs", "set_num_ackers", "set_max_spout_pending",
                   "set_debug"):
        assert callable(getattr(Config(), setter))
