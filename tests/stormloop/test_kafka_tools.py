"""``stormloop produce`` and ``stormloop consume`` against the real test broker, and the
"try it" block of docs/kafka.md run end to end (the broker line aside: the suite's own
broker stands in for ``stormloop broker``)."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.connectors.kafka.helpers import unique

ROOT = Path(__file__).resolve().parents[2]


def stormloop(*args: str, stdin: str = "", timeout: float = 60
              ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stormloop", *args], input=stdin, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=timeout)


def test_lines_produced_from_stdin_and_a_file_are_consumed_back(kafka_broker,
                                                                tmp_path: Path) -> None:
    topic, bootstrap = unique("lines"), kafka_broker.bootstrap
    sent = stormloop("produce", topic, "--bootstrap", bootstrap, stdin="one\n\ntwo 2\n")
    assert sent.returncode == 0, sent.stderr
    assert sent.stderr == f"2 records written to {topic} at {bootstrap}\n"
    file = tmp_path / "orders.jsonl"
    file.write_text('{"id": "a7", "n": 1}\n{"id": 8, "n": 2}\n')
    keyed = stormloop("produce", topic, "--from", str(file), "--key-field", "id",
                      "--bootstrap", bootstrap)
    assert keyed.returncode == 0, keyed.stderr
    got = stormloop("consume", topic, "--from-beginning", "--max", "4", "--bootstrap", bootstrap)
    assert got.returncode == 0, got.stderr
    # Keyed records go to their key's partition: the order holds within a partition only.
    assert sorted(got.stdout.splitlines()) == sorted(["one", "two 2", 'a7\t{"id": "a7", "n": 1}',
                                                      '8\t{"id": 8, "n": 2}'])
    idle = stormloop("consume", topic, "--from-beginning", "--idle-secs", "1",
                     "--bootstrap", bootstrap)
    assert idle.returncode == 0 and len(idle.stdout.splitlines()) == 4, idle.stderr


def test_bad_input_and_a_missing_topic_are_one_line_exit_2(kafka_broker) -> None:
    bootstrap = kafka_broker.bootstrap
    bad = stormloop("produce", unique("t"), "--key-field", "id", "--bootstrap", bootstrap,
                    stdin='{"id": 1}\nnot json\n')
    assert bad.returncode == 2
    assert re.fullmatch(r"stormloop produce: line 2 is not JSON \(.*\); --key-field id needs "
                        r"one JSON object per line\n", bad.stderr), bad.stderr
    missing = stormloop("consume", "no-such-topic-here", "--bootstrap", bootstrap)
    assert missing.returncode == 2
    assert missing.stderr.startswith("stormloop consume: topic 'no-such-topic-here' does not "
                                     "exist; topics: [")


def test_no_broker_is_one_line_exit_1() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again: nothing listens there
    for command in ("produce", "consume"):
        proc = stormloop(command, "t", "--bootstrap", f"127.0.0.1:{port}", stdin="x\n")
        assert proc.returncode == 1, proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(
            f"stormloop {command}: cannot reach a Kafka broker at 127.0.0.1:{port} ("), lines
        assert lines[0].endswith("is one running? (stormloop broker starts one)")


def _try_it_block() -> list[str]:
    text = (ROOT / "docs" / "kafka.md").read_text()
    block = re.search(r"^## Try it\n.*?^```sh\n(.*?)^```", text, re.S | re.M)
    assert block, "docs/kafka.md has no 'Try it' sh block"
    return [line.split("  #")[0].strip() for line in block.group(1).splitlines()]


def test_the_try_it_block_of_the_kafka_docs_runs_end_to_end(kafka_broker) -> None:
    lines = _try_it_block()
    assert lines[0] == "stormloop broker &" and lines[-1] == "kill %1"
    bootstrap = kafka_broker.bootstrap
    names = {"sentences": unique("sentences"), "word-counts": unique("word-counts")}
    extra = {"produce": f" --bootstrap {bootstrap}", "consume": f" --bootstrap {bootstrap}",
             "run": (f" --conf kafka.bootstrap.servers={bootstrap} --conf kafka.group.id="
                     f"{unique('g')} --conf kafka.sentences.topic={names['sentences']} "
                     f"--conf kafka.counts.topic={names['word-counts']}")}
    outputs = []
    for line in lines[1:-1]:
        for name, replacement in names.items():
            line = re.sub(rf"(produce|consume) {name}\b", rf"\1 {replacement}", line)
        command = re.search(r"stormloop (\w+)", line)
        assert command, line
        line = line + extra[command.group(1)]
        line = line.replace("stormloop ", f"{sys.executable} -m stormloop ")
        proc = subprocess.run(["bash", "-c", line], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
        assert proc.returncode == 0, (line, proc.stderr[-3000:])
        outputs.append(proc.stdout)
    counts = [line.split("\t") for line in outputs[-1].splitlines()]
    assert Counter(word for word, _ in counts) == {"the": 3, "moon": 2, "cow": 1, "jumped": 1,
                                                   "over": 1}
    totals: dict[str, int] = {}
    for word, count in counts:
        totals[word] = max(totals.get(word, 0), int(count))
    assert totals == {"the": 3, "moon": 2, "cow": 1, "jumped": 1, "over": 1}
