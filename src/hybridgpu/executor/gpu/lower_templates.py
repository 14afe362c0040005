"""The kernel-template part of the lowering (``lower.py``): reductions, softmax, LayerNorm,
pooling and its gradient, the convolution family (im2col + GEMM, direct grouped kernels,
Deconvolution, the weight gradient), BatchNorm in training, Dropout (Philox) and gathers.

``TemplateLowering`` is mixed into the lowering class: each method takes a node, asks
``templates`` for the spec of a kernel that computes it, and emits the steps (or returns
False). The shared scratch region of the convolution family is sized by ``scratch_bytes``.

Example:
    >>> from hybridgpu.compiler.codegen.cuda.window import ConvSpec
    >>> spec = ConvSpec((1, 3, 8, 8), (1, 4, 8, 8), (1, 1), (1, 1), (0, 0), (1, 1), 1, False,
    ...                 "float32")
    >>> conv_as_gemm(spec), pointwise(spec)
    (True, True)
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...compiler.codegen.cuda import ElementwiseSpec, ident, launch_config
from ...compiler.codegen.cuda.batchnorm import generate_batch_norm
from ...compiler.codegen.cuda.ctype import supported
from ...compiler.codegen.cuda.elementwise import BLOCK, MAX_BLOCKS
from ...compiler.codegen.cuda.gather import GatherSpec, gather_tables, generate_gather
from ...compiler.codegen.cuda.philox import generate_dropout
from ...compiler.codegen.cuda.pick import generate_pick
from ...compiler.codegen.cuda.reduce import MAX_GRID, ReduceSpec, generate_reduce
from ...compiler.codegen.cuda.window import (
    generate_col2im,
    generate_conv,
    generate_im2col,
    generate_pool,
    generate_pool_backward,
    generate_swap01,
)
from ...ops.rules import known
from .gemm import row_major_gemm
from .program import ALIGNMENT, Buffer, Ref
from .templates import (
    GEMM_CONV_DTYPES,
    batch_norm_spec,
    conv_spec,
    deconv_spec,
    dropout_spec,
    pick_spec,
    pool_spec,
    reduce_spec,
    wgrad_spec,
)

__all__ = ["TemplateLowering", "scratch_bytes", "conv_as_gemm", "pointwise", "with_config"]


class TemplateLowering:
    """Methods of the lowering that emit kernel templates (see the module docstring)."""

    def _reduce(self, i, node):
        spec = reduce_spec(self.graph, i)
        return spec is not None and self._reduce_launch(spec, i, node)

    def _reduce_launch(self, spec, i, node):
        outs = range(3 if spec.kind == "layernorm" else 1)  # LayerNorm: data, mean, std
        args = [self._buffer((i, k)) for k in outs]
        args += [self._buffer(self.graph.key(e)) for e in node.inputs]
        if self.shape_args and spec.shape and 0 not in spec.axes:
            # the kernel of a batch of 2 (the batch dimension kept in its index arithmetic),
            # taking the row count as an argument: one kernel for every batch size
            two = dataclasses.replace(spec, shape=(2, *spec.shape[1:]), rows_arg=True)
            kernel, _, block = self._cached(two, lambda: generate_reduce(
                two, ident("k", i, "red")))
            self.shaped.add(kernel.name)
            rows = math.prod(d for a, d in enumerate(spec.shape) if a not in spec.axes)
            grid = (max(1, min(rows, MAX_GRID)), 1, 1)
            self._add(kernel, grid, block, [*args, np.int64(rows)], i)
            return True
        kernel, grid, block = self._cached(spec, lambda: generate_reduce(
            spec, ident("k", i, "red")))
        self._add(kernel, grid, block, args, i)
        return True

    def _pool(self, i, node):
        spec = pool_spec(self.graph, i)
        if spec is None:
            return False
        if isinstance(spec, ReduceSpec):
            return self._reduce_launch(spec, i, node)
        if isinstance(spec, ElementwiseSpec):  # global pooling's gradient: out_grad spread
            self._launch(spec, i, "ew", [self.ref((i, 0))], [self.ref(self.graph.key(
                node.inputs[2]))])
            return True
        args = [self._buffer((i, 0))] + [self._buffer(self.graph.key(e)) for e in node.inputs]
        if node.op.name == "_backward_Pooling":
            self._window(("backward", spec), lambda s: generate_pool_backward(
                s, ident("k", i, "poolgrad")), args, i)
        else:
            self._window(("pool", spec), lambda s: generate_pool(s, ident("k", i, "pool")),
                         args, i)
        return True

    def _window(self, key, make, args, i):
        """Launch the window kernel ``make(spec)`` of ``key = (kind, spec)``. With shape
        arguments: the kernel made for batch 1, taking its element count as an argument, so
        every batch size shares it (``window.py``: ``batch_arg``)."""
        kind, spec = key
        if not self.shape_args:
            kernel, grid, block = self._cached(key, lambda: with_config(make(spec)))
            self._add(kernel, grid, block, args, i)
            return
        one = batch_free(spec)
        kernel, _, block = self._cached((kind, one), lambda: with_config(make(one)))
        self.shaped.add(kernel.name)
        total = kernel.work_items * spec.shape[0]
        grid = (max(1, min(MAX_BLOCKS, -(-total // BLOCK))), 1, 1)
        self._add(kernel, grid, block, [*args, np.int64(total)], i)

    def _conv(self, i, node):
        spec = conv_spec(self.graph, i)
        if spec is None:
            return False
        keys = [self.graph.key(e) for e in node.inputs]
        args = [self._buffer((i, 0))] + [self._buffer(k) for k in keys]
        if not conv_as_gemm(spec):
            self._window(("conv", spec), lambda s: generate_conv(s, ident("k", i, "conv")),
                         args, i)
            return True
        n, c, h, w = spec.shape
        _, o, oh, ow = spec.out_shape
        k, p = c * spec.kernel[0] * spec.kernel[1], oh * ow
        col = args[1].ref
        if not pointwise(spec):
            col = Ref.arena(self.col)
            self._window(("im2col", spec), lambda s: generate_im2col(s, ident("k", i, "im2col")),
                         [Buffer(col, spec.dtype, n * k * p), args[1]], i)
        gemm = row_major_gemm(spec.dtype, o, p, k, args[2].ref, False, col, False,
                              args[0].ref, batch=n, node=i)
        self.steps.append(dataclasses.replace(gemm, stride_b=0))  # one weight for all images
        if spec.bias:
            epi = ElementwiseSpec(spec.out_shape, spec.dtype,
                                  [(spec.out_shape, spec.dtype), ((o, 1, 1), spec.dtype)],
                                  [spec.dtype], "out0 = in0 + in1;")
            self._launch(epi, i, "bias", [args[0].ref], [args[0].ref, args[3].ref])
        return True

    def _dropout(self, i, node):
        spec = dropout_spec(self.graph, i, self.is_train)
        if spec is None:
            return False
        outs = [self.ref((i, 0)), self.ref((i, 1))]
        ins = [self.ref(self.graph.key(node.inputs[0]))]
        if isinstance(spec, ElementwiseSpec):  # inactive: the identity and a mask of ones
            self._launch(spec, i, "ew", outs, ins)
            return True
        if self.rng_state is None:
            self.rng_state = self._region(16)
        kernel, grid, block = self._cached(spec, lambda: with_config(
            generate_dropout(spec, ident("k", i, "drop"))))
        args = [Buffer(r, spec.dtype, spec.size) for r in (*outs, *ins)]
        args.append(Buffer(Ref.arena(self.rng_state), "uint64", 2))
        self._add(kernel, grid, block, args, i)
        return True

    def _pick(self, i, node):
        """``pick`` (a label lookup) and its gradient: one thread an output element."""
        spec = pick_spec(self.graph, i)
        if spec is None:
            return False
        kernel, grid, block = self._cached(spec, lambda: with_config(
            generate_pick(spec, ident("k", i, "pick"))))
        # (out, data, index) or (grad, ograd, index): input 0 is the data or the ograd
        args = [self._buffer((i, 0)), self._buffer(self.graph.key(node.inputs[0])),
                self._buffer(self.graph.key(node.inputs[1]))]
        self._add(kernel, grid, block, args, i)
        return True

    def _batch_norm(self, i, node):
        """BatchNorm in training (statistics, moving averages updated in place) and its
        backward: one block a channel."""
        spec = batch_norm_spec(self.graph, i, self.is_train)
        if spec is None:
            return False
        kernel, grid, block = self._cached(spec, lambda: generate_batch_norm(
            spec, ident("k", i, "bn")))
        args = [self._buffer((i, k)) for k in range(3)]
        args += [self._buffer(self.graph.key(e)) for e in node.inputs]
        self._add(kernel, grid, block, args, i)
        return True

    def _gather(self, i, node):
        """An op that only moves elements: one gather kernel an output, with its index table
        (found by probing the op on the host) held by the program as a constant."""
        graph, op = self.graph, node.op
        if (op.elementwise or op.random or op.mode_dependent or op.mutates_aux or op.creation
                or op.needs_host_sync(node.attrs) or not node.inputs):
            return False
        keys = [graph.key(e) for e in node.inputs]
        outs = [(i, k) for k in range(node.num_outputs)]
        dtypes = {str(graph.dtypes.get(k)) for k in keys + outs}
        shapes = [graph.shapes.get(k) for k in keys + outs]
        if len(dtypes) != 1 or not supported(next(iter(dtypes))):
            return False
        if not all(known(s) for s in shapes):
            return False
        tables = gather_tables(op, node.attrs, shapes[:len(keys)])
        if tables is None or len(tables) != len(outs):
            return False
        dtype = next(iter(dtypes))
        in_sizes = tuple(math.prod(s) for s in shapes[:len(keys)])
        for k, (key, table) in enumerate(zip(outs, tables)):
            if table.size != math.prod(graph.shapes[key]):
                return False
            name = f"table{i}o{k}"
            self.constants[name] = table.astype(np.int32)
            spec = GatherSpec(int(table.size), dtype, in_sizes)
            kernel, grid, block = self._cached(spec, lambda spec=spec: with_config(
                generate_gather(spec, ident("k", i, "gather"))))
            args = [self._buffer(key), Buffer(Ref.ext(name), "int32", int(table.size))]
            self._add(kernel, grid, block, args + [self._buffer(k_) for k_ in keys], i)
        return True

    def _deconv(self, i, node):
        """A 2-D Deconvolution: one strided-batched GEMM ``cols = W^T @ x`` (K x P an
        image), then col2im gathering each output element's contributions (+ bias)."""
        spec = deconv_spec(self.graph, i)
        if spec is None:
            return False
        n, f = spec.shape[:2]
        c, h, w = spec.out_shape[1:]
        k = f * spec.kernel[0] * spec.kernel[1]
        keys = [self.graph.key(e) for e in node.inputs]
        args = [self._buffer((i, 0))] + [self._buffer(key) for key in keys]
        cols = Ref.arena(self.col)
        gemm = row_major_gemm(spec.dtype, k, h * w, c, args[2].ref, True, args[1].ref, False,
                              cols, batch=n, node=i)
        self.steps.append(dataclasses.replace(gemm, stride_b=0))
        launch = [args[0], Buffer(cols, spec.dtype, n * k * h * w)] + args[3:4]
        self._window(("col2im", spec), lambda s: generate_col2im(s, ident("k", i, "col2im")),
                     launch, i)
        return True

    def _wgrad(self, i, node):
        """A convolution's weight gradient: im2col of the data as one (K, N*P) matrix, the
        output gradient turned (O, N*P), one GEMM ``dW = g @ col^T``."""
        spec = wgrad_spec(self.graph, i)
        if spec is None:
            return False
        n, c = spec.shape[:2]
        o, oh, ow = spec.out_shape[1:]
        k, p = c * spec.kernel[0] * spec.kernel[1], oh * ow
        g, x = (self._buffer(self.graph.key(e)) for e in node.inputs)
        cols, turned = Ref.arena(self.col), Ref.arena(self.col + aligned_bytes(
            n * k * p, spec.dtype))
        kernel, grid, block = self._cached(("im2col_t", spec), lambda: with_config(
            generate_im2col(spec, ident("k", i, "im2colt"), batch_inner=True)))
        self._add(kernel, grid, block, [Buffer(cols, spec.dtype, n * k * p), x], i)
        swap = ("swap", n, o, p, spec.dtype)
        kernel, grid, block = self._cached(swap, lambda: with_config(
            generate_swap01((n, o, p), spec.dtype, ident("k", i, "swap"))))
        self._add(kernel, grid, block, [Buffer(turned, spec.dtype, n * o * p), g], i)
        self.steps.append(row_major_gemm(spec.dtype, o, k, n * p, turned, False, cols, True,
                                         self.ref((i, 0)), node=i))
        return True

    def _col_region(self):
        """Arena offset of the scratch buffer the convolution family shares (im2col columns,
        a transposed gradient): the largest any node needs, or None."""
        need = 0
        for i, node in enumerate(self.graph.nodes):
            if node.is_variable:
                continue
            need = max(need, scratch_bytes(self.graph, i))
        return self._region(need) if need else None


def batch_free(spec):
    """``spec`` (a PoolSpec or ConvSpec) at batch 1 with ``batch_arg`` set: its kernel's
    source is the same for every batch size."""
    changes = {"shape": (1, *spec.shape[1:]), "batch_arg": True}
    if hasattr(spec, "out_shape"):
        changes["out_shape"] = (1, *spec.out_shape[1:])
    return dataclasses.replace(spec, **changes)


def with_config(kernel):
    """``(kernel, grid, block)`` of a one-thread-an-element kernel."""
    return (kernel, *launch_config(kernel))


def aligned_bytes(count, dtype):
    """Bytes of ``count`` elements of ``dtype``, rounded up to the arena's alignment."""
    size = count * np.dtype(dtype).itemsize
    return -(-size // ALIGNMENT) * ALIGNMENT


def scratch_bytes(graph, i):
    """Scratch bytes node ``i``'s lowering uses (see ``_col_region``); 0 for most nodes."""
    name = graph.nodes[i].op.name
    if name == "Convolution":
        spec = conv_spec(graph, i)
        if spec is None or not conv_as_gemm(spec) or pointwise(spec):
            return 0
        n, c = spec.shape[:2]
        k, p = c * spec.kernel[0] * spec.kernel[1], spec.out_shape[2] * spec.out_shape[3]
        return aligned_bytes(n * k * p, spec.dtype)
    if name == "Deconvolution":
        spec = deconv_spec(graph, i)
        if spec is None:
            return 0
        n, f = spec.shape[:2]
        k, p = f * spec.kernel[0] * spec.kernel[1], spec.out_shape[2] * spec.out_shape[3]
        return aligned_bytes(n * k * p, spec.dtype)
    if name == "_backward_Convolution_weight":
        spec = wgrad_spec(graph, i)
        if spec is None:
            return 0
        n, c = spec.shape[:2]
        o, p = spec.out_shape[1], spec.out_shape[2] * spec.out_shape[3]
        k = c * spec.kernel[0] * spec.kernel[1]
        return aligned_bytes(n * k * p, spec.dtype) + aligned_bytes(n * o * p, spec.dtype)
    return 0


def conv_as_gemm(spec):
    """True when a convolution runs as im2col + cuBLAS (one group, float32/64)."""
    return spec.groups == 1 and spec.dtype in GEMM_CONV_DTYPES


def pointwise(spec):
    """True for a 1x1 convolution with stride 1 and no padding: its input is its im2col."""
    return spec.kernel == (1, 1) and spec.stride == (1, 1) and spec.pad == (0, 0)
