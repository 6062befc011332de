"""How ``create_topology`` wires checkpointing into a topology with a stateful bolt.

Storm's ``TopologyBuilder``: add the checkpoint spout; wrap each ``StatefulBolt`` in a
``StatefulBoltExecutor`` and every other bolt in a ``CheckpointForwarder``; subscribe each
bolt, with an all grouping, to the ``$checkpoint`` stream of each component it reads from
(the checkpoint spout standing in for the topology's spouts). A topology without a stateful
bolt is returned unchanged.
"""

from __future__ import annotations

import dataclasses
import functools

from engine.components import BasicBolt, Bolt
from engine.state.bolt import StatefulBolt
from engine.state.checkpoint import CHECKPOINT_COMPONENT, CHECKPOINT_STREAM, CheckpointSpout
from engine.state.executor import wrap_for_checkpoints
from engine.state.partitioned_executor import keyed_executor
from engine.topology import ComponentDraft, Subscription

__all__ = ["wire_checkpoints"]


def wire_checkpoints(defs: list[ComponentDraft]) -> list[ComponentDraft]:
    """``defs`` with checkpointing wired in, if any bolt is stateful (new definitions)."""
    if not any(isinstance(d.obj, StatefulBolt) for d in defs if not d.is_spout):
        return defs
    spouts = {d.id for d in defs if d.is_spout}
    out = [ComponentDraft(CHECKPOINT_COMPONENT, CheckpointSpout(), True, 1, 1)]
    for d in defs:
        if d.is_spout:
            out.append(d)
            continue
        obj = d.obj
        if not isinstance(obj, Bolt | BasicBolt):
            out.append(d)  # create_topology names the problem
            continue
        stateful = isinstance(obj, StatefulBolt)
        wrapped = wrap_for_checkpoints(obj, stateful)
        if stateful:
            # Under topology.workers > 1 the engine asks for the per-partition executor.
            wrapped.keyed = functools.partial(keyed_executor, obj)  # type: ignore[attr-defined]
        inputs = list(d.inputs)
        for source in dict.fromkeys(s.source for s in d.inputs):
            src = CHECKPOINT_COMPONENT if source in spouts else source
            sub = Subscription(src, CHECKPOINT_STREAM, "all")
            if sub not in inputs:
                inputs.append(sub)
        out.append(dataclasses.replace(d, obj=wrapped, inputs=inputs, conf=dict(d.conf)))
    return out
