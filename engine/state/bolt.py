"""``StatefulBolt``: a bolt whose state is checkpointed and restored across restarts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.components import Bolt

if TYPE_CHECKING:
    from engine.state.kv import KeyValueState

__all__ = ["StatefulBolt"]


class StatefulBolt(Bolt):
    """A ``Bolt`` with checkpointed state (at least once, as Storm's ``IStatefulBolt``).

    ``init_state(state)`` is called once per task, after ``prepare`` and before the first
    ``execute``, with the state as of the last committed checkpoint (empty the first time).
    Tuples arriving before it wait. The bolt acks as usual, but each ack is held until the
    checkpoint that covers it commits, and a rollback fails the held tuples (they replay);
    so after a crash the state misses nothing, and at most the tuples processed after the
    last commit are counted again. Every emit must be anchored: unanchored ones raise.

    Optional hooks, called with the checkpoint's txid before the state's own step:
    ``pre_prepare(txid)``, ``pre_commit(txid)``, ``pre_rollback()``. Every method may be
    ``def`` or ``async def``.
    """

    def init_state(self, state: KeyValueState) -> Any:
        """Receive the task's state; called once before the first ``execute``."""

    def pre_prepare(self, txid: int) -> Any:
        """Called before the state prepares checkpoint ``txid``."""

    def pre_commit(self, txid: int) -> Any:
        """Called before the state commits checkpoint ``txid``."""

    def pre_rollback(self) -> Any:
        """Called before the state rolls back to its last commit."""
