"""`python -m harness.b200 ...`: see harness/b200/session.py."""

import sys

from harness.b200.session import main

sys.exit(main())
