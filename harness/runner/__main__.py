"""`python -m harness.runner ...`: see harness/runner/__init__.py."""

import sys

from harness.runner.cli import main

sys.exit(main())
