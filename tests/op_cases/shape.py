"""Cases for ``ops/shape.py``: reshape codes, axis permutations, tiling, broadcasting, padding.

References are NumPy calls (``np.transpose``, ``np.tile``, ``np.pad``, ...) or, where NumPy has
no such function (``depth_to_space``, the adjoint of ``Pad``), an element-by-element loop.
"""

from __future__ import annotations

import itertools

import numpy as np

from op_harness import OpCase


def _reshaped(shape):
    return lambda x, **_: x.reshape(shape)


def _reshape_cases():
    table = [  # (input shape, attrs, expected shape)
        ((2, 3, 4), {"shape": (0, -1)}, (2, 12)),
        ((2, 3, 4), {"shape": (-1, 0), "reverse": True}, (6, 4)),
        ((2, 3, 4), {"shape": (4, 0, 2), "reverse": True}, (4, 3, 2)),
        ((2, 3, 4), {"shape": (-2,)}, (2, 3, 4)),
        ((2, 3, 4), {"shape": (-3, -2)}, (6, 4)),
        ((2, 3, 4), {"shape": (0, -3)}, (2, 12)),
        ((2, 3, 4), {"shape": (-4, 1, 2, -2)}, (1, 2, 3, 4)),
        ((6, 4), {"shape": (-4, -1, 3, 0)}, (2, 3, 4)),
        ((2, 3, 4), {"shape": (4, 3, 2)}, (4, 3, 2)),
        ((2, 3, 4), {"target_shape": (4, 0)}, (4, 6)),
        ((2, 3, 4), {"target_shape": (7, 12), "keep_highest": True}, (2, 12)),
    ]
    cases = [OpCase("Reshape", shapes=[src], attrs=attrs, ref=_reshaped(out), id=f"r{i}")
             for i, (src, attrs, out) in enumerate(table)]
    cases.append(OpCase("reshape", shapes=[(2, 3)], attrs={"shape": (3, -1)},
                        ref=_reshaped((3, 2)), id="alias"))
    return cases


def _transpose_cases():
    return [
        OpCase("transpose", shapes=[(2, 3, 4)], ref=lambda x: np.transpose(x), id="default"),
        OpCase("transpose", shapes=[(2, 3, 4)], attrs={"axes": (1, 0, 2)},
               ref=lambda x, axes: np.transpose(x, axes), id="axes"),
        OpCase("transpose", shapes=[(2, 3, 4, 5)], attrs={"axes": (-1, 0, 2, -3)},
               ref=lambda x, axes: np.transpose(x, axes), id="negative"),
        OpCase("SwapAxis", shapes=[(2, 3, 4)], attrs={"dim1": 0, "dim2": 2},
               ref=lambda x, dim1, dim2: np.swapaxes(x, dim1, dim2)),
        OpCase("swapaxes", shapes=[(2, 3, 4)], attrs={"dim1": -1, "dim2": 1},
               ref=lambda x, dim1, dim2: np.swapaxes(x, dim1, dim2), id="negative"),
        OpCase("SwapAxis", shapes=[(2, 3)], ref=lambda x: x.copy(), id="same"),
    ]


def _squeeze_ref(x, axis=None):
    out = np.squeeze(x, axis)
    return out.reshape(1) if out.ndim == 0 else out


def _axis_cases():
    cases = [OpCase("expand_dims", shapes=[(2, 3)], attrs={"axis": a},
                    ref=lambda x, axis: np.expand_dims(x, axis), id=f"axis{a}")
             for a in (0, 2, -1, -3)]
    cases += [
        OpCase("squeeze", shapes=[(1, 3, 1, 2)], ref=_squeeze_ref, id="all"),
        OpCase("squeeze", shapes=[(1, 3, 1, 2)], attrs={"axis": (0, -2)}, ref=_squeeze_ref,
               id="axes"),
        OpCase("squeeze", shapes=[(3, 1)], attrs={"axis": 1}, ref=_squeeze_ref, id="int"),
        OpCase("squeeze", shapes=[(1, 1)], ref=_squeeze_ref, id="to-1"),
        OpCase("Flatten", shapes=[(2, 3, 4)], ref=lambda x: x.reshape(x.shape[0], -1)),
        OpCase("flatten", shapes=[(5,)], ref=lambda x: x.reshape(5, 1), id="1d"),
        OpCase("Flatten", shapes=[(2, 3)], ref=lambda x: x.copy(), id="2d"),
    ]
    return cases


def _tile_repeat_cases():
    cases = [OpCase("tile", shapes=[(2, 3)], attrs={"reps": reps},
                    ref=lambda x, reps: np.tile(x, reps), id=f"reps{len(reps)}-{i}")
             for i, reps in enumerate([(2, 3), (3,), (2, 1, 2), (), (1, 1)])]
    cases += [OpCase("repeat", shapes=[(2, 3)], attrs=attrs,
                     ref=lambda x, repeats, axis=None: np.repeat(x, repeats, axis),
                     id=f"r{i}")
              for i, attrs in enumerate([{"repeats": 2}, {"repeats": 3, "axis": 0},
                                         {"repeats": 2, "axis": -1}, {"repeats": 1}])]
    return cases


def _broadcast_like_axes(lhs, rhs, lhs_axes, rhs_axes):
    shape = list(lhs.shape)
    for a, b in zip(lhs_axes, rhs_axes):
        shape[a] = rhs.shape[b]
    return np.broadcast_to(lhs, shape)


def _broadcast_cases():
    return [
        OpCase("broadcast_to", shapes=[(2, 1, 4)], attrs={"shape": (0, 3, 0)},
               ref=lambda x, shape: np.broadcast_to(x, (2, 3, 4)), id="keep"),
        OpCase("broadcast_to", shapes=[(1, 4)], attrs={"shape": (3, 4)},
               ref=lambda x, shape: np.broadcast_to(x, shape), id="full"),
        OpCase("broadcast_axis", shapes=[(2, 1, 1)], attrs={"axis": (1, 2), "size": (3, 4)},
               ref=lambda x, **a: np.broadcast_to(x, (2, 3, 4)), id="two"),
        OpCase("broadcast_axes", shapes=[(2, 1)], attrs={"axis": -1, "size": 5},
               ref=lambda x, **a: np.broadcast_to(x, (2, 5)), id="negative"),
        OpCase("broadcast_like", shapes=[(2, 1, 4), (2, 3, 4)],
               ref=lambda lhs, rhs: np.broadcast_to(lhs, rhs.shape)),
        OpCase("broadcast_like", shapes=[(3, 1), (2, 3, 4)],
               ref=lambda lhs, rhs: np.broadcast_to(lhs, rhs.shape), id="fewer-dims"),
        OpCase("broadcast_like", shapes=[(2, 1, 1), (5, 6, 7)],
               attrs={"lhs_axes": (1, 2), "rhs_axes": (0, -1)}, ref=_broadcast_like_axes,
               id="axes"),
    ]


def _reshape_like_ref(lhs, rhs, lhs_begin=None, lhs_end=None, rhs_begin=None, rhs_end=None):
    lb, le = slice(lhs_begin, lhs_end).indices(lhs.ndim)[:2]
    rb, re = slice(rhs_begin, rhs_end).indices(rhs.ndim)[:2]
    return lhs.reshape(lhs.shape[:lb] + rhs.shape[rb:re] + lhs.shape[le:])


def _misc_cases():
    return [
        OpCase("reverse", shapes=[(2, 3, 4)], attrs={"axis": 1},
               ref=lambda x, axis: np.flip(x, axis)),
        OpCase("flip", shapes=[(2, 3, 4)], attrs={"axis": (0, -1)},
               ref=lambda x, axis: np.flip(x, axis), id="two"),
        OpCase("reshape_like", shapes=[(2, 3, 4), (6, 4)], ref=_reshape_like_ref),
        OpCase("reshape_like", shapes=[(30, 7), (15, 2, 4)],
               attrs={"lhs_begin": 0, "lhs_end": 1, "rhs_begin": 0, "rhs_end": 2},
               ref=_reshape_like_ref, id="range"),
        OpCase("reshape_like", shapes=[(6, 12), (4, 2, 2, 3)],
               attrs={"lhs_begin": -1, "rhs_begin": 1}, ref=_reshape_like_ref, id="negative"),
        OpCase("shape_array", shapes=[(2, 3, 4)],
               ref=lambda x: np.array(x.shape, dtype=np.int64)),
        OpCase("size_array", shapes=[(2, 3, 4)],
               ref=lambda x: np.array([x.size], dtype=np.int64)),
    ]


def _depth_to_space_ref(x, block_size):
    b, (n, c, h, w) = block_size, x.shape
    out = np.empty((n, c // (b * b), h * b, w * b), x.dtype)
    for k, i, j, y, z in itertools.product(range(c // (b * b)), range(b), range(b),
                                           range(h), range(w)):
        out[:, k, y * b + i, z * b + j] = x[:, (i * b + j) * (c // (b * b)) + k, y, z]
    return out


def _space_to_depth_ref(x, block_size):
    b, (n, c, h, w) = block_size, x.shape
    out = np.empty((n, c * b * b, h // b, w // b), x.dtype)
    for k, i, j, y, z in itertools.product(range(c), range(b), range(b),
                                           range(h // b), range(w // b)):
        out[:, (i * b + j) * c + k, y, z] = x[:, k, y * b + i, z * b + j]
    return out


def _pad_ref(x, mode, pad_width, constant_value=0.0):
    pairs = list(zip(pad_width[::2], pad_width[1::2]))
    if mode == "constant":
        return np.pad(x, pairs, mode="constant", constant_values=constant_value)
    return np.pad(x, pairs, mode=mode)


def _unpad_ref(g, mode, pad_width):
    """Adjoint of Pad: add each output gradient into the input element it was copied from."""
    pairs = list(zip(pad_width[::2], pad_width[1::2]))
    shape = tuple(d - b - a for d, (b, a) in zip(g.shape, pairs))
    source = np.arange(int(np.prod(shape))).reshape(shape)
    if mode == "constant":
        source = np.pad(source, pairs, mode="constant", constant_values=-1)
    else:
        source = np.pad(source, pairs, mode=mode)
    out = np.zeros(int(np.prod(shape)), g.dtype)
    used = source >= 0
    np.add.at(out, source[used], g[used])
    return out.reshape(shape)


def _space_pad_cases():
    pads = [("constant", (0, 0, 0, 0, 1, 2, 2, 1), (1, 2, 3, 4)),
            ("edge", (0, 0, 0, 0, 2, 1, 0, 3), (2, 1, 3, 4)),
            ("reflect", (0, 0, 0, 0, 2, 1, 3, 2), (1, 2, 3, 4)),
            ("edge", (0, 0, 0, 0, 1, 0, 2, 2, 0, 1), (1, 2, 2, 3, 2))]
    cases = [OpCase("depth_to_space", shapes=[(2, 8, 2, 3)], attrs={"block_size": 2},
                    ref=_depth_to_space_ref),
             OpCase("space_to_depth", shapes=[(2, 2, 4, 6)], attrs={"block_size": 2},
                    ref=_space_to_depth_ref),
             OpCase("Pad", shapes=[(1, 2, 3, 4)], ref=_pad_ref, id="constant-value",
                    attrs={"mode": "constant", "pad_width": (0, 0, 0, 0, 1, 1, 2, 2),
                           "constant_value": 1.5})]
    for mode, width, shape in pads:
        cases.append(OpCase("pad", shapes=[shape], attrs={"mode": mode, "pad_width": width},
                            ref=_pad_ref, id=f"{mode}{len(shape)}d"))
        padded = tuple(d + b + a for d, b, a in zip(shape, width[::2], width[1::2]))
        cases.append(OpCase("_backward_Pad", shapes=[padded], ref=_unpad_ref,
                            attrs={"mode": mode, "pad_width": width}, id=f"{mode}{len(shape)}d"))
    return cases


CASES = (_reshape_cases() + _transpose_cases() + _axis_cases() + _tile_repeat_cases()
         + _broadcast_cases() + _misc_cases() + _space_pad_cases())
