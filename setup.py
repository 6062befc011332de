"""Build: the engine's hot-path modules are compiled to C extensions with mypyc.

The same modules stay importable as plain Python: ``STORMLOOP_PURE=1 pip install -e .``
skips the compilation (for a machine without a C compiler, or to profile the Python).
Compiled modules shadow their ``.py`` files, so after editing one of them, install again
(importing ``engine`` warns when a compiled module is older than its source).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from setuptools import setup


def load_hotpath() -> Any:
    """``engine/hotpath.py``, loaded without importing ``engine`` (not installed yet)."""
    spec = importlib.util.spec_from_file_location("hotpath", Path("engine/hotpath.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def remove_compiled(hotpath: Any) -> None:
    """Delete compiled modules left in the package, which would shadow the sources."""
    for path in Path("engine").iterdir():
        if hotpath.is_extension(path.name):
            path.unlink()


def ext_modules() -> list[Any]:
    """The mypyc extensions, or none when ``STORMLOOP_PURE`` asks for plain Python."""
    hotpath = load_hotpath()
    if hotpath.pure_requested():
        remove_compiled(hotpath)
        return []
    from mypyc.build import mypycify

    sources = [name.replace(".", "/") + ".py" for name in hotpath.MODULES]
    return mypycify(sources, opt_level="3", group_name="engine._hotpath")


setup(ext_modules=ext_modules())
