"""``gluon.contrib.nn.SyncBatchNorm``: MXNet's cross-device BatchNorm layer (GluonCV builds
its detection and segmentation backbones with it).

MXNet pools the batch statistics of the ``num_devices`` devices it runs on at once; hybridgpu
runs each device's forward on its own, so with one device the numbers are MXNet's and with
several each device normalizes with its own batch's statistics (as ``nn.BatchNorm``).

Example:
    >>> import hybridgpu as mx
    >>> bn = SyncBatchNorm(in_channels=2, num_devices=1)
    >>> bn.initialize()
    >>> bn(mx.nd.ones((1, 2, 3, 3))).shape
    (1, 2, 3, 3)
"""

from __future__ import annotations

import warnings

from ... import nn
from ...nn.basic_layers import _run_op

__all__ = ["SyncBatchNorm"]


class SyncBatchNorm(nn.BatchNorm):
    """BatchNorm over the channel axis 1 whose op is ``contrib.SyncBatchNorm`` (its JSON and
    parameter names are MXNet's)."""

    def __init__(self, in_channels=0, num_devices=None, momentum=0.9, epsilon=1e-5,
                 center=True, scale=True, use_global_stats=False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", **kwargs):
        super().__init__(axis=1, momentum=momentum, epsilon=epsilon, center=center,
                         scale=scale, use_global_stats=use_global_stats,
                         beta_initializer=beta_initializer, gamma_initializer=gamma_initializer,
                         running_mean_initializer=running_mean_initializer,
                         running_variance_initializer=running_variance_initializer,
                         in_channels=in_channels, **kwargs)
        if num_devices is None:
            num_devices = self._get_num_devices()
        self._kwargs = {"eps": epsilon, "momentum": momentum, "fix_gamma": not scale,
                        "use_global_stats": use_global_stats, "ndev": num_devices,
                        "key": self.prefix}

    def _get_num_devices(self):
        from ....context import num_gpus

        warnings.warn("Caution using SyncBatchNorm: if not using all the GPUs, please "
                      "mannually set num_devices", UserWarning, stacklevel=3)
        return max(num_gpus(), 1)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        return _run_op(self, F.contrib.SyncBatchNorm, x, gamma, beta, running_mean,
                       running_var, name="fwd", **self._kwargs)
