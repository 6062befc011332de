"""What one replay run did, and its printed form.

Counts add up: ``read = malformed + duplicates + over_attempts + truncated + filtered +
replayed``. Nothing here touches
Spark or Kafka, so the report is tested on plain values.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from connectors.spark.reason_kinds import group

__all__ = ["REASON_KINDS", "SAMPLE_ROWS", "Malformed", "PhaseClock", "Planned", "ReplaySummary",
           "format_summary"]

SAMPLE_ROWS = 20
"""How many malformed and planned records a summary lists at most."""
REASON_KINDS = 20
"""How many kinds of reason a summary lists at most (the rest are counted in one row)."""
_REASON_WIDTH = 60


@dataclass(frozen=True, slots=True)
class Malformed:
    """A failed-topic record that is not a failed record: where it is and what is wrong."""

    partition: int
    offset: int
    error: str


@dataclass(frozen=True, slots=True)
class Planned:
    """One record to replay: its original coordinates, destination, attempts and reason."""

    topic: str
    partition: int
    offset: int
    target: str
    attempts: int
    reason: str


@dataclass(slots=True)
class ReplaySummary:
    """The outcome of one run over the failed topic's offsets ``ranges`` read by ``group_id``."""

    failed_topic: str
    group_id: str
    dry_run: bool
    read: int = 0
    malformed: int = 0
    duplicates: int = 0
    filtered: int = 0
    over_attempts: int = 0
    truncated: int = 0
    replayed: int = 0
    max_attempts: int = 5
    by_reason: dict[str, int] = field(default_factory=dict)
    by_topic: dict[tuple[str, str], int] = field(default_factory=dict)
    malformed_samples: list[Malformed] = field(default_factory=list)
    planned_samples: list[Planned] = field(default_factory=list)
    spark_startup_s: float | None = None
    in_process: bool = False
    """True when the run did its work in process, without Spark."""
    phases: dict[str, float] = field(default_factory=dict)
    elapsed_s: float = 0.0


class PhaseClock:
    """Records the seconds since the previous lap under each lap's name."""

    def __init__(self, phases: dict[str, float]) -> None:
        self.phases = phases
        self.last = time.monotonic()

    def lap(self, name: str | None = None) -> float:
        """Seconds since the previous lap, recorded under ``name`` unless it is None."""
        now = time.monotonic()
        seconds, self.last = now - self.last, now
        if name is not None:
            self.phases[name] = seconds
        return seconds


def _short(text: str, width: int = _REASON_WIDTH) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


_Row = tuple[str, int] | tuple[str, int, str]
"""A table row: label and count, and optionally an example printed under it."""


def _tables(sections: list[tuple[str, list[_Row]]]) -> list[str]:
    """Titled two-column tables sharing one label width, so the counts line up."""
    width = max((len(row[0]) for _, rows in sections for row in rows), default=0)
    lines: list[str] = []
    for title, rows in sections:
        if rows:
            lines.append(title)
            for label, count, *example in rows:
                lines.append(f"  {label:<{width}}  {count:>12,}")
                lines += [f"    e.g. {_short(text, 100)}" for text in example]
    return lines


def _reasons(by_reason: dict[str, int], verb: str) -> tuple[str, list[_Row]]:
    """The per-reason table: one row per kind of reason (``reason_kinds``), with an
    example under a kind that covers several reasons, at most ``REASON_KINDS`` rows."""
    kinds = group(by_reason)
    title = f"{verb}, per reason"
    if len(kinds) < len(by_reason):
        title += f" ({len(by_reason):,} distinct, in {len(kinds):,} kinds)"
    rows: list[_Row] = [(_short(k.label), k.count) if k.distinct == 1 else
                       (_short(k.label), k.count, k.example) for k in kinds[:REASON_KINDS]]
    rest = kinds[REASON_KINDS:]
    if rest:
        rows.append((f"{len(rest):,} more kinds", sum(k.count for k in rest)))
    return title, rows


def format_summary(s: ReplaySummary) -> str:
    """A plain-text report: totals, then per kind of reason and per topic, then samples."""
    verb = "would replay" if s.dry_run else "replayed"
    head = f"replay of {s.failed_topic!r} for group {s.group_id!r}"
    lines = [head + (" (dry run: nothing written)" if s.dry_run else ""), ""]
    topics = sorted(s.by_topic.items(), key=lambda kv: (-kv[1], kv[0]))
    skipped = [(label, n) for label, n in (
        (f"skipped: over {s.max_attempts} attempts", s.over_attempts),
        ("skipped: value truncated", s.truncated)) if n]  # listed only when they happened
    lines += _tables([
        ("totals", [("read", s.read), ("malformed", s.malformed),
                    ("duplicates dropped", s.duplicates), *skipped,
                    ("filtered out", s.filtered), (verb, s.replayed)]),
        _reasons(s.by_reason, verb),
        (f"{verb}, per topic", [(f"{src} -> {dst}", n) for (src, dst), n in topics]),
    ])
    if s.malformed_samples:
        lines.append(f"malformed records (first {len(s.malformed_samples)}, "
                     f"{s.failed_topic}[partition]@offset)")
        lines += [f"  [{m.partition}]@{m.offset}: {_short(m.error, 100)}"
                  for m in s.malformed_samples]
    if s.dry_run and s.planned_samples:
        lines.append(f"{verb} (first {len(s.planned_samples)} of {s.replayed:,})")
        lines += [f"  {p.topic}[{p.partition}]@{p.offset} -> {p.target}  attempts={p.attempts}"
                  f"  reason={_short(p.reason, 40)}" for p in s.planned_samples]
    parts = [] if s.spark_startup_s is None else [("Spark start-up", s.spark_startup_s)]
    parts += s.phases.items()
    timing = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in parts)
    if s.in_process:
        timing = "in process, no Spark" + (f": {timing}" if timing else "")
    lines.append(f"took {s.elapsed_s:.1f} s" + (f" ({timing})" if timing else ""))
    return "\n".join(lines)
