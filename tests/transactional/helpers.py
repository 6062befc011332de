"""Shared pieces of the transactional end-to-end tests: fault injection and a runner."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine import Config, FailedException, LocalCluster, Topology
from engine.transactional import TRANSACTIONAL_STATE_DIR
from topologies.transactional_global_count import GLOBAL_COUNT_KEY, BatchCount, UpdateGlobalCount


class Faults:
    """Raises ``FailedException`` at named points, each with its own probability (seeded)."""

    def __init__(self, rates: dict[str, float] | None = None, seed: int = 7) -> None:
        self.rates = rates or {}
        self.rng = random.Random(seed)
        self.hits: Counter[str] = Counter()

    def maybe(self, point: str) -> None:
        rate = self.rates.get(point, 0.0)
        if rate and self.rng.random() < rate:
            self.hits[point] += 1
            raise FailedException(f"injected at {point}")


class FlakyBatchCount(BatchCount):
    """``BatchCount`` that fails batches at random in ``execute`` and ``finish_batch``."""

    def __init__(self, faults: Faults) -> None:
        self.faults = faults

    def execute(self, tup: Any) -> None:
        self.faults.maybe("execute")
        super().execute(tup)

    def finish_batch(self) -> None:
        self.faults.maybe("finish")
        super().finish_batch()


class RecordingCommitter(UpdateGlobalCount):
    """``UpdateGlobalCount`` that records each commit and fails at random before or after
    writing. ``log`` gets ``(txid, applied)``: ``applied`` is False for a skipped replay."""

    def __init__(self, faults: Faults, log: list[tuple[int, bool]],
                 delay: float = 0.0) -> None:
        self.faults = faults
        self.log = log
        self.delay = delay

    async def finish_batch(self) -> None:  # type: ignore[override]
        if self.delay:
            await asyncio.sleep(self.delay)
        self.faults.maybe("commit-before")
        txid = self.attempt.transaction_id
        applied = self.store.get(GLOBAL_COUNT_KEY).txid != txid
        super().finish_batch()
        self.log.append((txid, applied))
        self.faults.maybe("commit-after")


def partitions(n_partitions: int, per_partition: int) -> dict[int, list[list[Any]]]:
    """``n_partitions`` lists of ``[word]`` values, distinct words."""
    return {p: [[f"w{p}.{i}"] for i in range(per_partition)] for p in range(n_partitions)}


def conf_for(state: Path, max_pending: int = 1, timeout: float = 3) -> Config:
    """A test configuration: state in ``state``, short message timeout."""
    conf = Config({TRANSACTIONAL_STATE_DIR: str(state)})
    conf.set_max_spout_pending(max_pending)
    conf.set_message_timeout_secs(timeout)
    return conf


async def run_until(conf: Config, topology: Topology, done: Callable[[], bool],
                    limit: float = 30.0, name: str = "tx") -> dict[str, Any]:
    """Run ``topology`` until ``done()`` (asserting it happens within ``limit`` s) plus a
    short grace period that would expose extra commits; returns the final stats."""
    async with LocalCluster() as cluster:
        await cluster.submit_topology(name, conf, topology)
        clock = asyncio.get_running_loop().time
        deadline = clock() + limit
        while not done():
            assert clock() < deadline, "topology did not finish in time"
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.2)
        stats = cluster.stats(name)
        await cluster.kill_topology(name)
    return stats


def assert_commits_in_order(log: list[tuple[int, bool]]) -> None:
    """Commit calls never go back in txid order; each txid is applied exactly once, 1..n."""
    txids = [t for t, _ in log]
    assert txids == sorted(txids), txids
    applied = [t for t, a in log if a]
    assert applied == list(range(1, len(applied) + 1)), applied
