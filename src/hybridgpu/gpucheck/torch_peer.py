"""The same model in PyTorch, for side-by-side timings: a hybridgpu block's traced graph run
with ``torch.nn.functional`` on the block's own weights, eagerly or replayed as a CUDA graph
(``static_x.copy_(x); graph.replay(); y = static_y.clone()``, PyTorch's documented way).

Only the ops of the benchmark models are translated (FullyConnected, Convolution, BatchNorm in
inference, Pooling, Activation, Flatten and the elementwise arithmetic of the 8-op chain); an
unknown op raises ``NotImplementedError`` naming it. The peer's output is compared with
hybridgpu's before anything is timed, so a wrong translation can't produce a flattering number.

Example:
    >>> from hybridgpu.gpucheck.torch_peer import TRANSLATED
    >>> "Convolution" in TRANSLATED and "FullyConnected" in TRANSLATED
    True
"""

from __future__ import annotations

from .. import symbol as sym
from ..graph import Graph

__all__ = ["TorchPeer", "TRANSLATED"]


def _fc(F, torch, x, w, b=None, *, num_hidden, no_bias, flatten):
    if flatten and x.dim() > 2:
        x = x.reshape(x.shape[0], -1)
    return F.linear(x, w, b)


def _conv(F, torch, x, w, b=None, *, kernel, stride, dilate, pad, num_group, **_):
    nd = len(kernel)
    fn = {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]
    return fn(x, w, b, stride=tuple(stride) or 1, padding=tuple(pad) or 0,
              dilation=tuple(dilate) or 1, groups=num_group)


def _bn(F, torch, x, gamma, beta, mean, var, *, eps, fix_gamma, **_):
    if fix_gamma:
        gamma = torch.ones_like(gamma)
    return F.batch_norm(x, mean, var, gamma, beta, training=False, eps=eps)


def _pool(F, torch, x, *, kernel, stride, pad, pool_type, global_pool, pooling_convention,
          **_):
    if global_pool:
        return (F.adaptive_max_pool2d if pool_type == "max" else F.adaptive_avg_pool2d)(x, 1)
    stride, pad = tuple(stride) or 1, tuple(pad) or 0
    ceil = pooling_convention == "full"
    if pool_type == "max":
        return F.max_pool2d(x, tuple(kernel), stride, pad, ceil_mode=ceil)
    return F.avg_pool2d(x, tuple(kernel), stride, pad, ceil_mode=ceil, count_include_pad=True)


def _act(F, torch, x, *, act_type):
    return {"relu": F.relu, "sigmoid": torch.sigmoid, "tanh": torch.tanh,
            "softrelu": F.softplus}[act_type](x)


TRANSLATED = {
    "FullyConnected": _fc,
    "Convolution": _conv,
    "BatchNorm": _bn,
    "Pooling": _pool,
    "Activation": _act,
    "relu": lambda F, torch, x: F.relu(x),
    "exp": lambda F, torch, x: torch.exp(x),
    "sqrt": lambda F, torch, x: torch.sqrt(x),
    "Flatten": lambda F, torch, x: x.reshape(x.shape[0], -1),
    "elemwise_add": lambda F, torch, a, b: a + b,
    "broadcast_add": lambda F, torch, a, b: a + b,
    "elemwise_mul": lambda F, torch, a, b: a * b,
    "broadcast_mul": lambda F, torch, a, b: a * b,
    "_plus_scalar": lambda F, torch, x, *, scalar, **_: x + scalar,
    "_minus_scalar": lambda F, torch, x, *, scalar, **_: x - scalar,
    "_mul_scalar": lambda F, torch, x, *, scalar, **_: x * scalar,
}

#: Attributes each translation reads (the rest of an op's attributes are ignored).
_READS = {
    "FullyConnected": ("num_hidden", "no_bias", "flatten"),
    "Convolution": ("kernel", "stride", "dilate", "pad", "num_group"),
    "BatchNorm": ("eps", "fix_gamma"),
    "Pooling": ("kernel", "stride", "pad", "pool_type", "global_pool", "pooling_convention"),
    "Activation": ("act_type",),
    "_plus_scalar": ("scalar",), "_minus_scalar": ("scalar",), "_mul_scalar": ("scalar",),
}


class TorchPeer:
    """``peer(x)`` runs ``block``'s graph in PyTorch on ``device`` (``"cuda"``), with the
    block's parameters (copied once from ``ctx``)."""

    def __init__(self, block, ctx, torch, device="cuda"):
        self.torch = torch
        out = block(sym.var("data"))
        self.graph = Graph(out._outputs if hasattr(out, "_outputs") else out)
        params = {p.name: p.data(ctx).asnumpy() for p in block.collect_params().values()}
        self.weights = {name: torch.from_numpy(value).to(device)
                        for name, value in params.items()}
        for node in self.graph.nodes:
            if not node.is_variable and node.op.name not in TRANSLATED:
                raise NotImplementedError(f"the PyTorch peer has no translation of op "
                                          f"{node.op.name!r}")

    def __call__(self, x):
        import torch.nn.functional as F  # noqa: N812 (PyTorch's own spelling)

        values = {}
        for i, node in enumerate(self.graph.nodes):
            if node.is_variable:
                values[(i, 0)] = x if node.name == "data" else self.weights[node.name]
                continue
            args = [values[self.graph.key(e)] for e in node.inputs]
            attrs = {k: node.attrs[k] for k in _READS.get(node.op.name, ())}
            values[(i, 0)] = TRANSLATED[node.op.name](F, self.torch, *args, **attrs)
        return values[self.graph.key(self.graph.outputs[0])]

    def half(self):
        """Cast the weights to float16, BatchNorm's excepted (kept float32, as MXNet's
        ``cast('float16')`` keeps them); returns the peer."""
        keep = {e.node.name for node in self.graph.nodes
                if not node.is_variable and node.op.name == "BatchNorm"
                for e in node.inputs[1:] if e.node.is_variable}
        self.weights = {name: value if name in keep else value.half()
                        for name, value in self.weights.items()}
        return self

    def cuda_graph(self, example):
        """``call(x) -> y``: replay of a captured CUDA graph, PyTorch's documented way."""
        torch = self.torch
        static_x = example.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                self(static_x)
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_y = self(static_x)

        def call(x):
            static_x.copy_(x)
            graph.replay()
            return static_y.clone()

        return call
