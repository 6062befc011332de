"""``CoordinatorSpout``: starts batches, orders commits, replays failures, persists progress.

Storm's ``TransactionalSpoutCoordinator``: a regular spout with one task. For each
transaction it emits one batch tuple ``(attempt, metadata, last_committed_txid)`` on the
batch stream, tracked with ``("batch", attempt)`` as msg id; when that tree is acked and
every earlier transaction committed, one commit tuple ``(attempt,)`` on the commit stream,
tracked with ``("commit", attempt)``. The status machine is ``TransactionLedger``; the
persisted part (next txid, metadata per txid) is ``TransactionalState``. Metadata is
created once per txid (``initialize_transaction``) and stored before the batch is emitted,
so a replay, in this process or after a restart, emits the same metadata.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from engine.components import Spout
from engine.config import (
    TOPOLOGY_ACKER_EXECUTORS,
    TOPOLOGY_MAX_SPOUT_PENDING,
    TOPOLOGY_SPOUT_FLOW_CONTROL,
)
from engine.errors import ConfigError
from engine.transactional.attempt import AttemptIds, TransactionAttempt
from engine.transactional.coordinated import BATCH_STREAM, COMMIT_STREAM
from engine.transactional.ledger import AckOutcome, TransactionLedger
from engine.transactional.partitioned import TRANSACTIONAL_ID
from engine.transactional.spout import TransactionalSpout
from engine.transactional.state import COORDINATOR_SCOPE, TransactionalState
from engine.usercall import awaitable

if TYPE_CHECKING:
    from engine.context import TopologyContext
    from engine.spout_collector import SpoutOutputCollector
    from engine.topology import OutputFieldsDeclarer

__all__ = ["CoordinatorSpout"]

_MISSING = object()


class CoordinatorSpout(Spout):
    """The single task that drives a transactional topology (see the module docstring)."""

    replays_failures = True
    """A failed batch is replayed until it commits: a fail is not a lost tuple."""

    def __init__(self, spout: TransactionalSpout, transactional_id: str) -> None:
        self.spout = spout
        self.transactional_id = transactional_id

    def component_configuration(self) -> dict[str, Any] | None:
        """No flow control: ``max.spout.pending`` counts transactions here, not trees."""
        return {TOPOLOGY_SPOUT_FLOW_CONTROL: False}

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        declarer.declare(["tx", "meta", "committed"], stream=BATCH_STREAM)
        declarer.declare(["tx"], stream=COMMIT_STREAM)

    async def open(self, conf: dict[str, Any], context: TopologyContext,
                   collector: SpoutOutputCollector) -> None:
        """Load the next txid from the state; at most ``max.spout.pending`` (default 1)
        transactions live at once. Raises ``ConfigError`` without ackers."""
        if conf.get(TOPOLOGY_ACKER_EXECUTORS, 1) == 0:
            raise ConfigError(f"transactional topology {self.transactional_id!r}: "
                              f"{TOPOLOGY_ACKER_EXECUTORS} must be >= 1, got 0; batches are "
                              f"tracked by the ackers")
        self._collector = collector
        self._state = TransactionalState.from_conf(conf, self.transactional_id)
        coordinator = self.spout.get_coordinator(
            {**conf, TRANSACTIONAL_ID: self.transactional_id}, context)
        self._is_ready = awaitable(coordinator, "is_ready")
        self._initialize = awaitable(coordinator, "initialize_transaction")
        self._close = awaitable(coordinator, "close", optional=True)
        finite = getattr(coordinator, "exhausted", None)
        self._source_exhausted = finite if callable(finite) else None
        max_active = conf.get(TOPOLOGY_MAX_SPOUT_PENDING) or 1
        self.ledger = TransactionLedger(self._state.next_txid(), max_active, AttemptIds().next)
        # Acks and fails may arrive while next_tuple awaits the coordinator: one at a time.
        self._turn = asyncio.Lock()

    def exhausted(self) -> bool:
        """True when the coordinator has an ``exhausted()`` that says no transaction will be
        ready again, and no transaction is live: a finite transactional topology is done."""
        finite = self._source_exhausted
        return finite is not None and bool(finite()) and not self.ledger.live()

    async def next_tuple(self) -> None:
        """Emit a due commit and start what the window allows."""
        async with self._turn:
            await self._sync()

    async def ack(self, msg_id: tuple[str, TransactionAttempt]) -> None:
        """A batch tree (now PROCESSED) or a commit tree (now committed and persisted)."""
        attempt = msg_id[1]
        async with self._turn:
            if self.ledger.ack(attempt) is AckOutcome.COMMITTED:
                self._state.commit(attempt.transaction_id)
            await self._sync()

    async def fail(self, msg_id: tuple[str, TransactionAttempt]) -> None:
        """Drop the attempt and every later live transaction; restart them in order."""
        async with self._turn:
            self.ledger.fail(msg_id[1])
            await self._sync()

    async def close(self) -> None:
        """Close the spout's coordinator half and the state."""
        try:
            await self._close()
        finally:
            self._state.close()

    async def _sync(self) -> None:
        """Emit the commit that is due, then start every startable transaction in order."""
        ledger, emit = self.ledger, self._collector.emit
        due = ledger.commit_due()
        if due is not None:
            emit([due], msg_id=("commit", due), stream=COMMIT_STREAM)
        for txid in ledger.startable():
            metadata = await self._metadata(txid)
            if metadata is _MISSING:
                break
            attempt = ledger.start(txid)
            committed = ledger.next_txid - 1 or None
            emit([attempt, metadata, committed], msg_id=("batch", attempt), stream=BATCH_STREAM)

    async def _metadata(self, txid: int) -> Any:
        """The stored metadata of ``txid``, else new metadata if the spout is ready."""
        state = self._state
        metadata = state.get(COORDINATOR_SCOPE, txid, _MISSING)
        if metadata is not _MISSING:
            return metadata
        if not await self._is_ready():
            return _MISSING
        prev = state.latest_before(COORDINATOR_SCOPE, txid)
        metadata = await self._initialize(txid, None if prev is None else prev[1])
        state.put(COORDINATOR_SCOPE, txid, metadata)
        return metadata
