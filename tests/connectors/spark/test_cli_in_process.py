"""The replay command line on small runs: no Spark (not even Java) needed, a progress line
while it runs, a clean Ctrl-C, and the program's own name in its usage line."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from tests.connectors.spark.helpers import failed, produce, read_all, unique

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "replay_failed.py"


def _without_java() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = "/nonexistent"  # no java to find: Spark could not start
    return env


def _total(summary: str, label: str) -> int:
    """A figure of the summary's totals table."""
    rows = [line.rsplit(None, 1) for line in summary.splitlines()[3:]]
    return int(next(n for name, n in rows if name.strip() == label).replace(",", ""))


def _failed_topic(kafka_broker, records: int) -> tuple[str, str]:
    failed_topic, orders = unique("failed"), unique("orders")
    kafka_broker.create_topic_sync(failed_topic)
    kafka_broker.create_topic_sync(orders)
    asyncio.run(produce(kafka_broker.bootstrap, failed_topic,
                        [failed(orders, i).to_json() for i in range(records)]))
    return failed_topic, orders


def test_a_small_run_needs_no_spark_and_tells_its_progress(kafka_broker) -> None:
    failed_topic, orders = _failed_topic(kafka_broker, 30)
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--bootstrap-servers", kafka_broker.bootstrap,
         "--failed-topic", failed_topic, "--max-records-per-sec", "30",
         "--progress-every", "0.2"],
        capture_output=True, text=True, timeout=120, cwd="/", env=_without_java())
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert _total(result.stdout, "replayed") == 30
    assert lines[-1].startswith("took ") and "(in process, no Spark: " in lines[-1]
    # A tick may also come while the run commits, after its writes ("committing, ...").
    progress = [line for line in result.stderr.splitlines()
                if line.startswith("replay_failed.py: writing, ")]
    assert progress, result.stderr
    assert progress[-1].startswith("replay_failed.py: writing, read 30 of 30 records, written ")
    records = asyncio.run(read_all(kafka_broker.bootstrap, orders))
    assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(30))


def test_ctrl_c_is_one_line_status_130_and_commits_nothing(kafka_broker) -> None:
    failed_topic, _ = _failed_topic(kafka_broker, 200)
    args = [sys.executable, str(SCRIPT), "--bootstrap-servers", kafka_broker.bootstrap,
            "--failed-topic", failed_topic, "--group-id", unique("replay")]
    # Its own session, as a terminal's foreground job: Ctrl-C goes to the process group.
    proc = subprocess.Popen([*args, "--max-records-per-sec", "10", "--progress-every", "0.2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd="/", env=_without_java(), start_new_session=True)
    stderr: list[str] = []
    writing = threading.Event()

    def read_stderr() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            stderr.append(line)
            if "writing" in line:
                writing.set()

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()
    try:
        assert writing.wait(60), "".join(stderr)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    reader.join(5)
    assert proc.stdout is not None
    stdout = proc.stdout.read()
    assert proc.returncode == 130
    assert stdout == ""
    # On a busy machine, progress lines of the reading stage may come before those of writing.
    progress = ("replay_failed.py: reading ", "replay_failed.py: writing, ")
    told = [line for line in stderr if not line.startswith(progress)]
    assert told == ["replay_failed.py: interrupted while writing; the group's progress is "
                    "committed only at the end, so the next run reads these records again\n"]
    again = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd="/",
                           env=_without_java())
    assert again.returncode == 0, again.stderr
    assert _total(again.stdout, "read") == 200


def test_usage_names_the_program_as_started() -> None:
    script = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True,
                            text=True, timeout=60)
    assert script.stdout.startswith("usage: replay_failed.py ")
    assert "--in-process" in script.stdout and "--progress-every" in script.stdout
    stormloop = subprocess.run([sys.executable, "-m", "stormloop", "replay", "--help"],
                               capture_output=True, text=True, timeout=60)
    assert stormloop.stdout.startswith("usage: stormloop replay "), stormloop.stderr
