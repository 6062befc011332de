"""What a partition's restore and a changelog write report to the executor."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Restored", "Written"]


@dataclass(frozen=True)
class Restored:
    """A restore's figures: change records ``applied`` and ``skipped`` (their tuples will
    be read again), ``read`` records in all, ``secs``, and whether it went on from the
    state this host held (``delta``) rather than from the changelog's beginning."""

    applied: int
    skipped: int
    read: int
    secs: float
    delta: bool


@dataclass(frozen=True)
class Written:
    """Where one partition's changelog stands after a confirmed write: the records'
    lowest input offset bound (``first``), the offset after them (``next_offset``), and
    the marker written (``(committed, covered)``, None if none)."""

    first: int
    next_offset: int
    marker: tuple[int, int] | None
