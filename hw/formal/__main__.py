"""``python -m nantucket.hw.formal`` (``make formal``): every proof, one line a property (hw/formal/suite.py)."""

import sys

from .suite import main

sys.exit(main())
