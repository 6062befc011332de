"""The hot-path modules, and whether they run compiled (mypyc) or as plain Python.

``setup.py`` compiles exactly ``MODULES`` and leaves ``BUILD_NOTE`` beside them saying
why it did not, when it did not; ``build_state()`` reads it, and importing ``engine``
warns once when the plain modules run without ``STORMLOOP_PURE`` having asked for them.
A compiled module shadows its ``.py`` file, so an edit to the source does nothing until
the package is installed again: ``stale()`` names such modules and importing ``engine``
warns about them. With ``STORMLOOP_PURE=1`` in the environment, ``engine`` imports its
plain Python modules even where compiled ones are installed (to profile or debug the
Python, or to compare).
"""

from __future__ import annotations

import importlib
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

__all__ = [
    "BUILD_NOTE",
    "HOW_TO_COMPILE",
    "MODULES",
    "PlainBuildWarning",
    "build_state",
    "compiled",
    "is_extension",
    "prefer_source",
    "pure_requested",
    "stale",
    "warn_if_plain",
    "warn_if_stale",
]

# Everything a tuple passes through between a spout's emit and its ack, and the key hash a
# Kafka bolt runs per record; this module imports nothing from the engine so that setup.py
# can read the list before install.
MODULES = (
    "engine.acker",
    "engine.acker_executor",
    "engine.bolt_executor",
    "engine.collector",
    "engine.deadlines",
    "engine.grouping",
    "engine.murmur2",
    "engine.outbox",
    "engine.queues",
    "engine.routing",
    "engine.spout_collector",
    "engine.spout_executor",
    "engine.stats",
    "engine.tuples",
)


def is_extension(path: str) -> bool:
    """True when ``path`` names a compiled extension module on this interpreter."""
    return any(path.endswith(suffix) for suffix in EXTENSION_SUFFIXES)


def compiled() -> bool:
    """True when every hot-path module is (imported, if need be, and) loaded from a
    compiled extension."""
    return all(is_extension(getattr(importlib.import_module(m), "__file__", "") or "")
               for m in MODULES)


def pure_requested() -> bool:
    """True when ``STORMLOOP_PURE`` asks for plain Python (set, and not empty or ``0``)."""
    return os.environ.get("STORMLOOP_PURE", "") not in ("", "0")


def stale(directory: Path | None = None) -> list[str]:
    """Hot-path modules whose ``.py`` source is newer than their compiled file in
    ``directory`` (default: the package's own, when it lives in its source tree).

    Only a source tree is checked: an installer writes a wheel's files in any order and
    stamps them with the time it wrote them, so there file times say nothing.
    """
    if directory is None:
        directory = Path(__file__).parent
        if not (directory.parent / "setup.py").exists():
            return []
    out = []
    for name in MODULES:
        stem = name.rsplit(".", 1)[1]
        # The module's own file, and the library that holds the code of every module.
        built = [directory / (base + suffix) for base in (stem, "_hotpath__mypyc")
                 for suffix in EXTENSION_SUFFIXES]
        times = [p.stat().st_mtime for p in built if p.exists()]
        source = directory / (stem + ".py")
        if times and source.exists() and source.stat().st_mtime > max(times):
            out.append(name)
    return out


def prefer_source() -> bool:
    """When ``pure_requested()``, make the engine package import ``.py`` files only.

    Must run while ``engine`` is being imported, before any hot-path module is; returns
    whether it took effect.
    """
    if not pure_requested():
        return False
    package = sys.modules.get("engine")
    # The import system looks a package's submodules up by the entries of its __path__,
    # as written there (not resolved), so the source-only finder goes under each of them.
    for entry in getattr(package, "__path__", None) or [str(Path(__file__).parent)]:
        sys.path_importer_cache[entry] = FileFinder(
            entry, (SourceFileLoader, SOURCE_SUFFIXES), (SourcelessFileLoader, BYTECODE_SUFFIXES))
    return True


def warn_if_stale() -> None:
    """Warn, once per import of ``engine``, about compiled modules older than their source
    (unless ``STORMLOOP_PURE`` runs the sources)."""
    old = [] if pure_requested() else stale()
    if old:
        warnings.warn(f"compiled {', '.join(old)} older than the source: edits to it are not "
                      f"running; install again (pip install -e .) or set STORMLOOP_PURE=1 "
                      f"to run plain Python", RuntimeWarning, stacklevel=2)


BUILD_NOTE = "_build_note.txt"
"""The file (in the package) where the build says why it installed the plain modules."""

HOW_TO_COMPILE = ("For the compiled ones (the word count runs 1.1 to 1.5 times faster), "
                  "install a C compiler and the Python headers (Debian: apt-get install gcc "
                  "python3-dev) and install stormloop again; pip install -v shows the "
                  "compile. STORMLOOP_PURE=1 runs the plain ones without this warning")


class PlainBuildWarning(RuntimeWarning):
    """The engine runs its plain Python hot path although nobody asked for it."""


def _note(directory: Path | None = None) -> str | None:
    path = (directory or Path(__file__).parent) / BUILD_NOTE
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def build_state() -> tuple[bool, str]:
    """``(compiled, why)``: whether the hot path runs compiled, and the reason in words."""
    if pure_requested():
        return False, "STORMLOOP_PURE is set: the plain Python modules, as asked"
    if compiled():
        old = stale()
        return True, ("C extensions built with mypyc" + (
            f"; older than their source: {', '.join(old)}" if old else ""))
    note = _note()
    return False, note or ("no compiled modules are installed: the install found no working "
                           "C compiler, its compile failed, or STORMLOOP_PURE was set")


def warn_if_plain() -> None:
    """Warn, once per import of ``engine``, when the plain modules run unasked."""
    if pure_requested() or compiled():
        return
    _, why = build_state()
    warnings.warn(f"stormloop runs its plain Python hot path: {why}. {HOW_TO_COMPILE}",
                  PlainBuildWarning, stacklevel=3)
