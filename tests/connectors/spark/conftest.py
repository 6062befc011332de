"""The Spark side's fixture: one local SparkSession for the whole test session."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[object]:
    """A ``local[2]`` session shared by every Spark test (start-up costs seconds)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    from connectors.spark.session import build_session

    session = build_session("local[2]", app_name="stormloop-tests", conf={
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
    })
    yield session
    session.stop()
