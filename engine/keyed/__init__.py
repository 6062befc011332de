"""Keyed work across processes: fields groupings carried through the input's own system
(``hops.py``), so that one key's tuples meet in one process however many run; what a
process runs, as the members of its consumer groups compare it (``fingerprint.py``)."""

from engine.keyed.fingerprint import (
    FingerprintedMember,
    TopologyFingerprint,
    differences,
    fingerprint,
    give_fingerprint,
)
from engine.keyed.hops import KeyedSource, hop_sources, reader_id, with_hops, writer_id

__all__ = ["FingerprintedMember", "KeyedSource", "TopologyFingerprint", "differences",
           "fingerprint", "give_fingerprint", "hop_sources", "reader_id", "with_hops",
           "writer_id"]
