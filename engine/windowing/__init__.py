"""Windowed bolts with Storm 2's semantics (``engine.windowing``).

A ``BaseWindowedBolt`` subclass implements ``execute(window)``; the chained ``with_*``
methods choose sliding or tumbling windows by ``Count`` or ``Duration``, in processing time
or event time. Emits from ``execute(window)`` are anchored to the window's tuples; a tuple
is acked when it expires from the window. ``BaseStatefulWindowedBolt`` adds checkpointed
state and a message-id field so that a restarted topology does not re-fire its windows.
"""

from engine.topology import register_transform
from engine.windowing.bolt import BaseWindowedBolt, TupleWindow
from engine.windowing.late import LATE_TUPLE_FIELD, DetachedTuple
from engine.windowing.spec import Count, Duration
from engine.windowing.stateful import BaseStatefulWindowedBolt
from engine.windowing.wiring import wrap_windowed_bolts

__all__ = [
    "LATE_TUPLE_FIELD",
    "BaseStatefulWindowedBolt",
    "BaseWindowedBolt",
    "Count",
    "DetachedTuple",
    "Duration",
    "TupleWindow",
]

# Before checkpointing is wired in: a stateful window's executor is a stateful bolt.
register_transform("windowing", 10, wrap_windowed_bolts)
