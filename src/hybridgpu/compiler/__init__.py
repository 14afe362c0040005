"""The hybridized engine's compiler: graph passes (``passes/``), code generators
(``codegen/``) and ``pipeline.compile``, which turns a traced Graph into an ``Executable``."""

from .pipeline import Executable, compile_graph

__all__ = ["Executable", "compile_graph"]
