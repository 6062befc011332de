"""A stateful windowed bolt across engine processes on the test broker: the count of
``window_count_topology.py``, behind a repartition hop, keeps a window per input
partition, with the repartition records' offsets as message ids, and its state and
recovery ids in the changelog topic ``<group>-count-changelog``.

Processes are started by the CLI (``python -m engine run``).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson

from connectors.kafka.changelog import changelog_name
from connectors.kafka.repartition import ID_SPAN, topic_name
from engine.keyed import reader_id
from tests.connectors.kafka.helpers import (
    committed,
    committed_rows,
    committed_to_end,
    eventually,
    high_watermarks,
    produce,
    read_all,
    unique,
)
from tests.connectors.kafka.test_keyed_processes import (
    Run,
    counts_not_under,
    new_count,
    sentences_of,
    wait_split,
    wait_truth,
    word_count_conf,
)

WINDOWED = Path(__file__).resolve().parent / "window_count_topology.py"


async def test_stateful_windowed_count_under_workers_2_is_exact(kafka_broker, runs,
                                                               tmp_path) -> None:
    """Exact counts; every tree completes (each window's tuples expire and their acks go
    out at the next commit), so the hop is committed to its end; each partition's state
    restored by its owner; and in each changelog partition the window's recovery ids:
    offsets of the repartition partition of the same number (the split leaves 0 in the
    message id field)."""
    bootstrap, sentences, counts, group = await new_count(kafka_broker)
    conf = word_count_conf(bootstrap, sentences, counts, group, **{
        "topology.state.checkpoint.interval.ms": 200, "topology.state.dir": tmp_path})
    run = Run(tmp_path / "workers.log", conf, "--workers", "2", file=WINDOWED)
    runs.append(run)
    hop = topic_name(group, "count")
    await wait_split(runs, [sentences, hop], 2, 2)
    lines = sentences_of(1500)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in lines])
    await wait_truth(bootstrap, counts, Counter(w for line in lines for w in line.split()),
                     runs)

    async def hop_committed() -> bool:
        return await committed(bootstrap, group, hop) == await high_watermarks(bootstrap, hop)

    await eventually(hop_committed, 30, "every repartition record's tree to complete")
    assert run.stop() == 0, run.text()[-3000:]
    restored = {line.split("partition ")[1].split(" ")[0] for line in run.text().splitlines()
                if "changelog records in" in line}
    assert restored == {"0", "1"}, "each partition's state restored by its owner"
    ends = await high_watermarks(bootstrap, hop)
    ids: dict[int, tuple[list[object], list[int | None]]] = {}
    for record in await read_all(bootstrap, changelog_name(group, "count")):
        if record.key.startswith(b"\x00"):
            continue  # a marker or a start record
        key = orjson.loads(record.key)
        if isinstance(key, list) and key[0] == "$window":
            ids[record.partition] = (key, orjson.loads(record.value.split(b" ", 1)[1]))
    assert sorted(ids) == [0, 1], ids
    for partition, (key, (expired, evaluated)) in ids.items():
        assert key == ["$window", partition, reader_id("count"), "default"]
        # An id is its record's offset times ID_SPAN plus the row's index in the record.
        assert evaluated is not None and evaluated > 0, ids
        assert evaluated // ID_SPAN < ends[partition], (ids, ends)
        assert expired is None or expired < evaluated, ids


async def test_a_member_joining_mid_stream_moves_windows_without_losing_a_count(
        kafka_broker, runs, tmp_path) -> None:
    """Two "hosts" (own state directories): the second joins while the first is counting,
    so the group moves partitions, and with them their state and recovery ids. No count is
    under the truth: every record is evaluated by a window of whoever holds its partition
    (at least once; the windows open at the move are evaluated again by the new owner)."""
    bootstrap = kafka_broker.bootstrap
    sentences, counts, group = unique("sentences"), unique("counts"), unique("g")
    await kafka_broker.create_topic(sentences, 4)
    await kafka_broker.create_topic(counts, 2)
    conf = word_count_conf(bootstrap, sentences, counts, group,
                           **{"topology.state.checkpoint.interval.ms": 200,
                              "topology.workers": 2})
    a = Run(tmp_path / "a.log", {**conf, "topology.state.dir": tmp_path / "a"}, file=WINDOWED)
    runs.append(a)
    hop = topic_name(group, "count")
    await wait_split(runs, [sentences, hop], 1, 4)
    lines = sentences_of(12000)
    first, second = lines[:6000], lines[6000:]
    await produce(bootstrap, sentences, [(None, line.encode()) for line in first])

    async def started() -> bool:
        return await committed_rows(bootstrap, group, hop) > 4000

    await eventually(started, 60, "some words counted and committed")
    b = Run(tmp_path / "b.log", {**conf, "topology.state.dir": tmp_path / "b"},
            file=WINDOWED)
    runs.append(b)
    # The rest arrives once both hold partitions: the move happens while windows are open,
    # and the newcomer's partitions have records to count after it restored them.
    await wait_split(runs, [sentences, hop], 2, 4)
    await produce(bootstrap, sentences, [(None, line.encode()) for line in second])

    await eventually(lambda: committed_to_end(bootstrap, group, [sentences, hop]), 120,
                     "both members to commit both topics to the end")
    assert a.stop() == 0 and b.stop() == 0, a.text()[-2000:] + b.text()[-2000:]
    assert "partition" in b.text() and "restored" in b.text(), b.text()[-3000:]
    truth = Counter(w for line in lines for w in line.split())
    await counts_not_under(bootstrap, counts, truth)
