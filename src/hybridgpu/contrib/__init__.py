"""``mx.contrib``: the parts of MXNet's contrib package that Gluon-era code imports: ``amp``
(mixed-precision training's loss scaling) and ``text`` (vocabularies, token counting). The
contrib ops themselves are ``nd.contrib`` / ``sym.contrib`` (``contrib.ndarray`` /
``contrib.symbol`` here, as in MXNet).

Example:
    >>> from hybridgpu.contrib import text
    >>> text.vocab.Vocabulary(text.utils.count_tokens_from_str("a b a")).idx_to_token
    ['<unk>', 'a', 'b']
"""

from ..ndarray import contrib as ndarray
from ..symbol import contrib as symbol
from . import amp, text

__all__ = ["amp", "text", "ndarray", "symbol"]
