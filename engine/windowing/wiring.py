"""How ``create_topology`` puts a windowed bolt into its executor (Storm's ``setBolt``
overloads for ``IWindowedBolt`` and ``IStatefulWindowedBolt``)."""

from __future__ import annotations

import dataclasses
import functools

from engine.topology import ComponentDraft
from engine.windowing.bolt import BaseWindowedBolt
from engine.windowing.executor import windowed_executor
from engine.windowing.partitioned import PartitionedWindowsExecutor
from engine.windowing.stateful import BaseStatefulWindowedBolt, StatefulWindowedBoltExecutor

__all__ = ["wrap_windowed", "wrap_windowed_bolts"]


def wrap_windowed(d: ComponentDraft) -> ComponentDraft:
    """``d`` unchanged, or a copy whose bolt is the windowing executor around the user's."""
    if d.is_spout or not isinstance(d.obj, BaseWindowedBolt):
        return d
    obj: object
    if isinstance(d.obj, BaseStatefulWindowedBolt):
        stateful = StatefulWindowedBoltExecutor(d.obj, d.id)
        # Behind a repartition hop (topology.workers > 1): a window per input partition.
        stateful.per_partition = functools.partial(PartitionedWindowsExecutor, stateful)
        obj = stateful
    else:
        obj = windowed_executor(d.id, d.obj)
    return dataclasses.replace(d, obj=obj, inputs=list(d.inputs), conf=dict(d.conf))


def wrap_windowed_bolts(defs: list[ComponentDraft]) -> list[ComponentDraft]:
    """Every draft through ``wrap_windowed``."""
    return [wrap_windowed(d) for d in defs]
