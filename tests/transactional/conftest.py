"""Transactional topologies run on virtual time: message timeouts cost no real seconds."""

from __future__ import annotations

import pytest

from engine.testing import VirtualTimePolicy


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()
