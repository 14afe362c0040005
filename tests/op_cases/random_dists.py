"""Random ops of ``ops/random_dists.py``: their values are random, so they are tested by
moments, ranges and seeding in tests/test_random_symbol.py instead of this table."""

from hybridgpu import ops

CASES = []

_WHERE = "tests/test_random_symbol.py (moments, whole numbers, seeding, MXNet's JSON)"
TESTED_ELSEWHERE = {op.name: _WHERE for op in ops.all_ops()
                    if op.random and (op.name.startswith("_sample_multinomial")
                                      or any(d in op.name for d in (
                                          "exponential", "gamma", "poisson",
                                          "negative_binomial")))}

# Custom calls back into Python operators that tests register.
TESTED_ELSEWHERE.update({name: "tests/test_custom_op.py (CustomOp forward, backward, JSON)"
                         for name in ("Custom", "_backward_Custom")})
