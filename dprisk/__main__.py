"""``python -m dprisk``: the same as the ``dprisk`` command (:func:`dprisk.cli.main`)."""

import sys

from dprisk.cli import main

sys.exit(main())
