"""A spout's own ``ack_many`` gets runs of acks in one call, in order with its fails."""

from __future__ import annotations

from typing import Any

from engine import Config, LocalCluster, TopologyBuilder
from engine.testing import CaptureBolt, FailOn, FeederSpout, wait_until


class BatchAckSpout(FeederSpout):
    """Records ``ack_many`` calls as ``("acks", [ids])``; ``ack`` alone as ``("ack", id)``."""

    def __init__(self, fields: list[str], raise_first: bool = False) -> None:
        super().__init__(fields)
        self.raise_first = raise_first

    def ack_many(self, msg_ids: list[Any]) -> None:
        self.events.append(("acks", list(msg_ids)))
        if self.raise_first:
            self.raise_first = False
            raise RuntimeError("ack_many broke")


def _topology(spout: FeederSpout, fail_every: int | None = None) -> Any:
    """The spout into a capturing bolt that fails the values divisible by ``fail_every``."""
    fail_on = None if fail_every is None else FailOn(lambda v: v[0] % fail_every == 0)
    b = TopologyBuilder()
    b.set_spout("s", spout)
    b.set_bolt("sink", CaptureBolt(fail_on), 2).shuffle_grouping("s")
    return b.create_topology()


def _conf(ackers: int) -> Config:
    return Config({"topology.message.timeout.secs": 30, "topology.acker.executors": ackers})


def _ids_heard(spout: FeederSpout) -> int:
    return sum(len(e[1]) if e[0] == "acks" else 1 for e in spout.events)


async def _run(spout: FeederSpout, ids: range, ackers: int = 1,
               fail_every: int | None = None) -> dict[str, Any]:
    """Feed ``ids``, run until the spout heard of every one; the spout's stats."""
    for i in ids:
        spout.feed([i], msg_id=i)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", _conf(ackers), _topology(spout, fail_every))
        await wait_until(lambda: _ids_heard(spout) == len(ids))
        stats: dict[str, Any] = cluster.stats("t")["components"]["s"]
    return stats


async def test_acks_arrive_in_runs_and_fails_one_by_one() -> None:
    spout = BatchAckSpout(["n"])
    assert (await _run(spout, range(1, 301), fail_every=3))["acked"] == 200
    assert not [e for e in spout.events if e[0] == "ack"]  # never one by one
    runs = [ids for kind, ids in spout.events if kind == "acks"]
    assert all(runs)
    assert sorted(i for ids in runs for i in ids) == [i for i in range(1, 301) if i % 3]
    assert sorted(spout.failed()) == list(range(3, 301, 3))


async def test_an_error_in_ack_many_is_reported_and_later_acks_still_come() -> None:
    spout = BatchAckSpout(["n"], raise_first=True)
    async with LocalCluster() as cluster:
        await cluster.submit_topology("t", _conf(1), _topology(spout))
        spout.feed([1], msg_id=1)
        await wait_until(lambda: spout.events)
        spout.feed([2], msg_id=2)
        await wait_until(lambda: len(spout.events) == 2)
        assert cluster.stats("t")["components"]["s"]["errors"] == 1
    assert spout.events == [("acks", [1]), ("acks", [2])]


async def test_without_ackers_the_emitted_ids_go_to_ack_many() -> None:
    spout = BatchAckSpout(["n"])
    await _run(spout, range(5), ackers=0)
    assert [i for _, ids in spout.events for i in ids] == [0, 1, 2, 3, 4]


class AsyncAckSpout(BatchAckSpout):
    """An ``async`` ack: ``ack_many`` is not used, every ack comes on its own."""

    async def ack(self, msg_id: Any) -> None:
        self.events.append(("ack", msg_id))


async def test_an_async_ack_keeps_acks_one_by_one() -> None:
    spout = AsyncAckSpout(["n"])
    await _run(spout, range(20))
    assert sorted(spout.acked()) == list(range(20))


class CountingAckSpout(BatchAckSpout):
    """Overrides ``ack`` below the class that defines ``ack_many``: every id reaches it."""

    def ack(self, msg_id: Any) -> None:
        self.events.append(("counted", msg_id))


async def test_an_ack_overridden_below_ack_many_sees_every_id() -> None:
    spout = CountingAckSpout(["n"])
    await _run(spout, range(1, 21))
    assert sorted(m for kind, m in spout.events if kind == "counted") == list(range(1, 21))
