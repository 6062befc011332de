"""While one partition's state is restored, its tuples wait and the others run."""

from __future__ import annotations

import asyncio
from typing import Any

from engine.state.holds import PartitionHolds
from tests.state.helpers import settle


class Bolt:
    """Runs admitted tuples; restores partitions when the test lets them."""

    def __init__(self) -> None:
        self.ran: list[Any] = []
        self.failed: list[Any] = []
        self.gates: dict[int, asyncio.Event] = {}
        self.errors: dict[int, Exception] = {}
        self.holds = PartitionHolds(self.restore, self.run_held, self.fail_held)

    async def restore(self, partition: int) -> None:
        await self.gates.setdefault(partition, asyncio.Event()).wait()
        if partition in self.errors:
            raise self.errors.pop(partition)

    async def run_held(self, partition: int, held: list[Any]) -> None:
        for tup in held:
            self.ran.append(tup)
            await asyncio.sleep(0)
            if tup == (1, "a"):
                self.execute(1, (1, "during"))  # arrives while the held ones run

    def fail_held(self, partition: int, exc: BaseException, held: list[Any]) -> None:
        self.failed.extend(held)

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


async def test_a_failed_restore_fails_its_tuples_and_the_next_tuple_retries() -> None:
    bolt = Bolt()
    bolt.errors[2] = OSError("broker gone")
    bolt.execute(2, "a")
    bolt.release(2)
    await settle()
    assert bolt.failed == ["a"] and bolt.ran == [] and bolt.holds.restoring() == []
    bolt.execute(2, "b")
    await settle()
    assert bolt.ran == ["b"]


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
