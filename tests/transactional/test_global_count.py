"""The global count is exact while batches fail at random in both phases."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from engine import LocalCluster, TopologyError
from engine.transactional import MemoryTransactionalSpout, TransactionalTopologyBuilder
from tests.transactional.helpers import (
    Faults,
    FlakyBatchCount,
    RecordingCommitter,
    assert_commits_in_order,
    conf_for,
    partitions,
    run_until,
)
from topologies.transactional_global_count import BatchCount, build, read_count

TOTAL = 3 * 120


@pytest.mark.parametrize("max_pending", [1, 3])
async def test_exact_without_failures(tmp_path: Path, max_pending: int) -> None:
    conf = conf_for(tmp_path, max_pending)
    log: list[tuple[int, bool]] = []
    topo = build(conf, partitions(3, 120), 10,
                 committer=RecordingCommitter(Faults(), log))
    stats = await run_until(conf, topo, lambda: read_count(conf) >= TOTAL)
    assert read_count(conf) == TOTAL
    assert log == [(t, True) for t in range(1, len(log) + 1)]
    assert len(log) >= 12  # 12 batches carry data; empty ones may follow
    assert all(c["failed"] == 0 for c in stats["components"].values())


@pytest.mark.parametrize("max_pending", [1, 4])
async def test_exact_with_failures_in_processing_and_commit(tmp_path: Path,
                                                            max_pending: int) -> None:
    conf = conf_for(tmp_path, max_pending)
    processing = Faults({"execute": 0.004, "finish": 0.02}, seed=max_pending)
    commit = Faults({"commit-before": 0.15, "commit-after": 0.15}, seed=max_pending + 10)
    log: list[tuple[int, bool]] = []
    topo = build(conf, partitions(3, 120), 10, batch_count=FlakyBatchCount(processing),
                 committer=RecordingCommitter(commit, log))
    await run_until(conf, topo, lambda: read_count(conf) >= TOTAL, limit=60)
    assert read_count(conf) == TOTAL
    assert processing.hits["execute"] > 0 and processing.hits["finish"] > 0
    assert commit.hits["commit-after"] > 0 and commit.hits["commit-before"] > 0
    assert_commits_in_order(log)
    # a commit that failed after writing is replayed and skipped, never applied twice
    assert any(not applied for _, applied in log)


async def test_exact_under_uvloop(tmp_path: Path) -> None:
    import uvloop

    conf = conf_for(tmp_path, 2)
    log: list[tuple[int, bool]] = []
    commit = Faults({"commit-after": 0.2}, seed=5)

    async def main() -> None:
        topo = build(conf, partitions(3, 120), 10, committer=RecordingCommitter(commit, log))
        await run_until(conf, topo, lambda: read_count(conf) >= TOTAL)

    # a fresh uvloop loop in a worker thread: the test's own loop is asyncio's
    await asyncio.to_thread(uvloop.run, main())
    assert read_count(conf) == TOTAL
    assert_commits_in_order(log)


async def test_needs_ackers(tmp_path: Path) -> None:
    conf = conf_for(tmp_path)
    conf.set_num_ackers(0)
    async with LocalCluster() as cluster:
        with pytest.raises(TopologyError, match=r"topology.acker.executors must be >= 1"):
            await cluster.submit_topology("tx", conf, build(conf))


class FlakyMemorySpout(MemoryTransactionalSpout):
    """Its emitter fails batches at random after emitting part of them."""

    def __init__(self, data: dict[int, list[list[Any]]], batch: int, faults: Faults) -> None:
        super().__init__(data, ["word"], batch)
        self.faults = faults

    def get_emitter(self, conf: dict[str, Any], context: Any) -> Any:
        inner, faults = super().get_emitter(conf, context), self.faults

        class Emitter:
            def emit_partition_batch_new(self, *args: Any) -> Any:
                meta = inner.emit_partition_batch_new(*args)
                faults.maybe("new")
                return meta

            def emit_partition_batch(self, *args: Any) -> None:
                inner.emit_partition_batch(*args)
                faults.maybe("again")

        return Emitter()


@pytest.mark.parametrize("max_pending", [1, 3])
async def test_exact_when_the_spout_fails_mid_batch(tmp_path: Path, max_pending: int) -> None:
    conf = conf_for(tmp_path, max_pending)
    faults = Faults({"new": 0.1, "again": 0.3}, seed=max_pending)
    log: list[tuple[int, bool]] = []
    spout = FlakyMemorySpout(partitions(3, 120), 10, faults)
    b = TransactionalTopologyBuilder("global-count", "spout", spout, 2)
    b.set_bolt("partial-count", BatchCount(), 3).shuffle_grouping("spout")
    b.set_bolt("sum", RecordingCommitter(Faults(), log)).global_grouping("partial-count")
    await run_until(conf, b.build_topology(), lambda: read_count(conf) >= TOTAL)
    assert read_count(conf) == TOTAL
    assert faults.hits["new"] > 0 and faults.hits["again"] > 0
    assert_commits_in_order(log)


class CancellingFaults(Faults):
    """Raises the user's own ``CancelledError`` (an awaited future of theirs was cancelled)."""

    def maybe(self, point: str) -> None:
        try:
            super().maybe(point)
        except Exception as exc:
            raise asyncio.CancelledError(str(exc)) from None


async def test_a_users_own_cancelled_error_fails_the_batch_not_the_task(tmp_path: Path) -> None:
    conf = conf_for(tmp_path, 2)
    processing = CancellingFaults({"execute": 0.01, "finish": 0.1}, seed=3)
    log: list[tuple[int, bool]] = []
    topo = build(conf, partitions(3, 120), 10, batch_count=FlakyBatchCount(processing),
                 committer=RecordingCommitter(Faults(), log))
    stats = await run_until(conf, topo, lambda: read_count(conf) >= TOTAL, limit=60)
    assert read_count(conf) == TOTAL
    assert processing.hits["execute"] > 0 and processing.hits["finish"] > 0
    assert stats["components"]["partial-count"]["errors"] == sum(processing.hits.values())
    assert_commits_in_order(log)
