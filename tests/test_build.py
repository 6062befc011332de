"""The build: a clear refusal below Python 3.11, mypy asked for only when compiling, and a
fall-back to the plain Python modules, with a warning, when no C compiler works."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def backend(code: str, cwd: Path = ROOT, **env: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; sys.path.insert(0, 'build_support')\n"
                               "import stormloop_build as b\n" + code],
        cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_setup_refuses_python_older_than_3_11() -> None:
    code = ("import sys\nsys.version_info = (3, 10, 14, 'final', 0)\n"
            "exec(compile(open('setup.py').read(), 'setup.py', 'exec'))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith("stormloop requires Python 3.11 or newer; this is Python "
                                  "3.10 (")


def test_pyproject_requires_python_3_11() -> None:
    assert 'requires-python = ">=3.11"' in (ROOT / "pyproject.toml").read_text()


def test_mypy_is_asked_for_only_when_compiling(tmp_path: Path) -> None:
    ask = "print(b._mypyc_if_compiling(editable=False))"
    assert backend(ask, STORMLOOP_PURE="1") == "[]"
    assert backend(ask, CC="/bin/false") == "[]"
    if backend("print(b.compiler_problem())") == "None":  # this machine compiles
        assert backend(ask, STORMLOOP_PURE="") == str(["mypy==2.4.1"])


def test_compiler_problem_names_what_failed() -> None:
    out = backend("print(b.compiler_problem())", CC="/bin/false")
    assert out == "'/bin/false' exited with status 1 on a one-line C file"


def test_in_place_build_is_up_to_date_only_when_newer_than_every_source(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "engine", tree / "engine", ignore=shutil.ignore_patterns("*.so"))
    shutil.copytree(ROOT / "build_support", tree / "build_support")
    shutil.copy(ROOT / "setup.py", tree / "setup.py")
    check = "print(b.in_place_up_to_date(b.load_hotpath()))"
    assert backend(check, cwd=tree) == "False"          # nothing compiled
    touch = ("import os, time\nfor t in b.in_place_targets(b.load_hotpath()):\n"
             "    t.write_bytes(b'')\n    os.utime(t, (time.time() + 60,) * 2)\n")
    backend(touch, cwd=tree)
    assert backend(check, cwd=tree) == "True"
    os.utime(tree / "engine" / "acker.py", (4e9, 4e9))  # an edit after the build
    assert backend(check, cwd=tree) == "False"


@pytest.mark.timeout(300)
def test_build_without_a_compiler_falls_back_to_plain_python_with_a_warning(
        tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "engine", tree / "engine", ignore=shutil.ignore_patterns("*.so"))
    shutil.copytree(ROOT / "build_support", tree / "build_support")
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, tree / name)
    (tree / "engine" / "acker.cpython-311-x86_64-linux-gnu.so").write_bytes(b"stale")
    proc = subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
                          cwd=tree, env={**os.environ, "CC": "/bin/false"},
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    assert ("WARNING stormloop: no working C compiler ('/bin/false' exited with status 1 on "
            "a one-line C file); installed the plain Python modules instead" in proc.stderr)
    assert "STORMLOOP_PURE=1" in proc.stderr and "slower" in proc.stderr
    assert not [p for p in (tree / "engine").iterdir() if p.suffix == ".so"]
    note = (tree / "engine" / "_build_note.txt").read_text()
    assert note == ("the install used the plain modules: no working C compiler ('/bin/false' "
                    "exited with status 1 on a one-line C file)\n")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("STORMLOOP_PURE", None)
    env.pop("PYTHONWARNINGS", None)
    said = subprocess.run([sys.executable, "-c", "import engine"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=60)
    assert said.returncode == 0, said.stderr
    lines = said.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "<string>:1: PlainBuildWarning: stormloop runs its plain Python hot path: the install "
        "used the plain modules: no working C compiler ('/bin/false' exited with status 1 on a "
        "one-line C file). For the compiled ones"), said.stderr


def test_an_edit_to_any_build_module_makes_the_in_place_build_stale(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "engine", tree / "engine", ignore=shutil.ignore_patterns("*.so"))
    shutil.copytree(ROOT / "build_support", tree / "build_support")
    shutil.copy(ROOT / "setup.py", tree / "setup.py")
    touch = ("import os, time\nfor t in b.in_place_targets(b.load_hotpath()):\n"
             "    t.write_bytes(b'')\n    os.utime(t, (time.time() + 60,) * 2)\n")
    backend(touch, cwd=tree)
    check = "print(b.in_place_up_to_date(b.load_hotpath()))"
    assert backend(check, cwd=tree) == "True"
    os.utime(tree / "build_support" / "parallel_compile.py", (4e9, 4e9))
    assert backend(check, cwd=tree) == "False"
