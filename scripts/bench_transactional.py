"""Transactional global count throughput: tuples/s and committed batches/s per batch size.

    python scripts/bench_transactional.py [--tuples 200000] [--batch-sizes 100,1000]
                                          [--max-pending 1,4] [--partitions 2] [--no-uvloop]

Runs ``topologies/transactional_global_count.py`` (emitter, 5 partial-count tasks, one
committer storing ``[count, txid]`` in SQLite) over ``--tuples`` values in ``--partitions``
in-memory partitions, one fresh state directory per run. A batch of size B takes B /
partitions values from each partition. Time runs from submit to the commit that makes the
stored count equal to ``--tuples`` (checked exact), so it includes every commit's SQLite
write and the coordinator's state writes.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

# The imports below need the path set above.
from engine import Config, LocalCluster  # noqa: E402
from engine.transactional import TRANSACTIONAL_STATE_DIR  # noqa: E402
from topologies.transactional_global_count import (  # noqa: E402
    UpdateGlobalCount,
    build,
    read_count,
)


class _Signalling(UpdateGlobalCount):
    """Sets ``done`` when the committed count reaches ``target``."""

    def __init__(self, done: asyncio.Event, target: int, commits: list[int]) -> None:
        self.done, self.target, self.commits = done, target, commits

    def finish_batch(self) -> None:
        super().finish_batch()
        self.commits.append(self.attempt.transaction_id)
        if self.store.get("GLOBAL-COUNT").value >= self.target:
            self.done.set()


async def run_once(tuples: int, batch_size: int, max_pending: int,
                   partitions: int) -> dict[str, Any]:
    """One run to the exact count; returns its figures."""
    per_partition = tuples // partitions
    data = {p: [[f"w{i % 1000}"] for i in range(per_partition)] for p in range(partitions)}
    tuples = per_partition * partitions
    with tempfile.TemporaryDirectory() as state:
        conf = Config({TRANSACTIONAL_STATE_DIR: state})
        conf.set_max_spout_pending(max_pending)
        done, commits = asyncio.Event(), []
        topo = build(conf, data, max(1, batch_size // partitions),
                     committer=_Signalling(done, tuples, commits))
        async with LocalCluster() as cluster:
            start = time.perf_counter()
            await cluster.submit_topology("bench", conf, topo)
            await asyncio.wait_for(done.wait(), timeout=600)
            elapsed = time.perf_counter() - start
            await cluster.kill_topology("bench")
        count = read_count(conf)
    if count != tuples:
        raise SystemExit(f"count {count} != {tuples} tuples")
    return {"batch_size": batch_size, "max_pending": max_pending, "tuples": tuples,
            "batches": len(commits), "secs": elapsed, "tuples_per_s": tuples / elapsed,
            "batches_per_s": len(commits) / elapsed}


def main() -> None:
    """Run every (batch size, max pending) pair and print one line each."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tuples", type=int, default=200_000)
    parser.add_argument("--batch-sizes", default="100,1000")
    parser.add_argument("--max-pending", default="1,4")
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--no-uvloop", action="store_true")
    args = parser.parse_args()
    if not args.no_uvloop:
        import uvloop
        uvloop.install()
    print(f"global count, {args.tuples} tuples, {args.partitions} partitions, "
          f"loop={'asyncio' if args.no_uvloop else 'uvloop'}")
    print(f"{'batch':>6} {'pending':>7} {'batches':>8} {'secs':>7} {'tuples/s':>10} "
          f"{'batches/s':>10}")
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        for pending in (int(p) for p in args.max_pending.split(",")):
            r = asyncio.run(run_once(args.tuples, batch_size, pending, args.partitions))
            print(f"{r['batch_size']:>6} {r['max_pending']:>7} {r['batches']:>8} "
                  f"{r['secs']:>7.2f} {r['tuples_per_s']:>10,.0f} {r['batches_per_s']:>10,.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
