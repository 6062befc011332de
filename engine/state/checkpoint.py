"""The checkpoint spout: drives prepare / commit / rollback / init-state through the topology.

Storm's ``CheckpointSpout`` and ``CheckPointState``. The spout's progress, ``(txid, state)``
with state ``COMMITTED``, ``PREPARING`` or ``COMMITTING``, is saved in the state store before
each step is emitted, so a restarted topology knows where it stopped. One checkpoint tuple
is in flight at a time, on the ``$checkpoint`` stream with ``msg_id = txid``; it reaches
every bolt (the builder subscribes them all) and is acked only once every bolt handled it.

Transitions (``recovering`` starts True, and any fail sets it):

====================  ================  ===========================================
saved state           action emitted    on ack
====================  ================  ===========================================
COMMITTED             PREPARE txid+1    save (txid+1, PREPARING)   [when the interval passed]
PREPARING             PREPARE           save (txid, COMMITTING)
COMMITTING            COMMIT            save (txid, COMMITTED)
recovering:
PREPARING             ROLLBACK          save (txid-1, COMMITTED)
COMMITTING            COMMIT            save (txid, COMMITTED)
COMMITTED             INITSTATE         recovery done
====================  ================  ===========================================

A cold start is ``(-1, COMMITTED)``: INITSTATE for txid -1, then checkpoints 0, 1, 2, ...
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from engine.components import Spout
from engine.config import (
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_MESSAGE_TIMEOUT_SECS,
    TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS,
    TOPOLOGY_WORKERS,
)
from engine.errors import ConfigError
from engine.state.kv import KeyValueState
from engine.state.store import SqliteStateStore, open_store, release_store

__all__ = [
    "CHECKPOINT_COMPONENT",
    "CHECKPOINT_FIELDS",
    "CHECKPOINT_STREAM",
    "COMMIT",
    "COMMITTED",
    "COMMITTING",
    "INITSTATE",
    "PREPARE",
    "PREPARING",
    "ROLLBACK",
    "CheckpointSpout",
    "CheckpointState",
]

log = logging.getLogger("engine.state")

CHECKPOINT_COMPONENT = "$checkpointspout"
CHECKPOINT_STREAM = "$checkpoint"
CHECKPOINT_FIELDS = ("txid", "action")
TX_STATE_KEY = "__state"

COMMITTED, PREPARING, COMMITTING = "COMMITTED", "PREPARING", "COMMITTING"
PREPARE, COMMIT, ROLLBACK, INITSTATE = "PREPARE", "COMMIT", "ROLLBACK", "INITSTATE"


@dataclass(frozen=True, slots=True)
class CheckpointState:
    """The checkpoint spout's saved progress: a txid and where it stands."""

    txid: int
    state: str

    def next_state(self, recovering: bool) -> CheckpointState:
        """The state to save once the current step's tuple is acked."""
        if self.state == PREPARING:
            return (CheckpointState(self.txid - 1, COMMITTED) if recovering
                    else CheckpointState(self.txid, COMMITTING))
        if self.state == COMMITTING:
            return CheckpointState(self.txid, COMMITTED)
        return self if recovering else CheckpointState(self.txid + 1, PREPARING)

    def next_action(self, recovering: bool) -> str:
        """The action to emit from this state."""
        if self.state == PREPARING:
            return ROLLBACK if recovering else PREPARE
        if self.state == COMMITTING:
            return COMMIT
        return INITSTATE if recovering else PREPARE


class CheckpointSpout(Spout):
    """Emits the ``$checkpoint`` stream; added by the builder when a bolt is stateful.

    Under ``topology.workers`` > 1 each process runs its own, for its own bolts, and keeps
    its progress in memory: the state it drives is per input partition, restored from the
    changelog by whichever process holds the partition, so a restart starts cold.
    """

    per_process = True
    drains_last = True  # a stop lets it go on until the other spouts' trees completed

    def declare_output_fields(self, declarer: Any) -> None:
        declarer.declare(list(CHECKPOINT_FIELDS), stream=CHECKPOINT_STREAM)

    store: SqliteStateStore | None = None

    def open(self, conf: dict[str, Any], context: Any, collector: Any) -> None:
        if not conf.get(TOPOLOGY_ACKER_EXECUTORS):
            raise ConfigError(f"config {TOPOLOGY_ACKER_EXECUTORS!r} is 0; stateful bolts need "
                              f"ackers: a checkpoint completes when every bolt acked it")
        interval = conf.get(TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS, 1000)
        timeout_ms = float(conf[TOPOLOGY_MESSAGE_TIMEOUT_SECS]) * 1000
        if interval >= timeout_ms:
            raise ConfigError(f"config {TOPOLOGY_STATE_CHECKPOINT_INTERVAL_MS!r} = {interval} "
                              f"must be below {TOPOLOGY_MESSAGE_TIMEOUT_SECS!r} "
                              f"({timeout_ms:g} ms)")
        self.collector = collector
        self.interval = interval / 1000
        self.saved = self._progress(conf, context)
        raw = None if self.saved is None else self.saved.get(TX_STATE_KEY)
        self.current = CheckpointState(-1, COMMITTED) if raw is None else CheckpointState(*raw)
        if raw is None:
            self._save(self.current)
        self.recovering = True
        self.in_progress = False
        self.last_checkpoint = -float("inf")
        self._time = asyncio.get_running_loop().time

    def next_tuple(self) -> None:
        """Emit the next step when none is in flight: recovery first, then on the interval."""
        if self.in_progress:
            return
        cur = self.current
        if not self.recovering and cur.state == COMMITTED:
            if self._time() - self.last_checkpoint < self.interval:
                return
            cur = self._save(cur.next_state(False))
            self.last_checkpoint = self._time()
        self.in_progress = True
        self.collector.emit([cur.txid, cur.next_action(self.recovering)], msg_id=cur.txid,
                            stream=CHECKPOINT_STREAM)

    def ack(self, msg_id: Any) -> None:
        """Every bolt handled the step: move on."""
        self.in_progress = False
        cur = self.current
        if msg_id != cur.txid:
            log.warning("checkpoint: ack for txid %r while at %r; ignored", msg_id, cur)
            return
        nxt = cur.next_state(self.recovering)
        if self.recovering and nxt == cur:
            self.recovering = False
            log.info("checkpoint: recovered at txid %d", cur.txid)
        elif nxt != cur:
            self._save(nxt)

    def fail(self, msg_id: Any) -> None:
        """A bolt failed the step (or it timed out): recover from the saved state."""
        self.in_progress = False
        if not self.recovering:
            log.warning("checkpoint: txid %r failed at %s; recovering", msg_id,
                        self.current.state)
        self.recovering = True

    def exhausted(self) -> bool:
        """Always: checkpoints never keep a finite topology open. Once the user's spouts are
        exhausted and nothing is pending (held acks need their commit first), it is done."""
        return True

    def close(self) -> None:
        store = getattr(self, "store", None)
        if store is not None:
            release_store(store)
            self.store = None

    def _progress(self, conf: dict[str, Any], context: Any) -> KeyValueState | None:
        """Where the progress is saved: the state store, or nowhere under several workers."""
        if conf.get(TOPOLOGY_WORKERS, 1) > 1:
            self.store = None
            return None
        store = self.store = open_store(conf)
        ns = f"{context.topology_name}/{context.component_id}-{context.task_id}"
        return KeyValueState(store, ns)

    def _save(self, state: CheckpointState) -> CheckpointState:
        if self.saved is not None:
            self.saved.put(TX_STATE_KEY, [state.txid, state.state])
            self.saved.commit()
        self.current = state
        return state
