"""The hot-path modules, and whether they run compiled (mypyc) or as plain Python.

``setup.py`` compiles exactly ``MODULES``. A compiled module shadows its ``.py`` file, so
an edit to the source does nothing until the package is installed again: ``stale()``
names such modules and importing ``engine`` warns about them. With ``STORMLOOP_PURE=1``
in the environment, ``engine`` imports its plain Python modules even where compiled
ones are installed (to profile or debug the Python, or to compare).
"""

from __future__ import annotations

import os
import sys
import warnings
from importlib.machinery import (
    BYTECODE_SUFFIXES,
    EXTENSION_SUFFIXES,
    SOURCE_SUFFIXES,
    FileFinder,
    SourceFileLoader,
    SourcelessFileLoader,
)
from pathlib import Path

__all__ = ["MODULES", "compiled", "prefer_source", "stale", "warn_if_stale"]

# Everything a tuple passes through between a spout's emit and its ack; this module
# imports nothing from the engine so that setup.py can read the list before install.
MODULES = (
    "engine.acker",
    "engine.collector",
    "engine.executor",
    "engine.grouping",
    "engine.queues",
    "engine.stats",
    "engine.timer_wheel",
    "engine.tuples",
)


def _is_extension(path: str) -> bool:
    return any(path.endswith(suffix) for suffix in EXTENSION_SUFFIXES)


def compiled() -> bool:
    """True when every hot-path module was loaded from a compiled extension."""
    return all(_is_extension(getattr(sys.modules.get(m), "__file__", "") or "")
               for m in MODULES)


def stale(directory: Path | None = None) -> list[str]:
    """Hot-path modules whose ``.py`` source is newer than their compiled file in
    ``directory`` (default: the installed package's own)."""
    here = directory if directory is not None else Path(__file__).parent
    out = []
    for name in MODULES:
        stem = name.rsplit(".", 1)[1]
        # The module's own file, and the library that holds the code of every module.
        built = [here / (base + suffix) for base in (stem, "_hotpath__mypyc")
                 for suffix in EXTENSION_SUFFIXES]
        times = [p.stat().st_mtime for p in built if p.exists()]
        source = here / (stem + ".py")
        if times and source.exists() and source.stat().st_mtime > max(times):
            out.append(name)
    return out


def prefer_source() -> bool:
    """Under ``STORMLOOP_PURE=1``, make the engine package import ``.py`` files only.

    Must run before the hot-path modules are imported; returns whether it took effect.
    """
    if not os.environ.get("STORMLOOP_PURE"):
        return False
    here = str(Path(__file__).parent)
    sys.path_importer_cache[here] = FileFinder(
        here, (SourceFileLoader, SOURCE_SUFFIXES), (SourcelessFileLoader, BYTECODE_SUFFIXES))
    return True


def warn_if_stale() -> None:
    """Warn, once per import of ``engine``, about compiled modules older than their source
    (unless ``STORMLOOP_PURE`` runs the sources)."""
    old = [] if os.environ.get("STORMLOOP_PURE") else stale()
    if old:
        warnings.warn(f"compiled {', '.join(old)} older than the source: edits to it are not "
                      f"running; install again (pip install -e .) or set STORMLOOP_PURE=1 "
                      f"when installing to run plain Python", RuntimeWarning, stacklevel=2)
