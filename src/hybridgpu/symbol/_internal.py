"""Symbol functions of the ``_internal`` namespace, generated from the op registry."""

from .register import populate

populate(globals(), "_internal")
