"""The build backend: setuptools', asking for mypy only when the hot path will compile.

``pip install`` puts the build requirements in a fresh environment first; mypy (with
mypyc) is the largest of them and only compiles. It is not asked for when
``STORMLOOP_PURE`` is set, when no C compiler works (the install falls back to the plain
Python modules, see ``setup.py``), or when an editable install finds its compiled
modules up to date. ``setup.py`` uses the same helpers.
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tempfile
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - every hook not redefined here

MYPYC = ["mypy==2.4.1"]
GROUP = "engine._hotpath"


def load_hotpath() -> Any:
    """``engine/hotpath.py``, loaded without importing ``engine`` (not installed yet)."""
    spec = importlib.util.spec_from_file_location("hotpath", Path("engine/hotpath.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def say(line: str) -> None:
    """Print a build line where the user sees it: pip hides a build's own output, so the
    line goes to the terminal as well when there is one."""
    print(line, file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        return
    try:
        with open("/dev/tty", "w") as tty:
            tty.write(line + "\n")
    except OSError:
        pass


def in_place_targets(hotpath: Any) -> list[Path]:
    """Where an editable install puts the compiled modules (shared library first)."""
    suffix = EXTENSION_SUFFIXES[0]
    names = [f"{GROUP}__mypyc", *hotpath.MODULES]
    return [Path(name.replace(".", "/") + suffix) for name in names]


def in_place_up_to_date(hotpath: Any) -> bool:
    """Every compiled module is in the source tree and newer than every input of the build."""
    inputs = [Path(m.replace(".", "/") + ".py") for m in hotpath.MODULES]
    inputs += [Path("setup.py"), Path("engine/hotpath.py"),
               *Path(__file__).parent.glob("*.py")]
    newest = max(p.stat().st_mtime for p in inputs if p.exists())
    targets = in_place_targets(hotpath)
    return all(t.exists() and t.stat().st_mtime >= newest for t in targets)


def compiler_problem(name: str | None = None) -> str | None:
    """None when the C compiler builds a trivial file, else what went wrong."""
    from setuptools._distutils.ccompiler import new_compiler
    from setuptools._distutils.sysconfig import customize_compiler

    program = "the C compiler"
    try:
        compiler = new_compiler(compiler=name, force=True)
        customize_compiler(compiler)
        program = repr(getattr(compiler, "compiler_so", [program])[0])
        with tempfile.TemporaryDirectory() as tmp:
            source = Path(tmp, "probe.c")
            source.write_text("int probe(void) { return 0; }\n")
            compiler.compile([str(source)], output_dir=tmp)
    except Exception as exc:
        status = re.search(r"exit (?:status|code) (\d+)", str(exc))
        if status:
            return f"{program} exited with status {status.group(1)} on a one-line C file"
        if "No such file or directory" in str(exc):
            return f"{program} not found"
        detail = (str(exc).strip().splitlines() or ["failed"])[-1][:200]
        return f"{program}: {type(exc).__name__}: {detail}"
    return None


def _mypyc_if_compiling(editable: bool) -> list[str]:
    hotpath = load_hotpath()
    if hotpath.pure_requested():
        return []
    if editable and in_place_up_to_date(hotpath):
        return []
    if compiler_problem() is not None:
        return []  # setup.py says why and installs the plain Python modules
    return MYPYC


def get_requires_for_build_wheel(config_settings: Any = None) -> list[str]:
    """setuptools' requirements, and mypy when the hot path will compile."""
    return [*_setuptools.get_requires_for_build_wheel(config_settings),
            *_mypyc_if_compiling(editable=False)]


def get_requires_for_build_editable(config_settings: Any = None) -> list[str]:
    """As for a wheel; also none when the compiled modules in place are up to date."""
    return [*_setuptools.get_requires_for_build_editable(config_settings),
            *_mypyc_if_compiling(editable=True)]
