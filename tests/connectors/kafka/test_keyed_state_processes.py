"""Stateful keyed work across engine processes on the test broker: the count bolt of
``topologies/stateful_word_count.py`` keeps its state per input partition, backed by the
changelog topic ``<group>-count-changelog``, so that a partition's counts move with it.

Processes are started by the CLI (``python -m engine run``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from connectors.kafka.repartition import topic_name
from tests.connectors.kafka.helpers import produce, unique
from tests.connectors.kafka.test_keyed_processes import (
    REPO,
    Run,
    last_counts,
    sentences_of,
    wait_split,
    wait_truth,
    word_count_conf,
)
from tests.engine.test_supervisor import Supervised, supervised  # noqa: F401 (fixture)

STATEFUL = REPO / "topologies" / "stateful_word_count.py"


@pytest.fixture
def runs(supervised: list[Supervised]) -> list[Supervised]:  # noqa: F811 (the fixture)
    """Processes started by the test (killed afterwards if still running)."""
    return supervised


async def stateful_run(kafka_broker, runs: list[Run], tmp_path: Path, start) -> None:
    """Start the stateful word count with ``start(conf)``, write the input once the
    members share the topics, and check that every word's last count is the truth."""
    bootstrap = kafka_broker.bootstrap
    sentences, counts, group = unique("sentences"), unique("counts"), unique("g")
    await kafka_broker.create_topic(sentences, 2)
    await kafka_broker.create_topic(counts, 2)
    conf = word_count_conf(bootstrap, sentences, counts, group,
                           **{"topology.state.checkpoint.interval.ms": 200})
    start(conf)
    await wait_split(runs, [sentences, topic_name(group, "count")], 2, 2)
    lines = sentences_of(1500)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])
    truth = Counter(word for line in lines for word in line.split())
    await wait_truth(bootstrap, counts, truth, runs)
    for run in runs:
        assert run.stop() == 0, run.text()[-3000:]
    assert await last_counts(bootstrap, counts) == truth
    restored = {line.split("partition ")[1].split(" ")[0] for run in runs
                for line in run.text().splitlines() if "changelog records in" in line}
    assert restored == {"0", "1"}, "each partition's state restored by its owner"


async def test_stateful_word_count_under_workers_2_is_exact(kafka_broker, runs,
                                                           tmp_path) -> None:
    def start(conf: dict[str, object]) -> None:
        runs.append(Run(tmp_path / "workers.log", {**conf, "topology.state.dir": tmp_path},
                        "--workers", "2", file=STATEFUL))

    await stateful_run(kafka_broker, runs, tmp_path, start)


async def test_stateful_word_count_as_two_hosts_is_exact(kafka_broker, runs,
                                                        tmp_path) -> None:
    def start(conf: dict[str, object]) -> None:
        for name in ("a", "b"):
            runs.append(Run(tmp_path / f"{name}.log",
                            {**conf, "topology.workers": 2,
                             "topology.state.dir": tmp_path / name}, file=STATEFUL))

    await stateful_run(kafka_broker, runs, tmp_path, start)
