"""``mx.test_utils``: the helpers MXNet 1.x tests import, with MXNet 1.9.1's behaviour.

- ``compare``: ``assert_almost_equal`` and friends with MXNet's per-dtype tolerances, random
  shapes and arrays, the default context;
- ``symbolic``: ``check_symbolic_forward`` / ``check_symbolic_backward`` /
  ``check_numeric_gradient`` / ``check_consistency`` on a bound Symbol;
- ``stats``: chi-square checks of random generators (``verify_generator``);
- ``helpers``: ``environment``, ``discard_stderr``, ``retry``, ``compare_optimizer``, ...

MXNet's ``test_utils`` has no ``__all__``, so ``from mxnet.test_utils import *`` also hands
out the modules it imported (``np``, ``mx``, ``os``, ``sys``, ...), and MXNet's own tests rely
on that; the star import here gives the same names.

Example:
    >>> import numpy as np
    >>> import hybridgpu as mx
    >>> from hybridgpu.test_utils import assert_almost_equal, environment
    >>> assert_almost_equal(mx.nd.array([1.0, 2.0]), np.array([1.0, 2.00001]))
    >>> with environment("HYBRIDGPU_EXAMPLE", "1"):
    ...     pass
"""

import bz2
import errno
import gzip
import json
import logging
import numbers
import os
import platform
import struct
import sys
import time
import traceback
import zipfile
from collections import OrderedDict
from contextlib import contextmanager

import numpy as np
import numpy.random as rnd
import numpy.testing as npt

from ..context import Context, current_context
from ..ndarray import array
from ..symbol import Symbol
from ..util import getenv, setenv, use_np
from . import compare, helpers, stats, symbolic
from .compare import *  # noqa: F403
from .helpers import *  # noqa: F403
from .stats import *  # noqa: F403
from .symbolic import *  # noqa: F403

# MXNet's test_utils does ``import mxnet as mx``: the package, looked up rather than imported
# (it is above this module and is being initialized when this runs)
mx = sys.modules[__name__.partition(".")[0]]

# what MXNet's star import hands out besides its functions (its tests use np, mx, sys, rnd,
# array without importing them)
__all__ = ["time", "gzip", "struct", "traceback", "numbers", "sys", "os", "platform", "errno",
           "logging", "bz2", "zipfile", "json", "np", "npt", "rnd", "mx", "contextmanager",
           "OrderedDict", "Context", "current_context", "array", "Symbol", "use_np", "getenv",
           "setenv"]
__all__ += compare.__all__
__all__ += helpers.__all__
__all__ += stats.__all__
__all__ += symbolic.__all__
