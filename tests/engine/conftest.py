"""Engine tests run under plain asyncio and under uvloop."""

from __future__ import annotations

import asyncio

import pytest
import uvloop


@pytest.fixture(params=["asyncio", "uvloop"], scope="session")
def event_loop_policy(request: pytest.FixtureRequest) -> asyncio.AbstractEventLoopPolicy:
    """Each async engine test once per event loop implementation."""
    if request.param == "uvloop":
        return uvloop.EventLoopPolicy()
    return asyncio.DefaultEventLoopPolicy()
