"""The user's building blocks: ``Spout``, ``Bolt`` and ``BasicBolt``.

Every user method may be ``def`` or ``async def``; ``engine.usercall`` decides which once,
when a task starts, so the hot loops do not inspect each call's result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.collector import BasicOutputCollector, OutputCollector
    from engine.context import TopologyContext
    from engine.declarer import OutputFieldsDeclarer
    from engine.spout_collector import SpoutOutputCollector
    from engine.tuples import Tuple

__all__ = ["BasicBolt", "Bolt", "Component", "Spout"]


class Component:
    """What spouts and bolts share: output declaration and per-component configuration."""

    def declare_output_fields(self, declarer: OutputFieldsDeclarer) -> None:
        """Declare the streams this component emits (default: none)."""

    def component_configuration(self) -> dict[str, Any] | None:
        """Configuration merged over the topology's for this component's tasks."""
        return None


class Spout(Component):
    """A source of tuples.

    ``next_tuple`` is called repeatedly while the spout is active and not at
    ``topology.max.spout.pending``. For a tuple emitted with a ``msg_id``, exactly one of
    ``ack(msg_id)`` or ``fail(msg_id)`` is later called on the same task, at most once,
    never after ``close``. A subclass with a plain ``ack`` may define a plain
    ``ack_many(msg_ids)``: it is then called instead of ``ack`` with each run of acks that
    arrive together, in order, cut before any fail of the task (docs/components.md).
    """

    def open(self, conf: dict[str, Any], context: TopologyContext,
             collector: SpoutOutputCollector) -> Any:
        """Called once per task before the first ``next_tuple``."""

    def next_tuple(self) -> Any:
        """Emit zero or more tuples; emitting none makes the executor back off briefly.

        A ``def`` one should return promptly: while it runs, acks, fails and timeouts wait
        for this task. An ``async`` one may wait for input: while it is suspended at an
        ``await``, this task's ``ack`` and ``fail`` are called for the outcomes that arrive
        (never two of those at once), so state they share with ``next_tuple`` across an
        ``await`` needs guarding (an ``asyncio.Lock``, say). No other user methods overlap.
        """

    def ack(self, msg_id: Any) -> Any:
        """The tree of the tuple emitted with ``msg_id`` was fully processed."""

    def fail(self, msg_id: Any) -> Any:
        """The tree of ``msg_id`` failed or timed out; replay it if the source can.

        Declared as ``fail(self, msg_id, reason)`` it is called with ``reason=`` an
        ``engine.FailReason`` saying why (decided once per task at start-up).
        """

    def activate(self) -> Any:
        """Called when the spout becomes active (after ``open``)."""

    def deactivate(self) -> Any:
        """Called when the topology stops calling ``next_tuple`` (kill, drain)."""

    def close(self) -> Any:
        """Called once per task at shutdown; no ``ack``/``fail`` follows."""


class Bolt(Component):
    """A processing step with full control: anchor, ack and fail explicitly.

    Any exception escaping ``execute`` (``FailedException`` included) fails the input tuple,
    is counted as an error of the component and logged; the executor keeps running.
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext,
                collector: OutputCollector) -> Any:
        """Called once per task before the first ``execute``."""

    def execute(self, tup: Tuple) -> Any:
        """Process one tuple; ack or fail it through the collector."""

    def cleanup(self) -> Any:
        """Called once per task at shutdown."""


class BasicBolt(Component):
    """A bolt whose emits are anchored to the input and whose input is acked on return.

    Raising ``FailedException`` fails the input tuple; any other exception fails it too and
    is reported as an error.
    """

    def prepare(self, conf: dict[str, Any], context: TopologyContext) -> Any:
        """Called once per task before the first ``execute``."""

    def execute(self, tup: Tuple, collector: BasicOutputCollector) -> Any:
        """Process one tuple; ``collector.emit`` anchors to it automatically."""

    def cleanup(self) -> Any:
        """Called once per task at shutdown."""
