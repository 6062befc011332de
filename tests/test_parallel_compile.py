"""The hot path's C compile: mypyc's runtime library compiles once, as one early file; the
group's other C files in one file per worker, of about equal size, side by side."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "build_support"))
from parallel_compile import ParallelCompile  # noqa: E402 - found through the path above

ARGS = {"output_dir": "out", "macros": [], "include_dirs": ["lib-rt", "build"],
        "debug": None, "extra_postargs": ["-O2"]}


class FakeCompiler:
    """Records what it was asked to compile; an object per source, named after it."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], dict[str, Any]]] = []
        self.lock = threading.Lock()

    def compile(self, sources: list[str], **kwargs: Any) -> list[str]:
        with self.lock:
            self.calls.append((list(sources), kwargs))
        return [s.rsplit(".", 1)[0] + ".o" for s in sources]

    def compiled(self) -> list[str]:
        return [s for sources, _ in self.calls for s in sources]


def sources(tmp_path: Path, sizes: dict[str, int]) -> list[str]:
    paths = []
    for name, size in sizes.items():
        path = tmp_path / "build" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x" * size)
        paths.append(str(path))
    return paths


def test_runtime_library_compiles_once_as_one_file(tmp_path: Path) -> None:
    fake = FakeCompiler()
    unit = tmp_path / "build" / "runtime.c"
    plan = ParallelCompile(fake.compile, ["init.c", "int_ops.c"], unit, tmp_path / "build",
                           ARGS)
    assert unit.read_text() == "#include <init.c>\n#include <int_ops.c>\n"
    group = sources(tmp_path, {"init.c": 10, "a.c": 10, "int_ops.c": 10, "b.c": 99})
    objects = plan.compiler(workers=2)(group, **ARGS)
    plan.close()
    build = tmp_path / "build"
    assert sorted(objects) == [str(build / "a.o"), str(build / "b.o"),
                               str(build / "runtime.o")]
    assert sorted(fake.compiled()) == [str(build / "a.c"), str(build / "b.c"), str(unit)]
    assert fake.compiled()[0] == str(unit)  # at once, not when the extension compiles
    assert all(kwargs == ARGS for _, kwargs in fake.calls)


def test_group_files_are_packed_into_one_file_per_worker_of_about_equal_size(
        tmp_path: Path) -> None:
    fake = FakeCompiler()
    build = tmp_path / "build"
    plan = ParallelCompile(fake.compile, ["init.c"], build / "runtime.c", build, ARGS)
    group = sources(tmp_path, {"init.c": 1, "big.c": 90, "m1.c": 40, "m2.c": 30,
                               "engine/main.c": 20})
    objects = plan.compiler(workers=2)(group, **ARGS)
    plan.close()
    # the largest first, each onto the smaller pack: big | m1 + m2 + main
    assert sorted(objects) == [str(build / "big.o"), str(build / "mypyc_pack1.o"),
                               str(build / "runtime.o")]
    assert (build / "mypyc_pack1.c").read_text() == (
        '#include "engine/main.c"\n#include "m1.c"\n#include "m2.c"\n')
    assert sorted(fake.compiled()) == [str(build / "big.c"), str(build / "mypyc_pack1.c"),
                                       str(build / "runtime.c")]


def test_a_pack_that_does_not_compile_compiles_file_by_file(tmp_path: Path) -> None:
    fake = FakeCompiler()
    build = tmp_path / "build"

    def clash(sources: list[str], **kwargs: Any) -> list[str]:
        if Path(sources[0]).name.startswith("mypyc_pack"):
            raise RuntimeError("redefinition of 'helper'")
        return fake.compile(sources, **kwargs)

    plan = ParallelCompile(clash, ["init.c"], build / "runtime.c", build, ARGS)
    group = sources(tmp_path, {"init.c": 1, "a.c": 5, "b.c": 5, "c.c": 5})
    objects = plan.compiler(workers=1)(group, **ARGS)
    plan.close()
    assert sorted(objects) == [str(build / f"{n}.o") for n in ("a", "b", "c", "runtime")]


def test_extension_without_the_runtime_files_gets_no_runtime_object(tmp_path: Path) -> None:
    fake = FakeCompiler()
    plan = ParallelCompile(fake.compile, ["init.c"], tmp_path / "build" / "runtime.c",
                           tmp_path / "build", ARGS)
    shim = sources(tmp_path, {"shim.c": 5})
    assert plan.compiler(workers=2)(shim, **{**ARGS, "include_dirs": []}) == [
        str(tmp_path / "build" / "shim.o")]
    plan.close()


def test_runtime_unit_compiles_again_when_the_extension_asks_other_options(
        tmp_path: Path) -> None:
    fake = FakeCompiler()
    unit = tmp_path / "build" / "runtime.c"
    plan = ParallelCompile(fake.compile, ["init.c"], unit, tmp_path / "build", ARGS)
    other = {**ARGS, "extra_postargs": ["-O3"]}
    objects = plan.compiler(workers=2)(sources(tmp_path, {"init.c": 1, "a.c": 1}), **other)
    plan.close()
    assert sorted(objects) == [str(tmp_path / "build" / "a.o"),
                               str(tmp_path / "build" / "runtime.o")]
    assert ([str(unit)], other) in fake.calls


def test_early_compile_failure_is_raised_by_compile(tmp_path: Path) -> None:
    def failing(sources: list[str], **kwargs: Any) -> list[str]:
        if sources[0].endswith("runtime.c"):
            raise RuntimeError("cc failed")
        return []

    plan = ParallelCompile(failing, ["init.c"], tmp_path / "build" / "runtime.c",
                           tmp_path / "build", ARGS)
    with pytest.raises(RuntimeError, match="cc failed"):
        plan.compiler(workers=2)(sources(tmp_path, {"init.c": 1}), **ARGS)
    plan.close()
