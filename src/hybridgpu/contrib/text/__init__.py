"""``mx.contrib.text``: token counting (``utils``) and vocabularies (``vocab``), as in MXNet
1.x (the d2l book's ``d2lzh`` builds its vocabularies with them).

Example:
    >>> from hybridgpu.contrib import text
    >>> len(text.vocab.Vocabulary(text.utils.count_tokens_from_str("x y")))
    3
"""

from . import utils, vocab

__all__ = ["utils", "vocab"]
