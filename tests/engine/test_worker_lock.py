"""One process per topology and worker id on a host; none held without an id."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from engine.errors import ConfigError
from engine.worker_lock import hold


def test_a_worker_id_in_use_is_refused_in_one_line(tmp_path: Path) -> None:
    with hold("orders", "host-a-1", tmp_path):
        with pytest.raises(ConfigError) as refused, hold("orders", "host-a-1", tmp_path):
            pass
        assert str(refused.value) == (
            f"topology.worker.id 'host-a-1' of topology 'orders' is in use by another "
            f"process on this host (pid {os.getpid()}); give each process its own (for "
            f"--workers: --conf topology.worker.id=ID, worker I is ID-I)")
        with hold("orders", "host-a-2", tmp_path), hold("audit", "host-a-1", tmp_path):
            pass  # another id, another topology: their own locks
    with hold("orders", "host-a-1", tmp_path):
        pass  # released with its holder


def test_without_a_worker_id_nothing_is_held(tmp_path: Path) -> None:
    with hold("orders", None, tmp_path), hold("orders", None, tmp_path):
        pass
    assert list(tmp_path.iterdir()) == []
