"""The compiled hot path: what runs, the plain-Python switch, and the stale-build warning."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

import engine
from engine import hotpath

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = Path(engine.__file__).parent

PROBE = ("import engine.collector, engine.hotpath as h; "
         "print(h.compiled(), engine.collector.__file__.endswith('.py'))")


def python(code: str, cwd: Path = ROOT, **env: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True,
                         text=True, timeout=60, env={**os.environ, **env}, check=True)
    return out.stdout.strip()


def test_an_installed_build_is_what_runs() -> None:
    built = any(PACKAGE.glob("_hotpath__mypyc*"))
    expected = built and not os.environ.get("STORMLOOP_PURE")
    assert hotpath.compiled() == expected
    if built:
        assert python(PROBE, STORMLOOP_PURE="") == "True False"


def test_pure_switch_imports_the_sources() -> None:
    assert python(PROBE, STORMLOOP_PURE="1") == "False True"


def test_pure_switch_holds_for_a_package_found_by_an_unresolved_path() -> None:
    # engine.__path__ then reads '<parent>/./<root>/engine', not the resolved directory.
    code = f"import sys; sys.path.insert(0, './{ROOT.name}'); {PROBE}"
    assert python(code, cwd=ROOT.parent, STORMLOOP_PURE="1") == "False True"


def test_pure_switch_off_is_empty_or_zero() -> None:
    for off in ("", "0"):
        assert python("import engine.hotpath as h; print(h.pure_requested())",
                      STORMLOOP_PURE=off) == "False"


def test_word_count_gives_the_same_answer_compiled_and_plain() -> None:
    outputs = []
    for pure in ("", "1"):
        proc = subprocess.run(
            [sys.executable, "-m", "engine", "run", "topologies/word_count.py",
             "--conf", "wordcount.sentences=300", "--conf", "wordcount.repeat=2",
             "--conf", "wordcount.top=1000"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
            env={**os.environ, "STORMLOOP_PURE": pure})
        assert proc.returncode == 0, proc.stderr
        assert "6000 words counted" in proc.stdout
        outputs.append(sorted(proc.stdout.splitlines()))  # every word, ties in any order
    assert outputs[0] == outputs[1]


def _touch(path: Path, mtime: float) -> None:
    path.write_text("")
    os.utime(path, (mtime, mtime))


def test_stale_names_a_source_newer_than_its_build(tmp_path: Path) -> None:
    suffix = EXTENSION_SUFFIXES[0]
    _touch(tmp_path / f"_hotpath__mypyc{suffix}", 1000)
    for stem in ("collector", "tuples"):
        _touch(tmp_path / f"{stem}{suffix}", 1000)
        _touch(tmp_path / f"{stem}.py", 900)
    assert hotpath.stale(tmp_path) == []
    _touch(tmp_path / "collector.py", 2000)
    assert hotpath.stale(tmp_path) == ["engine.collector"]


def test_a_rebuilt_library_makes_a_source_current(tmp_path: Path) -> None:
    suffix = EXTENSION_SUFFIXES[0]
    _touch(tmp_path / f"tuples{suffix}", 1000)  # the shim, left as it was
    _touch(tmp_path / "tuples.py", 2000)
    assert hotpath.stale(tmp_path) == ["engine.tuples"]
    _touch(tmp_path / f"_hotpath__mypyc{suffix}", 3000)  # the code, rebuilt
    assert hotpath.stale(tmp_path) == []


def test_no_build_is_never_stale(tmp_path: Path) -> None:
    _touch(tmp_path / "collector.py", 2000)
    assert hotpath.stale(tmp_path) == []
