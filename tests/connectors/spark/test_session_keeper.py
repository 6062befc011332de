"""The shared session is rebuilt after a test broke it, or the Spark tests skip with the
reason; a fake session stands in (a real rebuild starts a JVM, tens of seconds)."""

from __future__ import annotations

import pytest
from py4j.protocol import Py4JNetworkError

from tests.connectors.spark.session_keeper import SessionKeeper, breaks_the_session


def _excinfo(exc: BaseException) -> pytest.ExceptionInfo[BaseException]:
    try:
        raise exc
    except BaseException:
        return pytest.ExceptionInfo.from_current()


def test_a_timeout_or_a_py4j_error_breaks_the_session_and_an_assertion_does_not() -> None:
    timeout = _excinfo(pytest.fail.Exception("Timeout (>300.0s) from pytest-timeout."))
    assert breaks_the_session(timeout) == ("a test timed out inside Spark (Timeout (>300.0s) "
                                           "from pytest-timeout.)")
    assert breaks_the_session(_excinfo(Py4JNetworkError("answer from Java side is empty"))
                              ) == "a test ended with Py4JNetworkError from py4j"
    assert breaks_the_session(_excinfo(AssertionError("1 != 2"))) is None
    assert breaks_the_session(None) is None


def test_a_broken_session_is_discarded_and_the_next_test_gets_a_new_one() -> None:
    built: list[object] = []
    discarded: list[object] = []

    def build() -> object:
        built.append(object())
        return built[-1]

    keeper = SessionKeeper(build, discarded.append)
    first = keeper.get()
    assert keeper.get() is first and keeper.builds == 1
    keeper.invalidate("a test timed out inside Spark")
    second = keeper.get()
    assert second is not first and discarded == [first] and keeper.builds == 2
    keeper.close()
    assert discarded == [first, second]


def test_when_no_session_can_be_built_the_spark_tests_skip_with_the_reason() -> None:
    calls = 0

    def build() -> object:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise RuntimeError("Java gateway process exited before sending its port number")
        return object()

    keeper = SessionKeeper(build, lambda session: None)
    keeper.get()
    keeper.invalidate("a test timed out inside Spark (Timeout (>300.0s) from pytest-timeout.)")
    for _ in range(2):  # the first skip, and every later test without another build
        with pytest.raises(pytest.skip.Exception, match=(
                r"^no Spark session could be built after a test timed out inside Spark "
                r"\(Timeout \(>300.0s\) from pytest-timeout.\): RuntimeError: Java gateway "
                r"process exited before sending its port number$")):
            keeper.get()
    assert calls == 2
