"""``python -m pqforge``: the ``pqforge`` command line."""

import sys

from .cli import main

sys.exit(main())
