"""``python -m nantucket``: the ``nantucket`` command."""

import sys

from nantucket.host.cli import main

sys.exit(main())
