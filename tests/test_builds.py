"""What CI checks beyond the tests themselves: mypy (strict on ``engine/``) and, when this
run uses the compiled hot path, the engine and transactional tests on plain Python too."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import hotpath

ROOT = Path(__file__).resolve().parents[1]


def test_mypy_strict_on_engine() -> None:
    api = pytest.importorskip("mypy.api", reason="mypy is part of the test extra")
    out, err, status = api.run(["--config-file", str(ROOT / "pyproject.toml"),
                                str(ROOT / "engine")])
    assert status == 0, out + err


# The plain-Python re-run in parts of similar length, so that parallel test workers share it.
_PARTS = {
    "engine-b": ["tests/engine/test_reliability.py", "tests/engine/test_flow_control.py",
                 "tests/engine/test_flow_control_topology.py"],
    "engine-c": ["tests/engine/test_cli.py", "tests/engine/test_supervisor.py",
                 "tests/engine/observe"],
    "transactional": ["tests/transactional"],
}
PURE_PARTS = {
    "engine-a": ["tests/engine", *(f"--ignore={path}" for part in ("engine-b", "engine-c")
                                   for path in _PARTS[part])],
    **_PARTS,
}


@pytest.mark.timeout(900)
@pytest.mark.skipif(not hotpath.compiled(),
                    reason="this run is the plain-Python build already")
@pytest.mark.parametrize("part", sorted(PURE_PARTS))
def test_engine_and_transactional_tests_pass_on_plain_python(part: str) -> None:
    env = {**os.environ, "STORMLOOP_PURE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-n", "0", "-p", "no:cacheprovider",
         *PURE_PARTS[part]],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=850)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
