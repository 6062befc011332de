"""A CPU-bound stateful topology for ``scripts/bench_keyed.py``: the stateful word count
whose count bolt also spends ``bench.cpu.rounds`` rounds of arithmetic per word (default
3000, about 0.1 ms), so that one process is limited by its core.

    python -m engine run scripts/stateful_cpu_topology.py --workers 2 --conf ...
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The imports below need the path set above.
from engine import Config, Topology
from topologies import stateful_word_count as base

CONF: dict[str, Any] = {**base.CONF, "bench.cpu.rounds": 3000}


class BusyCount(base.StatefulWordCount):
    """The stateful count, with ``rounds`` rounds of arithmetic per word first."""

    def __init__(self, rounds: int) -> None:
        self.rounds = rounds

    def execute(self, tup: Any) -> None:
        x = 0
        for i in range(self.rounds):
            x = (x * 31 + i) & 0xFFFF
        super().execute(tup)


def build(conf: Config) -> Topology:
    """The stateful word count with a busy count bolt."""
    return base.build(conf, BusyCount(int(conf["bench.cpu.rounds"])))
