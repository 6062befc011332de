"""Build: the engine's hot-path modules are compiled to C extensions with mypyc.

The same modules stay importable as plain Python: ``STORMLOOP_PURE=1 pip install -e .``
skips the compilation (for a machine without a C compiler, or to profile the Python).
Compiled modules shadow their ``.py`` files, so after editing one of them, install again
(importing ``engine`` warns when a compiled module is older than its source).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from setuptools import setup


def hot_path() -> list[str]:
    """The source files of ``engine.hotpath.MODULES``, read without importing ``engine``."""
    spec = importlib.util.spec_from_file_location("hotpath", Path("engine/hotpath.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return [name.replace(".", "/") + ".py" for name in module.MODULES]


def remove_compiled() -> None:
    """Delete compiled hot-path modules left in the tree, which would shadow the sources."""
    for path in Path("engine").iterdir():
        stem = path.name.split(".", 1)[0]
        if path.name != stem + ".py" and stem in {*HOT_PATH_STEMS, "_hotpath__mypyc"} \
                and path.suffix in {".so", ".pyd"}:
            path.unlink()


def ext_modules() -> list:
    """The mypyc extensions, or none when ``STORMLOOP_PURE`` is set."""
    if os.environ.get("STORMLOOP_PURE"):
        remove_compiled()
        return []
    from mypyc.build import mypycify

    return mypycify(hot_path(), opt_level="3", group_name="engine._hotpath")


HOT_PATH_STEMS = {Path(p).stem for p in hot_path()}

setup(ext_modules=ext_modules())
