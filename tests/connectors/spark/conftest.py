"""The Spark side's fixture: one local SparkSession shared by the Spark tests, rebuilt on a
new JVM after a test left it broken (see ``session_keeper``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from tests.connectors.spark.session_keeper import SessionKeeper, breaks_the_session, discard_jvm


def _build() -> Any:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from connectors.spark.session import build_session

    return build_session("local[2]", app_name="stormloop-tests", conf={
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    })


@pytest.fixture(scope="session")
def spark_keeper() -> Iterator[SessionKeeper]:
    """The keeper of the session the Spark tests share (start-up costs seconds)."""
    keeper = SessionKeeper(_build, discard_jvm)
    yield keeper
    keeper.close()


@pytest.fixture
def spark(spark_keeper: SessionKeeper) -> Any:
    """A ``local[2]`` session shared by every Spark test; a new one after a broken one."""
    return spark_keeper.get()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    why = breaks_the_session(call.excinfo) if "spark" in getattr(item, "fixturenames", ()) else None
    if why is not None:
        keeper = item.funcargs.get("spark_keeper") if hasattr(item, "funcargs") else None
        if isinstance(keeper, SessionKeeper):
            keeper.invalidate(f"{why} in {item.nodeid}")
    return report
