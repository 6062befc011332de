"""``python -m engine run``: exit 0 on a run, exit 2 with one line on bad input."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

from engine.cli import READY
from tests.process_lines import wait_for_line

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
    try:
        before = wait_for_line(proc.stderr, f"word-count: {READY}")
    finally:
        proc.send_signal(signal.SIGTERM)
    # Read through the streams' buffers (communicate() would skip what they hold); the
    # report on stdout is a few lines, printed at the end.
    err = "".join(before) + proc.stderr.read()
    assert proc.stdout is not None
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0, err
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


def test_http_on_a_busy_port_is_one_line_exit_2() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = run("topologies/word_count.py", "--http", str(port))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"error: --http 127.0.0.1:{port}: cannot listen there (Address already in use); is "
        f"another process serving on it? choose another port (0 picks a free one)"]


def test_kafka_example_without_the_extra_names_it(tmp_path: Path) -> None:
    (tmp_path / "aiokafka.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'aiokafka'\", name='aiokafka')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(tmp_path), str(ROOT)))}
    proc = subprocess.run([sys.executable, "-m", "engine", "run",
                           "topologies/kafka_word_count.py"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: topologies/kafka_word_count.py: import failed: ModuleNotFoundError: No module "
        "named 'aiokafka'; install it with pip install 'stormloop[kafka]'"]


BOLT_BUG = """
from engine import Bolt, TopologyBuilder
from connectors.memory import ListSpout

class Parse(Bolt):
    def prepare(self, conf, context, collector): pass
    def execute(self, tup):
        raise ValueError("cannot parse " + tup["line"])   # the same for every replay

b = TopologyBuilder()
b.set_spout("lines", ListSpout([["line %d" % i] for i in range(200)], ["line"]))
b.set_bolt("parse", Parse()).shuffle_grouping("lines")
topology = b.create_topology()
"""


def test_a_deterministic_bolt_bug_ends_with_status_3(tmp_path: Path) -> None:
    file = tmp_path / "bolt_bug.py"
    file.write_text(BOLT_BUG)
    proc = run(str(file), "--log-level", "engine=CRITICAL", timeout=120)
    assert proc.returncode == 3, proc.stderr[-2000:]
    lines = proc.stderr.strip().splitlines()
    assert lines[-1] == ("bolt-bug: not every tuple was fully processed (spout 'lines': 200 "
                         "given up); exit status 3")
    assert "emitted=2200 acked=0 failed=2200" in lines[-2]
    assert next(line for line in lines if "gave up" in line).startswith(
        "WARNING connectors.memory: ListSpout 'lines' task 1: gave up item ['line ")


ONE_SHOT = """
from engine import Bolt, Spout, TopologyBuilder

class OneShot(Spout):      # emits 3 tuples, never replays, reports no given_up
    def declare_output_fields(self, declarer): declarer.declare(["n"])
    def open(self, conf, context, collector): self.c, self.left = collector, [1, 2, 3]
    def next_tuple(self):
        if self.left: self.c.emit([self.left.pop()], msg_id=len(self.left))
    def exhausted(self): return not self.left

class FailAll(Bolt):
    def prepare(self, conf, context, collector): self.c = collector
    def execute(self, tup): self.c.fail(tup)

b = TopologyBuilder()
b.set_spout("s", OneShot())
b.set_bolt("f", FailAll()).shuffle_grouping("s")
topology = b.create_topology()
"""


def test_a_spout_that_does_not_replay_ends_with_status_3_when_trees_failed(
        tmp_path: Path) -> None:
    file = tmp_path / "one_shot.py"
    file.write_text(ONE_SHOT)
    proc = run(str(file))
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        "one-shot: not every tuple was fully processed (spout 's': 3 failed); exit status 3")


STATEFUL = """
from engine import TopologyBuilder
from engine.state import StatefulBolt
from connectors.memory import ListSpout

class Count(StatefulBolt):
    def prepare(self, conf, context, collector): self.collector = collector
    def init_state(self, state): self.counts = state
    def execute(self, tup):
        self.counts.put(tup["w"], self.counts.get(tup["w"], 0) + 1)
        self.collector.ack(tup)

CONF = {"topology.state.checkpoint.interval.ms": 50}
b = TopologyBuilder()
b.set_spout("words", ListSpout([[w] for w in "abcdefghij"], ["w"]))
b.set_bolt("count", Count()).shuffle_grouping("words")
topology = b.create_topology()
"""


def test_checkpoint_tuples_do_not_count_as_emitted(tmp_path: Path) -> None:
    file = tmp_path / "stateful.py"
    file.write_text(STATEFUL)
    proc = run(str(file), "--conf", f"topology.state.dir={tmp_path}",
               "--duration", "1")
    assert proc.returncode == 0, proc.stderr
    assert "emitted=10 acked=10 failed=0" in proc.stderr.strip().splitlines()[-1], proc.stderr


def test_a_broker_unreachable_at_start_is_waited_for_not_invalid_input() -> None:
    with socket.socket() as sock:  # a port nothing listens on: connections are refused
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    args = [sys.executable, "-m", "engine", "run", "topologies/kafka_word_count.py",
            "--conf", f"kafka.bootstrap.servers=127.0.0.1:{port}"]
    proc = subprocess.Popen(args, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        seen = wait_for_line(proc.stderr, "; retrying quietly until it starts")
        assert "KafkaConnectionError" in seen[-1], seen
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
