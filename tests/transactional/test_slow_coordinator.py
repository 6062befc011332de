"""A coordinator whose ``is_ready`` awaits: acks and fails that reach the coordinator spout
meanwhile wait their turn, and the count stays exact with commits in order."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

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
from topologies.transactional_global_count import read_count


class _SlowCoordinator:
    """Delegates to ``inner``, but ``is_ready`` first awaits (a remote check, say)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def num_partitions(self) -> int:
        return int(self._inner.num_partitions())

    async def is_ready(self) -> bool:
        await asyncio.sleep(0.02)
        return bool(self._inner.is_ready())


class SlowReadySpout(MemoryTransactionalSpout):
    def get_coordinator(self, conf: dict[str, Any], context: Any) -> Any:
        return _SlowCoordinator(super().get_coordinator(conf, context))


async def test_exact_when_outcomes_arrive_while_the_coordinator_awaits(tmp_path: Path) -> None:
    conf = conf_for(tmp_path, 4)
    processing = Faults({"execute": 0.004, "finish": 0.02}, seed=5)
    commit = Faults({"commit-before": 0.1, "commit-after": 0.1}, seed=15)
    log: list[tuple[int, bool]] = []
    spout = SlowReadySpout(partitions(3, 120), ["word"], 10)
    builder = TransactionalTopologyBuilder("global-count", "spout", spout, 3)
    builder.set_bolt("partial-count", FlakyBatchCount(processing), 5).shuffle_grouping("spout")
    builder.set_bolt("sum", RecordingCommitter(commit, log)).global_grouping("partial-count")
    stats = await run_until(conf, builder.build_topology(),
                            lambda: read_count(conf) >= 3 * 120, limit=60)
    assert read_count(conf) == 3 * 120
    assert_commits_in_order(log)
    assert stats["components"]["spout"]["errors"] == 0  # no attempt started twice
