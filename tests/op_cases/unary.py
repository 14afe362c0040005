"""Cases for ``ops/elemwise_unary.py``."""

from __future__ import annotations

import numpy as np
from op_harness import OpCase

CASES = [
    OpCase("relu", shapes=[(3, 4)], ref=lambda x: np.maximum(x, 0)),
    OpCase("negative", shapes=[(3, 4)], ref=np.negative),
    OpCase("abs", shapes=[(3, 4)], ref=np.abs),
    OpCase("sign", shapes=[(3, 4)], ref=np.sign),
    OpCase("floor", shapes=[(3, 4)], ref=np.floor),
    OpCase("exp", shapes=[(3, 4)], ref=np.exp),
    OpCase("log", shapes=[(3, 4)], ref=np.log, domain=(0.5, 3.0)),
]
