"""The two example topologies through ``python -m engine run``, twice on the same state:
the second run resumes after the last commit and changes nothing. Each stops by itself
once every batch is committed and prints its result."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from topologies.transactional_global_count import read_count
from topologies.transactional_words import read_buckets, read_counts

ROOT = Path(__file__).resolve().parents[2]


def run(path: str, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", "run", path, "--duration", "1",
         "--conf", f"transactional.state.dir={state}", *extra],
        cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_global_count_example(tmp_path: Path) -> None:
    conf = {"transactional.state.dir": str(tmp_path)}
    for _ in range(2):
        proc = run("topologies/transactional_global_count.py", tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert read_count(conf) == 19
        assert proc.stdout.splitlines() == ["global count: 19"]


def test_words_example(tmp_path: Path) -> None:
    conf = {"transactional.state.dir": str(tmp_path)}
    for _ in range(2):
        proc = run("topologies/transactional_words.py", tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert read_counts(conf) == {"apple": 2, "banana": 1, "cat": 8, "chicken": 1, "dog": 7}
        assert read_buckets(conf) == {0: 5}
        assert proc.stdout.splitlines() == [
            "word counts: apple=2, banana=1, cat=8, chicken=1, dog=7",
            "words per count bucket: 0-9: 5"]


def test_examples_stop_by_themselves_once_every_batch_is_committed(tmp_path: Path) -> None:
    for name in ("transactional_global_count", "transactional_words"):
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "engine", "run", f"topologies/{name}.py",
             "--conf", f"transactional.state.dir={tmp_path / name}"],
            cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip(), "no result printed"
        # Stopped by itself: well before the 5 s status interval would have printed twice.
        assert time.monotonic() - started < 30
        assert len([line for line in proc.stderr.splitlines() if line.startswith("[")]) == 1


async def test_finite_memory_spout_makes_the_topology_finish(tmp_path: Path) -> None:
    from engine import LocalCluster
    from topologies.transactional_global_count import build

    conf = {"transactional.state.dir": str(tmp_path)}
    async with LocalCluster() as cluster:
        await cluster.submit_topology("gc", conf, build(conf))
        await asyncio.wait_for(cluster.wait("gc"), 30)
        assert cluster.finished("gc")
    assert read_count(conf) == 19
