"""Build: the engine's hot-path modules are compiled to C extensions with mypyc.

The same modules stay importable as plain Python. ``STORMLOOP_PURE=1 pip install -e .``
skips the compilation; so does a machine without a working C compiler, or a compilation
that fails: the install then finishes with the plain Python modules and says so.
Compiled modules shadow their ``.py`` files, so after editing one of them, install again
(importing ``engine`` warns when a compiled module is older than its source); an install
with nothing changed reuses the compiled modules in the source tree.

mypyc runs once, only when extensions are built (not while pip asks for metadata), and
the C files of the runtime library compile in parallel with the engine's own.
"""

from __future__ import annotations

import sys

if sys.version_info < (3, 11):  # noqa: UP036 - the point is to say so before anything fails
    sys.exit(f"stormloop requires Python 3.11 or newer; this is Python "
             f"{sys.version_info[0]}.{sys.version_info[1]} ({sys.executable})")

import importlib.util
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

GROUP = "engine._hotpath"
PURE_COST = ("the plain Python hot path runs the word count about 2-3 times slower; "
             "set STORMLOOP_PURE=1 to skip compiling on purpose")


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


def remove_compiled(hotpath: Any) -> None:
    """Delete compiled modules left in the package, which would shadow the sources."""
    for path in Path("engine").iterdir():
        if hotpath.is_extension(path.name):
            path.unlink()


def planned_extensions(hotpath: Any) -> list[Extension]:
    """The extensions' names, without running mypyc: the shared library of the group and
    one small module per hot-path module. ``BuildHotPath`` fills in the sources."""
    return [Extension(f"{GROUP}__mypyc", [])] + [Extension(m, []) for m in hotpath.MODULES]


class BuildHotPath(build_ext):
    """Compiles the hot path, or falls back to plain Python with a warning."""

    def run(self) -> None:
        hotpath = load_hotpath()
        if self.inplace and self._up_to_date(hotpath):
            say("stormloop: compiled hot path is up to date (nothing to compile)")
            return
        problem = self._compiler_problem()
        if problem is not None:
            self._fall_back(hotpath, f"no working C compiler ({problem})")
            return
        names = ", ".join(m.rsplit(".", 1)[1] for m in hotpath.MODULES)
        say(f"stormloop: compiling the hot path with mypyc ({names}); this takes 10-30 s. "
            f"To skip it: STORMLOOP_PURE=1 pip install ...")
        started = time.monotonic()
        try:
            from mypyc.build import mypycify

            sources = [name.replace(".", "/") + ".py" for name in hotpath.MODULES]
            built = mypycify(sources, opt_level="3", group_name=GROUP,
                             include_runtime_files=False)
            self._take_sources(built)
            super().run()
        except (Exception, SystemExit) as exc:  # mypyc exits on type errors
            self._fall_back(hotpath, f"compilation failed: {type(exc).__name__}: {exc}")
            return
        say(f"stormloop: compiled the hot path in {time.monotonic() - started:.1f} s")

    def build_extension(self, ext: Any) -> None:
        # distutils compiles an extension's sources one after the other; the mypyc runtime
        # library is a dozen independent C files, so compile them side by side.
        compile_one = self.compiler.compile

        def compile_parallel(sources: list[str], *args: Any, **kwargs: Any) -> list[str]:
            if len(sources) < 2:
                return compile_one(sources, *args, **kwargs)
            # The largest file first, so that it is not the one left running at the end.
            ordered = sorted(sources, key=lambda s: -os.path.getsize(s))
            with ThreadPoolExecutor(max(2, os.cpu_count() or 1)) as pool:
                done = dict(zip(ordered, pool.map(
                    lambda s: compile_one([s], *args, **kwargs), ordered), strict=True))
            return [obj for source in sources for obj in done[source]]

        self.compiler.compile = compile_parallel
        try:
            super().build_extension(ext)
        finally:
            self.compiler.compile = compile_one

    def _take_sources(self, built: list[Extension]) -> None:
        """Give the planned extensions (which setuptools has prepared) what mypyc made."""
        by_name = {ext.name: ext for ext in built}
        if sorted(by_name) != sorted(ext.name for ext in self.extensions):
            raise RuntimeError(f"mypyc made {sorted(by_name)}, expected "
                               f"{sorted(ext.name for ext in self.extensions)}")
        for ext in self.extensions:
            ext.__dict__.update({key: value for key, value in vars(by_name[ext.name]).items()
                                 if not key.startswith("_")})

    def _up_to_date(self, hotpath: Any) -> bool:
        """Every compiled module is in the source tree and newer than every input."""
        build_py = self.get_finalized_command("build_py")
        inputs = [Path(m.replace(".", "/") + ".py") for m in hotpath.MODULES]
        inputs += [Path("setup.py"), Path("engine/hotpath.py")]
        newest = max(p.stat().st_mtime for p in inputs)
        for ext in self.extensions:
            target = Path(self._get_inplace_equivalent(build_py, ext)[0])
            if not target.exists() or target.stat().st_mtime < newest:
                return False
        return True

    def _compiler_problem(self) -> str | None:
        """None when the C compiler builds a trivial file, else what went wrong."""
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler

        try:
            compiler = new_compiler(compiler=self.compiler, force=True)
            customize_compiler(compiler)
            with tempfile.TemporaryDirectory() as tmp:
                source = Path(tmp, "probe.c")
                source.write_text("int probe(void) { return 0; }\n")
                compiler.compile([str(source)], output_dir=tmp)
        except Exception as exc:
            return f"{type(exc).__name__}: {str(exc).strip() or 'failed'}"
        return None

    def _fall_back(self, hotpath: Any, why: str) -> None:
        self.extensions = []
        if self.inplace:
            remove_compiled(hotpath)
        say(f"WARNING stormloop: {why}; installed the plain Python modules instead: "
            f"{PURE_COST}. With a C compiler (gcc or clang and the Python headers), "
            f"install again to compile.")


def ext_modules() -> list[Extension]:
    """The hot-path extensions, or none when ``STORMLOOP_PURE`` asks for plain Python."""
    hotpath = load_hotpath()
    if hotpath.pure_requested():
        remove_compiled(hotpath)
        return []
    return planned_extensions(hotpath)


setup(ext_modules=ext_modules(), cmdclass={"build_ext": BuildHotPath})
