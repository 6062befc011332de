"""Output declaration: ``OutputFieldsDeclarer`` collects the streams a component declares.

Below the topology and the components (both use it), so that neither imports the other
for it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.tuples import Fields

__all__ = ["DEFAULT_STREAM", "OutputFieldsDeclarer", "StreamDef"]

DEFAULT_STREAM = "default"


@dataclass(frozen=True, slots=True)
class StreamDef:
    """A declared output stream: its fields and whether it is a direct stream."""

    fields: Fields
    direct: bool = False


class OutputFieldsDeclarer:
    """Collects ``declare(fields, stream="default", direct=False)`` calls."""

    def __init__(self) -> None:
        self.streams: dict[str, StreamDef] = {}

    def declare(self, fields: Iterable[str] | Fields, stream: str = DEFAULT_STREAM,
                direct: bool = False) -> None:
        """Declare ``stream`` with ``fields``; a direct stream is only sent with emit_direct."""
        if isinstance(fields, str):
            raise TypeError(f"fields must be a list of names, got the string {fields!r}")
        self.streams[stream] = StreamDef(Fields(fields), direct)

    def declare_stream(self, stream: str, fields: Iterable[str] | Fields,
                       direct: bool = False) -> None:
        """Storm's ``declareStream(stream, fields)`` spelling of ``declare``."""
        self.declare(fields, stream, direct)
