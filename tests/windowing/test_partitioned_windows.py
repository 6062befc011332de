"""A stateful windowed bolt behind a repartition hop, driven by hand: a window per input
partition, with an in-memory changelog standing in for Kafka (the real one runs against the
test broker in tests/connectors/kafka/test_keyed_window_processes.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from engine.state import KeyValueState
from engine.state.changelog import ChangelogRestore, encode_changes
from engine.state.checkpoint import CHECKPOINT_STREAM, COMMIT, INITSTATE, PREPARE
from engine.state.partition_store import PartitionStore
from engine.state.restored import Restored, Written
from engine.windowing import BaseStatefulWindowedBolt, Count, TupleWindow
from engine.windowing.partition_state import WINDOW_KEY
from engine.windowing.partitioned import PartitionedWindowsExecutor
from engine.windowing.stateful import StatefulWindowedBoltExecutor
from tests.state.helpers import Recorder, checkpoint, context, make_tuple, settle
from tests.state.test_stateful_executor import SOURCES, TASKS


class Changelog:
    """Partitions by the word's first letter (a-l: 0, m-z: 1); keeps each partition's
    changelog records and restores from them as the Kafka input does, up to the group's
    committed input offset that the test sets."""

    def __init__(self) -> None:
        self.records: dict[int, list[tuple[bytes, bytes]]] = {0: [], 1: []}
        self.committed = {0: 0, 1: 0}
        self.written: list[dict[int, dict[Any, Any]]] = []

    def partition_of(self, values: Sequence[Any]) -> int:
        return 0 if values[0] < "m" else 1

    async def start(self, on_revoked: Any, on_assigned: Any = None,
                    allow_empty: bool = False) -> None:
        self.on_revoked, self.on_assigned = on_revoked, on_assigned

    def hold(self, partition: int) -> None:
        pass

    async def restore(self, partition: int, store: PartitionStore, namespace: str) -> Restored:
        store.begin(namespace, "cl")
        restore = ChangelogRestore(store, namespace, self.committed[partition], "cl")
        restore.add((i, k, v) for i, (k, v) in enumerate(self.records[partition]))
        restore.finish()
        return Restored(restore.applied, restore.skipped, restore.records, 0.0, False)

    async def write(self, changes: Mapping[int, Mapping[Any, Any]],
                    partitions: Iterable[int]) -> dict[int, Written]:
        self.written.append({p: dict(c) for p, c in changes.items()})
        for partition, changed in changes.items():
            self.records[partition] += encode_changes(changed, self.committed[partition])
        return {p: Written(self.committed[p], len(self.records[p]), None) for p in changes}

    async def stop(self) -> None:
        pass


class Letters(BaseStatefulWindowedBolt):
    """Journals each window as (copy, its tuples' words, the keys its state shows); keeps a
    count of the tuples it evaluated in its state."""

    def __init__(self, journal: list[Any]) -> None:
        self.journal = journal

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(["n"])

    def prepare(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector = collector

    def init_state(self, state: KeyValueState) -> None:
        self.state = state

    def execute(self, window: TupleWindow) -> None:
        n = self.state.get("n", 0) + len(window.get())
        self.state.put("n", n)
        self.journal.append((id(self), [t["word"] for t in window.get()],
                             sorted(k for k, _ in self.state), len(self.state), n))
        self.collector.emit([n])

    def cleanup(self) -> None:
        self.journal.append((id(self), "cleanup"))


def words(journal: list[Any]) -> list[list[str]]:
    return [entry[1] for entry in journal if entry[1] != "cleanup"]


def acked(out: Recorder) -> set[Any]:
    """The input tuples acked (checkpoint tuples aside)."""
    return {t for t in out.acks if t.source_stream != CHECKPOINT_STREAM}


def word(text: str, msg_id: int) -> Any:
    return make_tuple([text, msg_id], ["word", "id"])


async def started(tmp_path: Any, journal: list[Any]) -> tuple[Any, Recorder, Changelog]:
    conf = {"topology.state.dir": str(tmp_path), "topology.message.timeout.secs": 30}
    bolt = Letters(journal).with_tumbling_window(Count(2)).with_message_id_field("id")
    source = Changelog()
    ex = PartitionedWindowsExecutor(StatefulWindowedBoltExecutor(bolt, "letters"), source)
    out = Recorder()
    await ex.prepare(conf, context("letters", 4, TASKS, SOURCES, conf), out)
    await ex.execute(checkpoint(-1, INITSTATE))
    return ex, out, source


async def feed(ex: Any, *tuples: Any) -> None:
    for tup in tuples:
        await ex.execute(tup)
    await settle()  # restores (empty) run in the background, then the held tuples


async def commit(ex: Any, txid: int) -> None:
    await ex.execute(checkpoint(txid, PREPARE))
    await ex.execute(checkpoint(txid, COMMIT))


async def test_each_partition_has_its_own_window_and_copy_of_the_bolt(tmp_path) -> None:
    journal: list[Any] = []
    ex, _, _ = await started(tmp_path, journal)
    # One window of two would fire [apple, zebra]; a window per partition fires neither.
    await feed(ex, word("apple", 0), word("zebra", 0), word("bean", 1))
    assert words(journal) == [["apple", "bean"]]
    await feed(ex, word("yak", 1))
    assert words(journal) == [["apple", "bean"], ["zebra", "yak"]]
    copies = {entry[0] for entry in journal}
    assert len(copies) == 2  # a copy of the user's bolt per partition
    assert [entry[4] for entry in journal] == [2, 2]  # each copy counts in its own state
    await ex.cleanup()


async def test_a_revoked_partition_loses_its_window_and_fails_what_it_held(tmp_path) -> None:
    journal: list[Any] = []
    ex, out, source = await started(tmp_path, journal)
    apple, zebra = word("apple", 0), word("zebra", 0)
    await feed(ex, apple, zebra)
    assert journal == [] and sorted(ex.bolt.windows) == [0, 1] and ex.in_windows() == 2
    await source.on_revoked([1])
    assert zebra in out.fails and apple not in out.fails
    assert sorted(ex.bolt.windows) == [0] and ex.in_windows() == 1
    assert [entry[1] for entry in journal] == ["cleanup"]  # partition 1's copy, cleaned up
    await feed(ex, word("bean", 1))
    assert words(journal) == [["apple", "bean"]]
    await ex.cleanup()


async def test_an_assigned_partition_restores_its_state_and_recovery_ids(tmp_path) -> None:
    """Partition 0 evaluates [0, 1] and [2, 3] (ids), commits, then moves away and back:
    its state and ids come back from the changelog; replayed tuples up to the last expired
    id are acked and dropped, those up to the last evaluated one refill the window without
    firing it, and the next window fires with the restored count."""
    journal: list[Any] = []
    ex, out, source = await started(tmp_path, journal)
    first = [word(w, i) for i, w in enumerate(["ant", "bee", "cat", "dog", "eel"])]
    await feed(ex, *first)
    assert words(journal) == [["ant", "bee"], ["cat", "dog"]]
    assert journal[-1][2:] == (["n"], 1, 4)  # the user's keys only: no recovery ids
    await commit(ex, 0)
    ids = source.written[0][0][(WINDOW_KEY, 0, "words", "default")]
    assert ids == [1, 3]  # last expired, last evaluated
    assert acked(out) == set(first[:2])  # expired with [2, 3]'s window, then committed
    await source.on_revoked([0])
    assert set(out.fails) == set(first[2:])  # still in the window: failed
    source.committed[0] = 2  # the group committed past the acked ids
    await source.on_assigned([0])
    await settle()
    replayed = [word(w, i) for i, w in enumerate(["ant", "bee", "cat", "dog", "eel"])]
    later = [word("fox", 5), word("gnu", 6)]
    await feed(ex, *replayed, *later)
    # [cat, dog] refilled the window and did not fire it again.
    assert words(journal) == [["ant", "bee"], ["cat", "dog"], ["eel", "fox"]]
    assert journal[-1][4] == 6  # 4 restored, 2 more
    assert acked(out) == set(first[:2])  # held until the commit
    await commit(ex, 1)
    # Up to the last expired id acked at once; the refilled ones expired with [eel, fox].
    assert acked(out) == {*first[:2], *replayed[:4]}
    await ex.cleanup()
