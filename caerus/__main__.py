"""`python -m caerus` runs the console script."""

import sys

from caerus.cli import main

sys.exit(main())
