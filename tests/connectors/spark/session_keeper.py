"""The shared Spark session of a test run, rebuilt after a test left it broken.

A test that times out inside a py4j call (pytest-timeout raises in the middle of a read)
leaves the gateway connection out of step with the JVM: every later call reads an answer
meant for another (``KeyError: 'c'``, ``SparkConf does not exist in the JVM``). So a
timeout, or a py4j error escaping a test, marks the session broken; the next test that
asks for it gets a new one on a new JVM. When that cannot be built either, the Spark tests
left are skipped with the reason, rather than failing one after another.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import pytest

__all__ = ["SessionKeeper", "breaks_the_session", "discard_jvm"]


def breaks_the_session(excinfo: pytest.ExceptionInfo[BaseException] | None) -> str | None:
    """Why an exception that escaped a Spark test leaves the session unusable, or None."""
    if excinfo is None:
        return None
    exc = excinfo.value
    if isinstance(exc, pytest.fail.Exception) and str(exc).startswith("Timeout"):
        return f"a test timed out inside Spark ({exc})"
    if type(exc).__module__.startswith("py4j"):
        return f"a test ended with {type(exc).__name__} from py4j"
    return None


class SessionKeeper:
    """Hands out one session; builds a new one after ``invalidate`` (see the module doc)."""

    def __init__(self, build: Callable[[], Any], discard: Callable[[Any], None]) -> None:
        self._build = build
        self._discard = discard
        self._session: Any = None
        self._broken: str | None = None
        self._unbuildable: str | None = None
        self.builds = 0

    def invalidate(self, why: str) -> None:
        """The session must not be used again: ``get`` builds another."""
        self._broken = why

    def get(self) -> Any:
        """The session; rebuilt if broken; ``pytest.skip`` when none can be built."""
        if self._unbuildable is not None:
            pytest.skip(self._unbuildable)
        if self._session is not None and self._broken is None:
            return self._session
        if self._session is not None:
            with contextlib.suppress(Exception):
                self._discard(self._session)
            self._session = None
        try:
            self._session = self._build()
        except Exception as exc:
            after = f" after {self._broken}" if self._broken else ""
            self._unbuildable = (f"no Spark session could be built{after}: "
                                 f"{type(exc).__name__}: {exc}")
            pytest.skip(self._unbuildable)
        self._broken = None
        self.builds += 1
        return self._session

    def close(self) -> None:
        """Stop the session, if one was built."""
        if self._session is not None:
            with contextlib.suppress(Exception):
                self._discard(self._session)
            self._session = None


def discard_jvm(session: Any) -> None:
    """Stop ``session`` and its JVM, and forget both, so that the next session starts a
    new JVM with a new gateway (a stopped session alone keeps the old gateway)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    gateway = SparkContext._gateway
    with contextlib.suppress(Exception):
        session.stop()
    if gateway is not None:
        with contextlib.suppress(Exception):
            gateway.shutdown()
        proc = getattr(gateway, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    SparkContext._gateway = None
    SparkContext._jvm = None
    SparkContext._active_spark_context = None
    SparkSession._instantiatedSession = None
    SparkSession._activeSession = None
