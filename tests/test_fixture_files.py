"""``fixture_files.assert_reproduced``: how a generator's re-run is judged on another machine
(floats within a few roundings of their scale, everything else exact)."""

from __future__ import annotations

import json
import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "fixtures"))
from fixture_files import ULPS, assert_reproduced, npz_bytes  # noqa: E402


def _write(folder, doc, arrays):
    (folder / "c.json").write_text(json.dumps(doc))
    (folder / "a.npz").write_bytes(npz_bytes(arrays))


def test_rounding_differences_pass_and_real_changes_fail(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    x = np.linspace(-3, 3, 50).astype(np.float32)
    eps = float(np.finfo(np.float32).eps)
    _write(old, {"loss": 2.5, "name": "a", "n": [1, float("nan")]}, {"x": x, "i": np.arange(3)})
    _write(new, {"loss": 2.5 * (1 + eps), "name": "a", "n": [1, float("nan")]},
           {"x": x + np.float32(3 * eps), "i": np.arange(3)})
    assert_reproduced(new, old, ["c.json", "a.npz"], "gen.py")
    for doc, arrays, what in (
            ({"loss": 2.5 * (1 + 4 * ULPS * eps), "name": "a", "n": [1, float("nan")]},
             {"x": x, "i": np.arange(3)}, "loss"),
            ({"loss": 2.5, "name": "b", "n": [1, float("nan")]}, {"x": x, "i": np.arange(3)},
             "name"),
            ({"loss": 2.5, "name": "a", "n": [1, float("nan")]},
             {"x": x * np.float32(1.001), "i": np.arange(3)}, "x"),
            ({"loss": 2.5, "name": "a", "n": [1, float("nan")]},
             {"x": x, "i": np.arange(3) + 1}, "i")):
        _write(new, doc, arrays)
        with pytest.raises(AssertionError, match=f"(?s)out of date.*{what}.*gen.py"):
            assert_reproduced(new, old, ["c.json", "a.npz"], "gen.py")
