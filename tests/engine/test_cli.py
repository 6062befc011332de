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
         "--conf", "wordcount.repeat=1000", "--status-interval", "0.2"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 60
    line = ""
    while not line.startswith("[") and time.monotonic() < deadline:  # a status line: running
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
    assert line.startswith("["), f"no status line before exit {proc.poll()}"
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "words counted" in out
    last = err.strip().splitlines()[-1]
    assert "failed=0" in last


def test_one_final_status_line_after_the_drain() -> None:
    proc = run("topologies/word_count.py", "--conf", "wordcount.sentences=200",
               "--conf", "wordcount.repeat=1", "--status-interval", "60")
    assert proc.returncode == 0, proc.stderr
    status = [line for line in proc.stderr.splitlines() if line.startswith("[word-count")]
    assert len(status) == 1, proc.stderr
    assert "acked=200 failed=0 timeouts=0 pending=0" in status[0]


NEVER_ACKS = """
from engine import Bolt, TopologyBuilder
from connectors.memory import ListSpout

class Swallow(Bolt):
    def prepare(self, conf, context, collector): pass
    def execute(self, tup): pass          # never acks: every tree stays pending

b = TopologyBuilder()
b.set_spout("s", ListSpout([[1], [2], [3]], ["n"]))
b.set_bolt("swallow", Swallow()).shuffle_grouping("s")
topology = b.create_topology()
"""


def test_drain_that_times_out_says_how_many_trees_were_abandoned(tmp_path: Path) -> None:
    file = tmp_path / "never_acks.py"
    file.write_text(NEVER_ACKS)
    proc = run(str(file), "--duration", "0.3", "--drain-secs", "0.2")
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "abandoned" in line]
    assert warning == ["WARNING engine.cluster: topology 'never-acks': drain timed out after "
                       "0.2 s; 3 tracked trees abandoned (their spouts heard neither ack "
                       "nor fail)"], proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("[never-acks")
    assert "pending=3" in proc.stderr.splitlines()[-1]


def test_true_false_and_digits_are_booleans_on_the_command_line() -> None:
    for text in ("True", "true", "1", "False", "false", "0"):
        proc = run("topologies/word_count.py", "--conf", "wordcount.sentences=20",
                   "--conf", "wordcount.repeat=1", "--conf", f"topology.debug={text}",
                   "--log-level", "WARNING")
        assert proc.returncode == 0, (text, proc.stderr)


def test_misspelt_topology_key_is_one_line_with_the_nearest_key() -> None:
    proc = run("topologies/word_count.py", "--conf", "topology.max.spout.pendng=10")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: topology 'word-count': unknown config key 'topology.max.spout.pendng'; "
        "did you mean 'topology.max.spout.pending'?"]


LOGS = """
import logging
from engine import TopologyBuilder
from engine.testing import FeederSpout

logging.getLogger("aiokafka.consumer").info("aiokafka info")
logging.getLogger("aiokafka.consumer").warning("aiokafka warning")
logging.getLogger("mine").debug("my debug")
logging.getLogger("mine").info("my info")
b = TopologyBuilder()
b.set_spout("s", FeederSpout(["v"]))
topology = b.create_topology()
"""


def test_log_level_sets_the_root_and_named_loggers_aiokafka_quiet_unless_named(
        tmp_path: Path) -> None:
    file = tmp_path / "logs.py"
    file.write_text(LOGS)

    def lines(*levels: str) -> list[str]:
        args = [a for level in levels for a in ("--log-level", level)]
        proc = run(str(file), "--duration", "0.1", *args)
        assert proc.returncode == 0, proc.stderr
        return [line for line in proc.stderr.splitlines() if line.startswith(
            ("INFO", "DEBUG", "WARNING"))]

    assert lines() == ["WARNING aiokafka.consumer: aiokafka warning", "INFO mine: my info"]
    assert lines("warning") == ["WARNING aiokafka.consumer: aiokafka warning"]
    assert lines("DEBUG", "aiokafka=INFO") == [
        "INFO aiokafka.consumer: aiokafka info", "WARNING aiokafka.consumer: aiokafka warning",
        "DEBUG mine: my debug", "INFO mine: my info"]


def test_bad_log_level_is_one_line_exit_2() -> None:
    proc = run("topologies/word_count.py", "--log-level", "LOUD")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --log-level 'LOUD': unknown level 'LOUD'; use DEBUG, INFO, WARNING, ERROR "
        "or CRITICAL"]
