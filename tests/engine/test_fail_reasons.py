"""Why a tree failed reaches the spout: explicit fails, errors, timeouts; first reason wins."""

from __future__ import annotations

from typing import Any

import pytest

from engine import (
    BasicBolt,
    Bolt,
    Config,
    FailedException,
    FailReason,
    LocalCluster,
    TopologyBuilder,
)
from engine.failure import FailReasons, error_reason
from engine.testing import FeederSpout, VirtualTimePolicy, wait_until
from tests.engine.helpers import Crash, Hold, ReasonSpout


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Explicit(Bolt):
    def __init__(self, text: str | None) -> None:
        self.text = text

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.fail(tup, self.text)


class BasicRaise(BasicBolt):
    async def execute(self, tup: Any, collector: Any) -> None:
        raise FailedException(f"no {tup[0]}")


class FailTwice(Bolt):
    """Fails each tuple twice with different reasons: the first must win."""

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def execute(self, tup: Any) -> None:
        self.collector.fail(tup, "first")
        self.collector.fail(tup, "second")


async def _run(bolt: Any, n: int = 1, spout: FeederSpout | None = None,
               **conf: Any) -> tuple[FeederSpout, dict[str, Any]]:
    spout = spout or ReasonSpout()
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("b", bolt).shuffle_grouping("s")
    for i in range(n):
        spout.feed([i], msg_id=i)
    c = Config({"topology.message.timeout.secs": 30, **conf})
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", c, b.create_topology())
        await wait_until(lambda: len(spout.events) == n, timeout=120)
        stats = cluster.stats("t")["components"]["s"]
    return spout, stats


async def test_explicit_fail_with_and_without_text() -> None:
    spout, stats = await _run(Explicit("bad input"))
    assert spout.reasons[0] == FailReason("explicit", "bad input", None, "b")  # type: ignore[attr-defined]
    spout, _ = await _run(Explicit(None))
    assert spout.reasons[0] == FailReason("explicit", "failed by b", None, "b")  # type: ignore[attr-defined]
    assert stats["failed_explicit"] == 1 and stats["failed"] == 1
    assert stats["failed_timeout"] == stats["failed_error"] == 0


async def test_exception_in_execute_is_an_error_with_a_short_trace() -> None:
    spout, stats = await _run(Crash(bad=0))
    reason = spout.reasons[0]  # type: ignore[attr-defined]
    assert (reason.kind, reason.message, reason.component) == (
        "error", "ValueError: cannot handle 0", "b")
    assert reason.trace is not None and "ValueError: cannot handle 0" in reason.trace
    assert reason.trace.count('File "') <= 5
    assert stats["failed_error"] == 1 and stats["failed"] == 1


async def test_failed_exception_in_a_basic_bolt_is_explicit() -> None:
    spout, _ = await _run(BasicRaise())
    reason = spout.reasons[0]  # type: ignore[attr-defined]
    assert (reason.kind, reason.message, reason.component) == (
        "explicit", "FailedException: no 0", "b")
    assert reason.trace is not None and 'raise FailedException(f"no {tup[0]}")' in reason.trace


async def test_timeout_takes_no_real_time_and_says_how_long() -> None:
    spout, stats = await _run(Hold(), n=3)
    assert {r.kind for r in spout.reasons.values()} == {"timeout"}  # type: ignore[attr-defined]
    assert spout.reasons[0].message == "timed out after 30 s"  # type: ignore[attr-defined]
    assert stats["failed_timeout"] == 3 and stats["failed"] == 3


async def test_first_reason_wins() -> None:
    spout, _ = await _run(FailTwice(), n=4)
    assert {r.message for r in spout.reasons.values()} == {"first"}  # type: ignore[attr-defined]


async def test_a_spout_without_reason_parameter_is_called_as_storm_does() -> None:
    spout, stats = await _run(Explicit("x"), spout=FeederSpout(["v"]))
    assert spout.failed() == [0] and stats["failed_explicit"] == 1


async def test_nothing_is_kept_once_the_spout_heard() -> None:
    b = TopologyBuilder()
    spout = ReasonSpout()
    b.set_spout("s", spout)
    b.set_bolt("b", Explicit("x")).shuffle_grouping("s")
    for i in range(50):
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", Config(), b.create_topology())
        await wait_until(lambda: len(spout.events) == 50)
        assert len(cluster._running["t"].reasons) == 0


def test_reasons_of_roots_that_never_reach_a_spout_are_bounded() -> None:
    book = FailReasons(capacity=3)
    for root in range(10):
        book.record(root, FailReason("explicit", str(root)))
    assert len(book) == 3 and book.dropped == 7
    assert book.take(0) is None and book.take(9) == FailReason("explicit", "9")
    book.record(7, FailReason("explicit", "later"))
    assert book.take(7) == FailReason("explicit", "7")  # the first one recorded wins


def test_error_reason_names_the_type() -> None:
    try:
        raise KeyError("k")
    except KeyError as exc:
        reason = error_reason(exc, "c")
    assert reason.kind == "error" and reason.message == "KeyError: 'k'"


def test_dropping_reasons_logs_a_throttled_warning(caplog: pytest.LogCaptureFixture) -> None:
    book = FailReasons(capacity=1)
    for root in range(5):
        book.record(root, FailReason("explicit", "x"))
    warnings = [r for r in caplog.records if "fail reasons" in r.getMessage()]
    assert len(warnings) == 1 and "1 kept at most, 1 dropped" in warnings[0].getMessage()


class AsyncReasonSpout(ReasonSpout):
    async def fail(self, msg_id: Any, reason: FailReason | None = None) -> None:  # type: ignore[override]
        super().fail(msg_id, reason)


async def test_an_async_fail_gets_the_reason_too() -> None:
    spout, _ = await _run(Explicit("late"), spout=AsyncReasonSpout())
    assert spout.reasons[0].message == "late"  # type: ignore[attr-defined]
