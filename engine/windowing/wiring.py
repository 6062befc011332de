"""How ``create_topology`` puts a windowed bolt into its executor (Storm's ``setBolt``
overloads for ``IWindowedBolt`` and ``IStatefulWindowedBolt``)."""

from __future__ import annotations

import dataclasses
import functools
import inspect

from engine.topology import ComponentDraft
from engine.windowing.async_executor import AsyncWindowedBoltExecutor
from engine.windowing.bolt import BaseWindowedBolt
from engine.windowing.executor import WindowedBoltExecutor
from engine.windowing.partitioned import PartitionedWindowsExecutor
from engine.windowing.stateful import BaseStatefulWindowedBolt, StatefulWindowedBoltExecutor
from engine.windowing.sync_executor import SyncWindowedBoltExecutor

__all__ = ["windowed_executor", "wrap_windowed", "wrap_windowed_bolts"]


def windowed_executor(component_id: str, bolt: BaseWindowedBolt) -> WindowedBoltExecutor:
    """The executor for ``bolt``: synchronous or not, as its ``execute`` is."""
    is_async = inspect.iscoroutinefunction(bolt.execute)
    cls = AsyncWindowedBoltExecutor if is_async else SyncWindowedBoltExecutor
    return cls(bolt, component_id)


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
