"""``python -m engine run FILE --workers N``: shared partitions, restarts, drain, refusal,
worker ids, a broker unreachable at start, a failure at start that repeats."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.supervisor import worker_argv, worker_ids
from tests.connectors.kafka.helpers import (
    eventually,
    high_watermarks,
    produce,
    read_all,
    unique,
    wait_committed,
)
from tests.connectors.kafka.netfault import linked_broker

REPO = Path(__file__).resolve().parents[2]
RELAY = REPO / "tests" / "connectors" / "kafka" / "relay_topology.py"
_STARTED = re.compile(r"worker (\d+) started \(pid (\d+)\)")


class Supervised:
    """One ``python -m engine run RELAY --workers N``, its stderr in a log file."""

    def __init__(self, log: Path, workers: int, conf: dict[str, object]) -> None:
        self.log = log
        args = [sys.executable, "-m", "engine", "run", str(RELAY), "--workers", str(workers),
                "--status-interval", "0.5"]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        with log.open("wb") as out:
            self.proc = subprocess.Popen(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, env=dict(os.environ))

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def workers(self) -> list[tuple[int, int]]:
        """``(index, pid)`` of every worker start so far, in order."""
        return [(int(i), int(p)) for i, p in _STARTED.findall(self.text())]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(40)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError(f"supervisor ignored SIGTERM:\n{self.text()[-3000:]}") from None


@pytest.fixture
def supervised() -> Iterator[list[Supervised]]:
    started: list[Supervised] = []
    yield started
    for sup in started:
        if sup.proc.poll() is None:
            sup.proc.kill()
            sup.proc.wait(10)


async def _setup(kafka_broker, n: int) -> tuple[dict[str, object], list[bytes]]:
    bootstrap = kafka_broker.bootstrap
    source, sink, group = unique("in"), unique("out"), unique("g")
    await kafka_broker.create_topic(source, 4)
    await kafka_broker.create_topic(sink, 4)
    values = [f"v{i}".encode() for i in range(n)]
    await produce(bootstrap, source, [(f"k{i}".encode(), v) for i, v in enumerate(values)])
    conf: dict[str, object] = {"kafka.bootstrap.servers": bootstrap, "relay.source": source,
                               "relay.sink": sink, "relay.group": group}
    return conf, values


async def _all_out_and_committed(conf: dict[str, object], values: list[bytes],
                                 sup: Supervised, timeout: float) -> None:
    bootstrap, source = str(conf["kafka.bootstrap.servers"]), str(conf["relay.source"])
    ends = await high_watermarks(bootstrap, source)
    try:
        await wait_committed(bootstrap, str(conf["relay.group"]), source, ends, timeout,
                             "every input committed")
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{sup.text()[-4000:]}") from None
    written = {r.value for r in await read_all(bootstrap, str(conf["relay.sink"]))}
    assert written >= set(values)


async def test_two_workers_split_the_partitions_and_consume_the_topic(
        kafka_broker, supervised, tmp_path: Path) -> None:
    conf, values = await _setup(kafka_broker, 2000)
    sup = Supervised(tmp_path / "sup.log", 2, conf)
    supervised.append(sup)
    await _all_out_and_committed(conf, values, sup, 60)
    assert sup.stop() == 0
    text = sup.text()
    assert {i for i, _ in sup.workers()} == {0, 1}
    for index in (0, 1):  # each worker held part of the topic
        assert re.search(rf"^\[worker {index}\] .*partitions assigned", text, re.M)
    last = [line for line in text.splitlines() if line.startswith("[relay-topology workers=")]
    acked = int(re.search(r" acked=(\d+)", last[-1]).group(1))  # type: ignore[union-attr]
    assert acked >= len(values)


async def test_a_sigkilled_worker_is_restarted_and_nothing_is_lost(
        kafka_broker, supervised, tmp_path: Path) -> None:
    conf, values = await _setup(kafka_broker, 3000)
    conf["relay.delay.secs"] = 0.003  # slow enough to kill it mid-stream
    # The workers are static members: their session must outlast a restart (docs/scaling.md).
    conf["relay.session.timeout.ms"] = 10_000
    sup = Supervised(tmp_path / "sup.log", 2, conf)
    supervised.append(sup)
    bootstrap = str(conf["kafka.bootstrap.servers"])

    async def some_output() -> bool:
        return len(sup.workers()) == 2 and len(await read_all(bootstrap, str(conf["relay.sink"]),
                                                              timeout=1.0)) > 100

    await eventually(some_output, 40, "both workers started and some output")
    victim = dict(sup.workers())[1]
    os.kill(victim, signal.SIGKILL)

    async def restarted() -> bool:
        return [i for i, _ in sup.workers()].count(1) == 2

    await eventually(restarted, 20, "worker 1 restarted")
    assert "worker 1 exited with signal SIGKILL; restarting in" in sup.text()
    await _all_out_and_committed(conf, values, sup, 90)
    assert sup.stop() == 0


def test_a_topology_whose_spouts_cannot_share_work_is_refused(tmp_path: Path) -> None:
    topology = tmp_path / "listed.py"
    topology.write_text(
        "from connectors.memory import ListSpout\n"
        "from engine import TopologyBuilder\n"
        "b = TopologyBuilder()\n"
        "b.set_spout('items', ListSpout([[1], [2]], ['n']))\n"
        "topology = b.create_topology()\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-m", "engine", "run", str(topology), "--workers",
                           "2"], cwd=REPO, capture_output=True, text=True, env=env, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: --workers 2: spout 'items' (ListSpout) cannot share its input across "
        "processes (each would read all of it); run it with one worker"]


def test_worker_arguments_drop_workers_and_move_the_http_port() -> None:
    argv = ["run", "t.py", "--workers", "3", "--http", "127.0.0.1:9100", "--name", "x"]
    assert worker_argv(argv, 2) == ["run", "t.py", "--http", "127.0.0.1:9102", "--name", "x"]
    assert worker_argv(["run", "t.py", "--workers=2", "--http=9100"], 1) == [
        "run", "t.py", "--http=9101"]
    assert worker_argv(["run", "t.py", "--http", "[::1]:0"], 1) == [
        "run", "t.py", "--http", "[::1]:0"]


def test_worker_arguments_give_each_worker_its_id() -> None:
    assert worker_argv(["run", "t.py"], 1, 2, "host-a") == [
        "run", "t.py", "--conf", "topology.workers=2", "--conf", "topology.worker.id=host-a-1"]
    assert worker_ids("host-a", "orders", 4) == "host-a"
    assert worker_ids(None, "my orders", 2).endswith("-my_orders")  # host, then the name
    with pytest.raises(ConfigError, match=r"^--workers 2: config 'topology.worker.id' must be"):
        worker_ids("a b", "orders", 2)


def test_a_worker_failing_twice_the_same_way_before_it_runs_stops_the_supervisor(
        tmp_path: Path) -> None:
    # The topology builds in the supervisor; in a worker its build fails the way a module
    # missing from the worker's environment and imported late does.
    topology = tmp_path / "relay_in_workers.py"
    topology.write_text(
        "import os\n"
        "from tests.connectors.kafka.relay_topology import CONF, build as relay\n"
        "def build(conf):\n"
        "    if os.environ.get('STORMLOOP_WORKER_INDEX'):\n"
        "        raise ModuleNotFoundError(\"No module named 'msgspec'\", name='msgspec')\n"
        "    return relay(conf)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    conf = {"kafka.bootstrap.servers": "127.0.0.1:1", "relay.source": "in",
            "relay.sink": "out", "relay.group": "g", "relay.keyed": "true"}
    args = [sys.executable, "-m", "engine", "run", str(topology), "--workers", "2"]
    for key, value in conf.items():
        args += ["--conf", f"{key}={value}"]
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr[-3000:]
    stops = [line for line in proc.stderr.splitlines() if "failed twice" in line]
    assert len(stops) == 1, proc.stderr[-3000:]
    assert re.fullmatch(
        r"ERROR engine\.supervisor: worker [01] failed twice the same way before its topology "
        r"ran \(status 1\): ModuleNotFoundError: No module named 'msgspec'; install it with "
        r"pip install 'stormloop\[kafka\]'; stopping every worker", stops[0]), stops[0]
    assert proc.stderr.count("started (pid") <= 4  # each worker ran twice at most


def test_a_missing_extra_stops_the_supervisor_before_any_worker(tmp_path: Path) -> None:
    (tmp_path / "msgspec.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'msgspec'\", name='msgspec')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join((str(tmp_path), str(REPO)))}
    args = [sys.executable, "-m", "engine", "run", str(RELAY), "--workers", "2",
            "--conf", "kafka.bootstrap.servers=127.0.0.1:1"]
    proc = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.strip().endswith(
        "No module named 'msgspec'; install it with pip install 'stormloop[kafka]'"), (
        proc.stderr[-3000:])
    assert "started (pid" not in proc.stderr


async def test_workers_wait_for_a_broker_unreachable_at_start(supervised, tmp_path: Path) -> None:
    async with linked_broker() as (link, broker):
        bootstrap = f"127.0.0.1:{link.port}"
        source, sink, group = unique("in"), unique("out"), unique("g")
        await broker.create_topic(source, 2)
        await broker.create_topic(sink, 2)
        values = [b"v%d" % i for i in range(200)]
        await produce(bootstrap, source, [(b"k%d" % i, v) for i, v in enumerate(values)])
        link.refuse()
        conf: dict[str, object] = {"kafka.bootstrap.servers": bootstrap,
                                   "relay.source": source, "relay.sink": sink,
                                   "relay.group": group}
        sup = Supervised(tmp_path / "sup.log", 2, conf)
        supervised.append(sup)

        async def both_waiting() -> bool:
            assert sup.proc.poll() is None, sup.text()[-3000:]
            return sup.text().count("relay-topology: cannot start yet (") == 2

        await eventually(both_waiting, 40, "both workers waiting for the broker")
        link.heal()
        await _all_out_and_committed({**conf, "relay.group": group}, values, sup, 60)
        assert sup.stop() == 0
    text = sup.text()
    assert re.search(r"^\[worker 0\] INFO engine\.cli: relay-topology: started after "
                     r"[0-9.]+ s \(\d+ failed attempts\)$", text, re.M), text[-3000:]
    assert "restarting in" not in text  # waited, never exited
