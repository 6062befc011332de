"""``python -m engine run``: exit 0 on a run, exit 2 with one line on bad input."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine", "run", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_word_count_runs_to_completion() -> None:
    proc = run("topologies/word_count.py", "--conf", "wordcount.sentences=500",
               "--conf", "wordcount.repeat=2", "--status-interval", "0.5")
    assert proc.returncode == 0, proc.stderr
    assert "10000 words counted" in proc.stdout
    assert "acked=1000 failed=0" in proc.stderr


def test_missing_file_is_one_line_exit_2() -> None:
    proc = run("topologies/nope.py")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: topologies/nope.py: no such file"]


def test_invalid_topology_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from engine import TopologyBuilder\n"
        "from engine.testing import FeederSpout, CaptureBolt\n"
        "b = TopologyBuilder()\n"
        "b.set_spout('s', FeederSpout(['v']))\n"
        "b.set_bolt('c', CaptureBolt()).fields_grouping('s', ['x'])\n"
        "topology = b.create_topology()\n")
    proc = run(str(bad))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: bolt 'c': fields_grouping on 's' uses field 'x'; 's' declares ['v'] on "
        "stream 'default'"]


def test_invalid_config_is_one_line_exit_2() -> None:
    proc = run("topologies/word_count.py", "--conf", "topology.acker.executors=-1")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: topology 'word-count': config 'topology.acker.executors' must be an int >= 0,"
        " got -1"]


def test_file_without_topology_is_one_line_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    proc = run(str(empty))
    assert proc.returncode == 2
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "defines neither build(conf) nor a module-level `topology`" in proc.stderr


def test_sigterm_drains_and_exits_0() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine", "run", "topologies/word_count.py",
         "--conf", "wordcount.repeat=1000"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "words counted" in out
    last = err.strip().splitlines()[-1]
    assert "failed=0" in last
