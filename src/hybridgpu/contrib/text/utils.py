"""Token counting for ``mx.contrib.text``.

Example:
    >>> sorted(count_tokens_from_str("a b\\nA b", to_lower=True).items())
    [('a', 2), ('b', 2)]
"""

from __future__ import annotations

import collections
import re

__all__ = ["count_tokens_from_str"]


def count_tokens_from_str(source_str, token_delim=" ", seq_delim="\n", to_lower=False,
                          counter_to_update=None):
    """A ``collections.Counter`` of the tokens of ``source_str``, split at ``token_delim`` and
    ``seq_delim`` (empty tokens dropped), lower-cased if ``to_lower``; added into
    ``counter_to_update`` when given (and that counter returned).

    Example:
        >>> count_tokens_from_str("a,b;a", token_delim=",", seq_delim=";")["a"]
        2
    """
    if not isinstance(source_str, str):
        raise TypeError(f"count_tokens_from_str: source_str must be a str, got "
                        f"{type(source_str).__name__}")
    pattern = f"{re.escape(token_delim)}|{re.escape(seq_delim)}"
    tokens = [t for t in re.split(pattern, source_str) if t]
    if to_lower:
        tokens = [t.lower() for t in tokens]
    if counter_to_update is None:
        return collections.Counter(tokens)
    counter_to_update.update(tokens)
    return counter_to_update
