"""Transactional words: a committer feeding commit-phase bolts stays exact under failures."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path
from typing import Any

from tests.transactional.helpers import Faults, conf_for, run_until
from topologies.transactional_words import (
    BUCKET_SIZE,
    BucketCountUpdater,
    KeyedCountUpdater,
    build,
    read_buckets,
    read_counts,
)

WORDS = ["cat", "dog", "apple", "banana", "chicken", "emu", "fox"]


class FlakyCounter(KeyedCountUpdater):
    def __init__(self, faults: Faults) -> None:
        self.faults = faults

    def finish_batch(self) -> None:
        self.faults.maybe("before")
        super().finish_batch()
        self.faults.maybe("after")


class FlakyBuckets(BucketCountUpdater):
    def __init__(self, faults: Faults, commits: list[int]) -> None:
        self.faults = faults
        self.commits = commits

    def execute(self, tup: Any) -> None:
        self.faults.maybe("execute")
        super().execute(tup)

    def finish_batch(self) -> None:
        super().finish_batch()
        self.commits.append(self.attempt.transaction_id)
        self.faults.maybe("after")


def expected(data: dict[int, list[list[Any]]]) -> tuple[dict[str, int], dict[int, int]]:
    counts = Counter(row[0] for rows in data.values() for row in rows)
    buckets = Counter(n // BUCKET_SIZE for n in counts.values())
    return dict(counts), dict(buckets)


async def test_words_and_buckets_exact_with_failures(tmp_path: Path) -> None:
    rng = random.Random(3)
    data = {p: [[rng.choice(WORDS)] for _ in range(80)] for p in range(3)}
    counts, buckets = expected(data)
    conf = conf_for(tmp_path, max_pending=3)
    commits: list[int] = []
    counter_faults = Faults({"before": 0.1, "after": 0.1}, seed=1)
    bucket_faults = Faults({"execute": 0.01, "after": 0.1}, seed=2)
    topo = build(conf, data, 6, counter=FlakyCounter(counter_faults),
                 buckets=FlakyBuckets(bucket_faults, commits))
    await run_until(conf, topo, lambda: (read_counts(conf), read_buckets(conf)) ==
                    (counts, buckets), limit=60)
    assert read_counts(conf) == counts
    assert read_buckets(conf) == buckets
    assert sum(counter_faults.hits.values()) > 0 and sum(bucket_faults.hits.values()) > 0
    # "buckets" finishes in the commit phase, so in transaction order across its tasks
    assert commits and commits == sorted(commits)


async def test_storm_example_data(tmp_path: Path) -> None:
    conf = conf_for(tmp_path)
    await run_until(conf, build(conf), lambda: sum(read_counts(conf).values()) >= 19)
    assert read_counts(conf) == {"apple": 2, "banana": 1, "cat": 8, "chicken": 1, "dog": 7}
    assert read_buckets(conf) == {0: 5}
