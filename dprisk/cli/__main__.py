"""``python -m dprisk.cli``: the same as the ``dprisk`` command."""

import sys

from dprisk.cli import main

sys.exit(main())
