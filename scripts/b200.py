"""`python -m scripts.b200` (what `nox -s b200` runs): the B200 session, harness/b200/session.py.

    python -m scripts.b200 [--model] [--reference-kernels DIR] [--problem P] [--tier ...] [--variants ...]

On a B200: the sm100 tier, the evaluator steps, the variants stage and the gates table; elsewhere it
says so and exits 0. `--model` prints the calibrated B200 time model (harness/b200/model.py).
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python scripts/b200.py` as well as `python -m scripts.b200`
    sys.path.insert(0, str(ROOT))

from harness.b200.session import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
