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


@pytest.mark.timeout(900)
@pytest.mark.skipif(not hotpath.compiled(),
                    reason="this run is the plain-Python build already")
def test_engine_and_transactional_tests_pass_on_plain_python() -> None:
    env = {**os.environ, "STORMLOOP_PURE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
         "tests/engine", "tests/transactional"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=850)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
