"""``stormloop``: run and inspect topologies, replay failures, start a local test broker.

    stormloop run FILE [...]        the engine's runner (as ``python -m engine run``)
    stormloop graph FILE [...]      the engine's ``graph`` command: the topology as SVG
    stormloop replay [...]          the Spark replay job (``scripts/replay_failed.py``)
    stormloop broker [--port N]     a Kafka-protocol broker in memory, for the examples
    stormloop produce / consume     put lines on a topic, print a topic's records
    stormloop topics / groups       create, list, describe topics; a group's lag
    stormloop doctor, --version     the build installed (compiled or plain), the extras

Works from any directory: the command imports the installed library, never a module of
the working directory that happens to share its name (an ``engine.py`` of one's own).
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

_HERE = Path(__file__).resolve().parent.parent

USAGE = """usage: stormloop COMMAND [ARGS...]

commands:
  run FILE [...]       run a topology file (stormloop run --help)
  graph FILE [...]     draw a topology file as SVG on stdout
  replay [...]         replay a failed topic's records with Spark (stormloop replay --help)
  broker [--port N]    start a Kafka-protocol test broker on 127.0.0.1 (default port 9092)
  produce TOPIC [...]  write lines from stdin (or --from FILE) to a topic as records
  consume TOPIC [...]  print a topic's records, one per line
  topics create NAME --partitions N [--config K=V ...]
                       create a topic (also: topics list, topics describe NAME)
  groups describe GROUP --topic TOPIC
                       a consumer group's committed offsets and lag per partition
  doctor               the build installed (compiled or plain, and why), extras, Java

options:
  --version            the version and the build of the hot path (compiled or plain)
"""


def _library_first() -> None:
    """Drop the working directory from the import path (``python -m stormloop`` puts it
    first), unless the library itself lives there."""
    cwd = Path.cwd().resolve()
    if cwd == _HERE:
        return
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != cwd]


def engine_commands() -> list[str]:
    """The subcommands ``engine.cli`` offers (``run``, and ``graph`` where it exists)."""
    from engine import cli

    for action in cli._parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return sorted(action.choices)
    return []


def _engine(command: str, args: list[str]) -> int:
    known = engine_commands()
    if command not in known:
        if command == "graph":
            print(f"stormloop graph: the engine installed here has no graph command (its "
                  f"commands: {', '.join(known)})", file=sys.stderr)
        else:
            print(f"stormloop: unknown command {command!r}\n{USAGE}", end="", file=sys.stderr)
        return 2
    from engine.cli import main as engine_main

    return engine_main([command, *args])


def _replay(args: list[str]) -> int:
    try:
        from connectors.spark.cli import main as replay_main
    except ImportError as exc:
        print(f"stormloop replay: {exc}; install the Spark extra: "
              f"pip install 'stormloop[spark]'", file=sys.stderr)
        return 2
    return replay_main(args, prog="stormloop replay")


def _broker(args: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="stormloop broker",
        description="A Kafka-protocol broker (Tansu) on 127.0.0.1, storage in memory, for "
                    "trying the Kafka examples. Ctrl-C stops it; its data goes with it.")
    parser.add_argument("--port", type=int, default=9092, help="port to listen on (9092)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    options = parser.parse_args(args)
    from connectors.kafka.testing_broker import BrokerStartError, TestingBroker

    try:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            # As the broker's own listener does: a port whose last broker was stopped a
            # moment ago (its connections in TIME_WAIT) is free to listen on again.
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind((options.host, options.port))
    except OSError as exc:
        print(f"stormloop broker: cannot listen on {options.host}:{options.port} ({exc.strerror}); "
              f"is a broker running there already? choose another port with --port",
              file=sys.stderr)
        return 2
    broker = TestingBroker(options.host, port=options.port)
    try:
        broker.start()
    except BrokerStartError as exc:
        print(f"stormloop broker: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(f"Kafka-protocol test broker listening; bootstrap servers: {broker.bootstrap}",
              flush=True)
        print("storage in memory; Ctrl-C stops it", file=sys.stderr, flush=True)
        while not stop.wait(0.5):
            if not broker.running():
                print(f"stormloop broker: the broker exited; log:\n{broker.log_tail()}",
                      file=sys.stderr)
                return 1
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        broker.stop()
    print("broker stopped", file=sys.stderr, flush=True)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``stormloop`` command; returns the exit status."""
    _library_first()
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0 if args else 2
    command, rest = args[0], args[1:]
    if command in ("--version", "doctor"):
        # They say which build runs themselves, in their own words.
        warnings.filterwarnings("ignore", message="stormloop runs its plain Python hot path")
        from stormloop.doctor import doctor, version_line

        print(version_line() if command == "--version" else "\n".join(doctor()))
        return 0
    if command == "replay":
        return _replay(rest)
    if command == "broker":
        return _broker(rest)
    if command in ("produce", "consume"):
        from stormloop import kafka_tools

        return kafka_tools.produce(rest) if command == "produce" else kafka_tools.consume(rest)
    if command in ("topics", "groups"):
        from stormloop import kafka_admin

        return kafka_admin.topics(rest) if command == "topics" else kafka_admin.groups(rest)
    if command.startswith("-"):
        print(f"stormloop: unknown option {command!r}\n{USAGE}", end="", file=sys.stderr)
        return 2
    return _engine(command, rest)
