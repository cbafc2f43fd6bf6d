"""``python -m cli``: the ``privlab`` command line."""

import sys

from cli.main import main

sys.exit(main())
