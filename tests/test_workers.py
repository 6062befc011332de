"""The suite starts one worker per usable core (at most four), not four on two cores."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.workers import MAX_WORKERS, auto_workers, quota_cpus

ROOT = Path(__file__).resolve().parents[1]


def test_workers_follow_the_cores_with_a_cap() -> None:
    assert [auto_workers(env={}, cpus=n) for n in (1, 2, 3, 4, 64)] == [1, 2, 3, 4, MAX_WORKERS]
    assert auto_workers(env={"PYTEST_XDIST_AUTO_NUM_WORKERS": "3"}, cpus=2) == 3
    assert auto_workers(env={"PYTEST_XDIST_AUTO_NUM_WORKERS": "lots"}, cpus=2) == 2


def test_a_cgroup_quota_counts_as_fewer_cores() -> None:
    assert quota_cpus("max 100000") is None
    assert quota_cpus("200000 100000\n") == 2
    assert quota_cpus("150000 100000") == 2
    assert quota_cpus("50000 100000") == 1


ONE_CORE = """
import os, sys
os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
import pytest
sys.exit(pytest.main(["-p", "no:randomly", "-p", "no:cacheprovider",
                      "tests/test_workers.py::test_a_cgroup_quota_counts_as_fewer_cores"]))
"""


def test_the_default_run_starts_one_worker_on_one_usable_core() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_XDIST_AUTO_NUM_WORKERS"}
    proc = subprocess.run([sys.executable, "-c", ONE_CORE], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "created: 1/1 worker" in proc.stdout, proc.stdout
