"""``python -m stormloop``: the same as the ``stormloop`` command."""

import sys

from stormloop.cli import main

sys.exit(main())
