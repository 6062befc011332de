"""replay_failed.py's command line: arguments, errors that stop before Spark starts, and a
run under spark-submit (Spark's own JVM, the code shipped to the workers)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pyspark
import pytest

from connectors.spark.cli import parse_since
from tests.connectors.spark.helpers import failed, produce, read_all, unique

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "replay_failed.py"
SPARK_SUBMIT = Path(pyspark.__file__).parent / "bin" / "spark-submit"
NOW = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)
NOW_MS = int(NOW.timestamp() * 1000)


@pytest.mark.parametrize(("text", "expected"), [
    ("90m", NOW_MS - 90 * 60_000),
    ("2h", NOW_MS - 2 * 3_600_000),
    ("1.5d", NOW_MS - 36 * 3_600_000),
    ("2026-11-22T05:00", NOW_MS - 3_600_000),
    ("2026-11-22T07:00+02:00", NOW_MS - 3_600_000),
    ("2026-11-22", NOW_MS - 6 * 3_600_000),
    ("1700000000000", 1_700_000_000_000),
])
def test_since_accepts_durations_iso_times_and_epoch_ms(text: str, expected: int) -> None:
    assert parse_since(text, now=NOW) == expected


def test_since_rejects_anything_else_with_the_accepted_forms() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"^--since 'yesterday': expected a "):
        parse_since("yesterday", now=NOW)


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True,
                          text=True, timeout=timeout, cwd="/")


def test_unreachable_broker_is_one_line_and_status_2_within_seconds() -> None:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    started = time.monotonic()
    result = _run("--bootstrap-servers", f"127.0.0.1:{port}", "--failed-topic", "failed",
                  "--connect-timeout", "3")
    elapsed = time.monotonic() - started
    assert result.returncode == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"replay_failed.py: error: cannot reach Kafka at 127.0.0.1:{port} "
                               "within 3 s")
    assert elapsed < 10


def test_missing_failed_topic_is_status_2(kafka_broker) -> None:
    result = _run("--bootstrap-servers", kafka_broker.bootstrap, "--failed-topic", "nope-x1")
    assert result.returncode == 2
    assert result.stderr == ("replay_failed.py: error: topic 'nope-x1' does not exist on the "
                             "broker\n")


def test_bad_arguments_are_status_2() -> None:
    result = _run("--bootstrap-servers", "h:1", "--failed-topic", "f", "--since", "soon")
    assert result.returncode == 2
    assert "--since 'soon': expected a duration" in result.stderr
    result = _run("--bootstrap-servers", "h:1", "--failed-topic", "f",
                  "--max-offsets-per-task", "0")
    assert (result.returncode, result.stderr) == (
        2, "replay_failed.py: error: --max-offsets-per-task must be at least 1\n")


def test_missing_java_is_one_line_and_status_2() -> None:
    env = {k: v for k, v in os.environ.items() if k != "JAVA_HOME"}
    env["PATH"] = "/nonexistent"
    result = subprocess.run([sys.executable, str(SCRIPT), "--bootstrap-servers", "h:1",
                             "--failed-topic", "f", "--spark"], capture_output=True, text=True,
                            timeout=60, cwd="/", env=env)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == ("replay_failed.py: error: no Java found (Spark needs Java 17 or "
                             "later): set JAVA_HOME or put java on the PATH\n")


def test_a_sasl_user_needs_the_password_in_the_environment() -> None:
    env = {k: v for k, v in os.environ.items() if k != "STORMLOOP_SASL_PASSWORD"}
    result = subprocess.run([sys.executable, str(SCRIPT), "--bootstrap-servers", "h:1",
                             "--failed-topic", "f", "--sasl-username", "u"],
                            capture_output=True, text=True, timeout=60, cwd="/", env=env)
    assert (result.returncode, result.stderr) == (
        2, "replay_failed.py: error: --sasl-username needs the password in "
           "$STORMLOOP_SASL_PASSWORD\n")


def test_the_console_script_runs_the_same_command_line(monkeypatch, capsys) -> None:
    import tomllib
    from importlib import import_module

    pyproject = tomllib.loads((SCRIPT.parent.parent / "pyproject.toml").read_text())
    module, _, name = pyproject["project"]["scripts"]["stormloop-replay"].partition(":")
    entry = getattr(import_module(module), name)
    monkeypatch.setattr(sys, "argv", ["stormloop-replay", "--help"])
    with pytest.raises(SystemExit) as exit_info:
        entry()
    assert exit_info.value.code == 0
    assert "--max-records-per-sec" in capsys.readouterr().out


def test_spark_submit_runs_the_job_and_stdout_is_the_summary_alone(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    failed_topic, orders = unique("failed"), unique("orders")
    kafka_broker.create_topic_sync(failed_topic)
    kafka_broker.create_topic_sync(orders)
    too_many = failed(orders, 100, attempts=9)
    cut = dataclasses.replace(failed(orders, 101), value_truncated=True)
    payloads = [failed(orders, i).to_json() for i in range(11)]
    asyncio.run(produce(bootstrap, failed_topic,
                        [*payloads, too_many.to_json(), cut.to_json(), b"junk"]))
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable,
           "PYSPARK_DRIVER_PYTHON": sys.executable}
    result = subprocess.run(
        [str(SPARK_SUBMIT), "--master", "local[1]", "--conf", "spark.ui.enabled=false",
         "--conf", "spark.ui.showConsoleProgress=false", str(SCRIPT),
         "--bootstrap-servers", bootstrap, "--failed-topic", failed_topic,
         "--max-attempts", "5", "--max-records-per-sec", "10"],
        capture_output=True, text=True, timeout=240, env=env, cwd="/")
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert lines[0] == f"replay of {failed_topic!r} for group 'replay-failed'"
    assert lines[-1].startswith("took ") and "Spark start-up" in lines[-1]  # not in process
    totals = dict(line.rsplit(None, 1) for line in lines[3:10])
    assert totals == {"  read": "14", "  malformed": "1", "  duplicates dropped": "0",
                      "  skipped: over 5 attempts": "1", "  skipped: value truncated": "1",
                      "  filtered out": "0", "  replayed": "11"}
    write = float(lines[-1].split("write ")[1].split(" s")[0])
    assert write >= 0.9  # 11 records at 10 per second: the first at once, the last 1 s later
    records = asyncio.run(read_all(bootstrap, orders))
    assert sorted(r.value for r in records) == sorted(b"v%d" % i for i in range(11))
