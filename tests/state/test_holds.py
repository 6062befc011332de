"""While one partition's state is restored, its tuples wait and the others run."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from engine.state.changelog import StateRefused
from engine.state.holds import PartitionHolds
from engine.testing import VirtualTimePolicy
from tests.state.helpers import settle


@pytest.fixture
def event_loop_policy() -> VirtualTimePolicy:
    return VirtualTimePolicy()


class Bolt:
    """Runs admitted tuples; restores partitions when the test lets them."""

    def __init__(self) -> None:
        self.ran: list[Any] = []
        self.retries: list[tuple[int, str, int, float]] = []
        self.refused: list[tuple[int, str]] = []
        self.gates: dict[int, asyncio.Event] = {}
        self.errors: dict[int, list[Exception]] = {}
        self.tries: dict[int, int] = {}
        self.holds = PartitionHolds(self.restore, self.run_held, self.retry, self.refuse)

    async def restore(self, partition: int) -> None:
        self.tries[partition] = self.tries.get(partition, 0) + 1
        await self.gates.setdefault(partition, asyncio.Event()).wait()
        if self.errors.get(partition):
            raise self.errors[partition].pop(0)

    async def run_held(self, partition: int, held: list[Any]) -> None:
        for tup in held:
            self.ran.append(tup)
            await asyncio.sleep(0)
            if tup == (1, "a"):
                self.execute(1, (1, "during"))  # arrives while the held ones run

    def retry(self, partition: int, exc: BaseException, attempt: int, delay: float) -> None:
        self.retries.append((partition, str(exc), attempt, delay))

    def refuse(self, partition: int, exc: StateRefused) -> None:
        self.refused.append((partition, str(exc)))

    def execute(self, partition: int, tup: Any) -> None:
        if self.holds.admit(partition, tup):
            self.ran.append(tup)

    def release(self, partition: int) -> None:
        self.gates.setdefault(partition, asyncio.Event()).set()


async def test_a_restoring_partition_holds_only_its_own_tuples() -> None:
    bolt = Bolt()
    bolt.release(0)
    bolt.execute(0, (0, "first"))
    await settle()
    assert bolt.ran == [(0, "first")] and bolt.holds.ready == {0}
    bolt.execute(1, (1, "a"))
    bolt.execute(0, (0, "x"))
    bolt.execute(1, (1, "b"))
    await settle()
    assert bolt.ran == [(0, "first"), (0, "x")] and bolt.holds.restoring() == [1]
    bolt.release(1)
    bolt.execute(0, (0, "y"))
    await settle()
    assert bolt.ran == [(0, "first"), (0, "x"), (0, "y"), (1, "a"), (1, "b"), (1, "during")]
    bolt.execute(1, (1, "c"))
    assert bolt.ran[-1] == (1, "c") and bolt.holds.restoring() == []


async def test_a_failed_restore_is_tried_again_and_its_tuples_wait() -> None:
    """A broker away mid-restore fails no tuple (a fail counts against the record's
    retries, and after them the record is given up): the restore is tried again after a
    back-off, and the tuples run once it succeeds."""
    bolt = Bolt()
    bolt.errors[2] = [OSError("broker gone"), OSError("still gone")]
    bolt.execute(2, "a")
    bolt.release(2)
    loop = asyncio.get_running_loop()
    started = loop.time()
    while 2 not in bolt.holds.ready:
        await asyncio.sleep(0.5)
    assert bolt.retries == [(2, "broker gone", 1, 1.0), (2, "still gone", 2, 2.0)]
    assert loop.time() - started >= 3.0 and bolt.tries[2] == 3
    bolt.execute(2, "b")
    assert bolt.ran == ["a", "b"]


async def test_a_refused_restore_is_told_once_and_its_tuples_stay_held() -> None:
    bolt = Bolt()
    bolt.errors[6] = [StateRefused("changelog 'x' partition 6 is empty")]
    bolt.execute(6, "a")
    bolt.release(6)
    await asyncio.sleep(120)  # virtual: no retry loop
    bolt.execute(6, "b")
    await settle()
    assert bolt.refused == [(6, "changelog 'x' partition 6 is empty")]
    assert bolt.tries[6] == 1 and bolt.ran == [] and bolt.retries == []
    assert bolt.holds.drop(6) == ["a", "b"]


async def test_a_revoked_partition_cancels_its_restore_and_returns_its_tuples() -> None:
    bolt = Bolt()
    bolt.execute(3, "a")
    bolt.execute(3, "b")
    await settle()
    assert bolt.holds.drop(3) == ["a", "b"]
    bolt.release(3)
    await settle()
    assert bolt.ran == [] and bolt.holds.restoring() == [] and 3 not in bolt.holds.ready
    bolt.execute(4, "c")
    await bolt.holds.close()
    assert bolt.holds.restoring() == []


async def test_a_dropped_partition_refuses_its_tuples_until_it_is_assigned_again() -> None:
    bolt = Bolt()
    bolt.release(5)
    bolt.execute(5, "a")
    await settle()
    assert bolt.holds.drop(5) == []
    assert bolt.holds.admit(5, "b") is None and bolt.holds.restoring() == []
    bolt.holds.start(5)  # assigned again
    await settle()
    assert bolt.holds.admit(5, "c") is True
