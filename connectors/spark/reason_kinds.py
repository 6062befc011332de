"""Failure reasons grouped by kind, for the replay summary.

Reasons that differ only in their values (``ValueError: bad amount 17 at offset 1034``,
``... 18 at offset 1035``) are one kind: ``kind`` replaces what varies from record to
record (numbers, quoted text, dates, hexadecimal ids and UUIDs) with a placeholder and keeps the
rest (the exception type, the words of the message). ``group`` sums the counts per kind
and keeps, for each, its most frequent reason as the example. Plain Python, no Spark.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["ReasonKind", "group", "kind"]

_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12}\b")
_TIME = re.compile(r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                   r"(?:Z|[+-]\d{2}:?\d{2})?)?(?![\w:])")
_HEX = re.compile(r"\b(?:0x[0-9a-fA-F]+|(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,})\b")
# A number standing on its own: not a digit of a word such as utf-8, int64 or v2.
_NUMBER = re.compile(r"(?<![\w.-])[-+]?\d+(?:[.,:]\d+)*(?:[eE][-+]?\d+)?(?![\w-])")


def kind(reason: str) -> str:
    """``reason``'s first line with its variable parts replaced: quoted text by ``'…'``,
    dates and times by ``<time>``, UUIDs and hexadecimal ids by ``<id>``, numbers by
    ``<n>``; whitespace collapsed."""
    line = reason.strip().split("\n", 1)[0]
    line = _QUOTED.sub("'…'", line)
    line = _TIME.sub("<time>", line)
    line = _UUID.sub("<id>", line)
    line = _HEX.sub("<id>", line)
    line = _NUMBER.sub("<n>", line)
    return " ".join(line.split())


@dataclass(frozen=True, slots=True)
class ReasonKind:
    """One kind of reason: its label, how many records had it, how many distinct reasons
    it covers, and one of them (the most frequent; the first in order on a tie)."""

    label: str
    count: int
    distinct: int
    example: str


def group(by_reason: Mapping[str, int]) -> list[ReasonKind]:
    """The kinds of ``by_reason`` (reason -> records), most records first, then by label."""
    kinds: dict[str, tuple[int, int, str, int]] = {}  # label -> count, distinct, example, n
    for reason, n in by_reason.items():
        label = kind(reason)
        count, distinct, example, most = kinds.get(label, (0, 0, reason, -1))
        if n > most or (n == most and reason < example):
            example, most = reason, n
        kinds[label] = (count + n, distinct + 1, example, most)
    out = [ReasonKind(label, count, distinct, example)
           for label, (count, distinct, example, _) in kinds.items()]
    return sorted(out, key=lambda k: (-k.count, k.label))
