"""Replay a failed topic's records onto Kafka with PySpark (docs/spark-replay.md).

    python scripts/replay_failed.py --bootstrap-servers HOST:PORT --failed-topic T \
        [--target-topic T2] [--group-id G] [--master local[*]] [--dry-run]
    spark-submit scripts/replay_failed.py --bootstrap-servers HOST:PORT --failed-topic T

The job itself is ``connectors.spark.replay``; this file only makes the repository root
importable when run from a checkout and hands over to ``connectors.spark.cli``.
"""

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from connectors.spark.cli import main  # noqa: E402 - needs the path set above

if __name__ == "__main__":
    sys.exit(main())
