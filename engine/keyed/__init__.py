"""Keyed work across processes: fields groupings carried through the input's own system
(``hops.py``), so that one key's tuples meet in one process however many run."""

from engine.keyed.hops import KeyedSource, hop_sources, reader_id, with_hops, writer_id

__all__ = ["KeyedSource", "hop_sources", "reader_id", "with_hops", "writer_id"]
