"""The fixture of the Kafka tests that start engine processes."""

from __future__ import annotations

import pytest

from tests.engine.test_supervisor import Supervised, supervised  # noqa: F401 (fixture)


@pytest.fixture
def runs(supervised: list[Supervised]) -> list[Supervised]:  # noqa: F811 (the fixture)
    """Processes started by the test (killed afterwards if still running)."""
    return supervised
