"""The two example topologies through ``python -m engine run``, twice on the same state:
the second run resumes after the last commit and changes nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from topologies.transactional_global_count import read_count
from topologies.transactional_words import read_buckets, read_counts

ROOT = Path(__file__).resolve().parents[2]


def run(path: str, state: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine", "run", path, "--duration", "1",
         "--conf", f"transactional.state.dir={state}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_global_count_example(tmp_path: Path) -> None:
    conf = {"transactional.state.dir": str(tmp_path)}
    for _ in range(2):
        proc = run("topologies/transactional_global_count.py", tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert read_count(conf) == 19


def test_words_example(tmp_path: Path) -> None:
    conf = {"transactional.state.dir": str(tmp_path)}
    for _ in range(2):
        proc = run("topologies/transactional_words.py", tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert read_counts(conf) == {"apple": 2, "banana": 1, "cat": 8, "chicken": 1, "dog": 7}
        assert read_buckets(conf) == {0: 5}
