"""A topology killed mid-run and restarted with the same state directory ends exact."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from engine import LocalCluster
from engine.transactional import TransactionalState
from tests.transactional.helpers import (
    Faults,
    RecordingCommitter,
    assert_commits_in_order,
    conf_for,
    partitions,
    run_until,
)
from topologies.transactional_global_count import build, read_count

DATA = partitions(3, 100)
TOTAL = 300


async def test_kill_and_restart_resumes_without_skipping_or_double_counting(
        tmp_path: Path) -> None:
    conf = conf_for(tmp_path, max_pending=3)
    log: list[tuple[int, bool]] = []
    starts: list[int] = []
    for run in range(3):
        faults = Faults({"commit-after": 0.2}, seed=run)
        topo = build(conf, DATA, 4, committer=RecordingCommitter(faults, log, delay=0.005))
        async with LocalCluster() as cluster:
            await cluster.submit_topology("tx", conf, topo)
            before = len(log)
            deadline = time.monotonic() + 20
            while len(log) < before + 4 + run:
                assert time.monotonic() < deadline
                await asyncio.sleep(0.002)
            await cluster.kill_topology("tx", wait_secs=0)
        starts.append(TransactionalState.from_conf(conf, "global-count").next_txid())
        assert 0 < read_count(conf) < TOTAL
    topo = build(conf, DATA, 4, committer=RecordingCommitter(Faults(), log))
    await run_until(conf, topo, lambda: read_count(conf) >= TOTAL)
    assert read_count(conf) == TOTAL
    assert starts == sorted(starts) and starts[0] > 1
    assert_commits_in_order(log)
    # each run resumed at the first transaction not committed, never at txid 1
    assert [t for t, _ in log].count(1) == 1


async def test_a_new_transactional_id_starts_from_scratch(tmp_path: Path) -> None:
    conf = conf_for(tmp_path)
    await run_until(conf, build(conf, partitions(2, 10), 5), lambda: read_count(conf) >= 20)
    state = TransactionalState.from_conf(conf, "global-count")
    committed = state.next_txid() - 1
    assert committed >= 2
    other = TransactionalState.from_conf(conf, "another-id")
    assert other.next_txid() == 1
