"""By default an event-time window's watermark moves with each batch that arrives, so a
window is evaluated (and the tuples that left it acked) as soon as a later tuple came, not at
the next watermark tick; ``with_watermark_interval`` keeps Storm's periodic watermark."""

from __future__ import annotations

from typing import Any

from engine.windowing import BaseWindowedBolt, Duration, TupleWindow
from tests.state.helpers import make_tuple
from tests.windowing.test_executor_virtual_time import prepared


class Sizes(BaseWindowedBolt):
    """Records each evaluation's end and size; async or not as ``is_async`` says."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["size"])

    def execute(self, window: TupleWindow) -> None:
        self.seen.append((window.end_timestamp, len(window)))


class AsyncSizes(Sizes):
    async def execute(self, window: TupleWindow) -> None:  # type: ignore[override]
        self.seen.append((window.end_timestamp, len(window)))


def stamped(*stamps: int) -> list[Any]:
    return [make_tuple([i, ts], ["n", "ts"], "numbers", 1) for i, ts in enumerate(stamps)]


async def test_a_batch_moves_the_watermark_and_evaluates_at_once() -> None:
    bolt = Sizes()
    ex, out, _ = await prepared(bolt.with_tumbling_window(Duration(1))  # type: ignore[arg-type]
                                .with_timestamp_field("ts"))
    first = stamped(100, 500, 900)
    ex.execute_batch(first)
    assert bolt.seen == []  # no tuple after the window's end yet
    second = stamped(1000, 2000)
    ex.execute_batch(second)  # the watermark is 2000 after this batch
    assert bolt.seen == [(1000, 4), (2000, 1)]
    assert out.acks == [*first, second[0]]  # left their windows: acked without a tick
    await ex.cleanup()


async def test_an_async_window_moves_its_watermark_with_each_tuple() -> None:
    bolt = AsyncSizes()
    ex, _, _ = await prepared(bolt.with_tumbling_window(Duration(1))  # type: ignore[arg-type]
                                .with_timestamp_field("ts"))
    a, b = stamped(100, 1500)
    await ex.execute(a)
    await ex.execute(b)
    assert bolt.seen == [(1000, 1)]
    await ex.cleanup()


async def test_an_explicit_interval_moves_the_watermark_only_at_its_ticks() -> None:
    bolt = Sizes()
    ex, out, _ = await prepared(bolt.with_tumbling_window(Duration(1))  # type: ignore[arg-type]
                                .with_timestamp_field("ts")
                                .with_watermark_interval(Duration(1)))
    ex.execute_batch(stamped(100, 500, 1500))
    assert bolt.seen == [] and out.acks == []
    await ex._tick(ex._on_watermark_tick)
    assert bolt.seen == [(1000, 2)]
    await ex.cleanup()
