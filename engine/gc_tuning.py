"""Keep the cyclic garbage collector off the hot path.

Tuples are acyclic and die young, yet every full collection walks every tracked object
the process holds (modules, functions, the user's data): tens of milliseconds that land
on whichever tuples are in flight. ``freeze_startup_objects`` moves what exists now into
the permanent generation, so collections only scan what was created since. The command
line runner calls it after submitting; an embedding service may call it after its own
start-up (it is process-wide, so the choice is the service's).
"""

from __future__ import annotations

import gc

__all__ = ["freeze_startup_objects"]


def freeze_startup_objects() -> None:
    """Collect once, then exempt every surviving object from future collections."""
    gc.collect()
    gc.freeze()
