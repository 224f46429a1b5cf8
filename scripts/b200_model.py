"""`python -m scripts.b200_model`: print the calibrated B200 time model of the sm100 kernels (the same as
`python -m scripts.b200 --model`; the model is harness/b200/model.py, its table harness/b200/model_table.py)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `python scripts/b200_model.py` as well as `python -m scripts.b200_model`
    sys.path.insert(0, str(ROOT))

from harness.b200.model_table import model_table  # noqa: E402

if __name__ == "__main__":
    print(model_table())
