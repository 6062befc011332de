"""Build: the engine's hot-path modules are compiled to C extensions with mypyc.

The same modules stay importable as plain Python. ``STORMLOOP_PURE=1 pip install -e .``
skips the compilation; so does a machine without a working C compiler, or a compilation
that fails: the install then finishes with the plain Python modules and says so.
Compiled modules shadow their ``.py`` files, so after editing one of them, install again
(importing ``engine`` warns when a compiled module is older than its source); an editable
install with nothing changed reuses the compiled modules in the source tree.

mypyc runs once, only when extensions are built (not while pip asks for metadata). Its
runtime library compiles as one C file while mypyc analyses the engine; the C files it
writes, one per module, compile packed into one file per core, side by side
(``build_support/parallel_compile.py``), at ``-O2`` without debug information: on two
cores that halves the compile time of one large file at ``-O3``, and the word count runs
as fast (measured with ``scripts/bench.py``). ``-O1`` would take a third less compiler
time but runs the word count 2 to 4 % slower (``scripts/bench_wordcount.py``).
``scripts/bench_install.py`` times the whole install.
"""

from __future__ import annotations

import sys

if sys.version_info < (3, 11):  # noqa: UP036 - the point is to say so before anything fails
    sys.exit(f"stormloop requires Python 3.11 or newer; this is Python "
             f"{sys.version_info[0]}.{sys.version_info[1]} ({sys.executable})")

import gc
import os
import time
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, str(Path(__file__).resolve().parent / "build_support"))
from parallel_compile import ParallelCompile  # found through the path entry above
from stormloop_build import (
    GROUP,
    compiler_problem,
    in_place_targets,
    in_place_up_to_date,
    load_hotpath,
    say,
)

# multi_file mypyc writes the group's header under build/engine
GROUP_INCLUDE = str(Path("build", *GROUP.split(".")[:-1]))
PURE_COST = ("the plain Python hot path runs the word count 1.1 to 1.5 times slower "
             "(the most without ackers); set STORMLOOP_PURE=1 to skip compiling on purpose")


def remove_compiled(hotpath: Any) -> None:
    """Delete compiled modules left in the package, which would shadow the sources."""
    for path in Path("engine").iterdir():
        if hotpath.is_extension(path.name):
            path.unlink()


def leave_note(hotpath: Any, package_dir: Path, why: str | None) -> None:
    """Say in the package why the install has the plain modules (``hotpath.build_state``
    reads it), or remove an earlier note when it has the compiled ones."""
    note = package_dir / hotpath.BUILD_NOTE
    if why is None:
        note.unlink(missing_ok=True)
    elif package_dir.is_dir():
        note.write_text(f"the install used the plain modules: {why}\n", encoding="utf-8")


def planned_extensions(hotpath: Any) -> list[Extension]:
    """The extensions' names, without running mypyc: the shared library of the group and
    one small module per hot-path module. ``BuildHotPath`` fills in the sources."""
    return [Extension(f"{GROUP}__mypyc", [])] + [Extension(m, []) for m in hotpath.MODULES]


class BuildHotPath(build_ext):
    """Compiles the hot path, or falls back to plain Python with a warning."""

    def run(self) -> None:
        hotpath = load_hotpath()
        if self.inplace and in_place_up_to_date(hotpath):
            say("stormloop: compiled hot path is up to date (nothing to compile)")
            return
        problem = compiler_problem(self.compiler if isinstance(self.compiler, str) else None)
        if problem is not None:
            self._fall_back(hotpath, f"no working C compiler ({problem})")
            return
        names = ", ".join(m.rsplit(".", 1)[1] for m in hotpath.MODULES)
        say(f"stormloop: compiling the hot path with mypyc ({names}); this takes about "
            f"10 s on two cores, longer on a busy machine. To skip it: STORMLOOP_PURE=1 "
            f"pip install ...")
        started = time.monotonic()
        self._hotpath = hotpath
        try:
            super().run()  # sets up the compiler, then build_extensions below
        except (Exception, SystemExit) as exc:  # mypyc exits on type errors
            self._fall_back(hotpath, f"compilation failed: {type(exc).__name__}: {exc}")
            return
        leave_note(hotpath, self._package_dir(), None)
        if self.inplace:
            # setuptools relinks only what changed and copies the rest with its old time:
            # the modules in place are now the sources' build, and must say so to stale().
            for target in in_place_targets(hotpath):
                if target.exists():
                    target.touch()
        say(f"stormloop: compiled the hot path in {time.monotonic() - started:.1f} s")

    def _package_dir(self) -> Path:
        """Where the built ``engine`` package is: the source tree in place, else build_lib."""
        return Path("engine") if self.inplace else Path(self.build_lib, "engine")

    def build_extensions(self) -> None:
        from mypyc.build import get_cflags, include_dir, mypycify
        from mypyc.common import RUNTIME_C_FILES

        compile_one = self.compiler.compile
        cflags = get_cflags(compiler_type=self.compiler.compiler_type, opt_level="2",
                            debug_level="0", multi_file=True)
        plan = ParallelCompile(compile_one, RUNTIME_C_FILES, Path("build", "mypyc_runtime.c"),
                               Path("build"), {"output_dir": self.build_temp, "macros": [],
                                               "include_dirs": [include_dir(), "build",
                                                                GROUP_INCLUDE],
                                               "debug": self.debug, "extra_postargs": cflags})
        try:
            sources = [name.replace(".", "/") + ".py" for name in self._hotpath.MODULES]
            # One C file per module, so that they compile in parallel. Modules outside the
            # hot path are read for their types only: their own imports (aiohttp,
            # orjson...) are not in the build environment.
            built = mypycify(["--follow-imports=silent", *sources], opt_level="2",
                             debug_level="0", group_name=GROUP, include_runtime_files=False,
                             multi_file=True)
            # mypy's analysis (millions of objects) stays referenced until the process
            # ends; frozen, the garbage collector no longer walks it, neither during the
            # C compile nor at exit, where that took 1.5 s and more.
            gc.freeze()
            for ext in built:
                ext.include_dirs.append(GROUP_INCLUDE)
            self._take_sources(built)
            workers = max(2, os.cpu_count() or 1)
            self.compiler.compile = plan.compiler(workers)
            self.parallel = workers  # the small per-module extensions side by side too
            super().build_extensions()
        finally:
            self.compiler.compile = compile_one
            plan.close()

    def _take_sources(self, built: list[Extension]) -> None:
        """Give the planned extensions (which setuptools has prepared) what mypyc made."""
        by_name = {ext.name: ext for ext in built}
        if sorted(by_name) != sorted(ext.name for ext in self.extensions):
            raise RuntimeError(f"mypyc made {sorted(by_name)}, expected "
                               f"{sorted(ext.name for ext in self.extensions)}")
        for ext in self.extensions:
            ext.__dict__.update({key: value for key, value in vars(by_name[ext.name]).items()
                                 if not key.startswith("_")})

    def _fall_back(self, hotpath: Any, why: str) -> None:
        self.extensions = []
        if self.inplace:
            remove_compiled(hotpath)
        leave_note(hotpath, self._package_dir(), why)
        say(f"WARNING stormloop: {why}; installed the plain Python modules instead: "
            f"{PURE_COST}. With a C compiler (gcc or clang and the Python headers), "
            f"install again to compile.")


def ext_modules() -> list[Extension]:
    """The hot-path extensions, or none when ``STORMLOOP_PURE`` asks for plain Python."""
    hotpath = load_hotpath()
    if hotpath.pure_requested():
        remove_compiled(hotpath)
        leave_note(hotpath, Path("engine"), "STORMLOOP_PURE was set")
        return []
    return planned_extensions(hotpath)


setup(ext_modules=ext_modules(), cmdclass={"build_ext": BuildHotPath})
