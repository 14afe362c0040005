"""``Vocabulary``: token <-> index for ``mx.contrib.text``, MXNet 1.x's ordering: the unknown
token at 0, then the reserved tokens, then the counted tokens by falling frequency (ties in
token order), cut at ``most_freq_count`` and ``min_freq``.

Example:
    >>> import collections
    >>> v = Vocabulary(collections.Counter("abbccc"), reserved_tokens=["<pad>"])
    >>> v.idx_to_token, v.to_indices(["c", "z"]), v.to_tokens(1)
    (['<unk>', '<pad>', 'c', 'b', 'a'], [2, 0], '<pad>')
"""

from __future__ import annotations

import collections

__all__ = ["Vocabulary"]

UNKNOWN_IDX = 0


class Vocabulary:
    """Indexes the unknown token, ``reserved_tokens`` and the keys of ``counter``."""

    def __init__(self, counter=None, most_freq_count=None, min_freq=1, unknown_token="<unk>",
                 reserved_tokens=None):
        if min_freq <= 0:
            raise ValueError(f"Vocabulary: min_freq must be > 0, got {min_freq}")
        if reserved_tokens is not None:
            if unknown_token in reserved_tokens:
                raise ValueError(f"Vocabulary: reserved_tokens cannot hold the unknown token "
                                 f"{unknown_token!r}")
            if len(set(reserved_tokens)) != len(reserved_tokens):
                raise ValueError(f"Vocabulary: reserved_tokens {reserved_tokens} hold a token "
                                 "twice")
        self._unknown_token = unknown_token
        self._reserved_tokens = None if reserved_tokens is None else list(reserved_tokens)
        self._idx_to_token = [unknown_token, *(reserved_tokens or ())]
        self._token_to_idx = {t: i for i, t in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter_keys(counter, most_freq_count, min_freq)

    def _index_counter_keys(self, counter, most_freq_count, min_freq):
        if not isinstance(counter, collections.Counter):
            raise TypeError(f"Vocabulary: counter must be a collections.Counter, got "
                            f"{type(counter).__name__}")
        special = set(self._idx_to_token)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        by_freq = sorted(sorted(counter.items(), key=lambda kv: kv[0]),
                         key=lambda kv: kv[1], reverse=True)
        for token, freq in by_freq:
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token not in special:
                self._token_to_idx[token] = len(self._idx_to_token)
                self._idx_to_token.append(token)

    def __len__(self):
        return len(self._idx_to_token)

    @property
    def token_to_idx(self):
        """``{token: index}``."""
        return self._token_to_idx

    @property
    def idx_to_token(self):
        """The tokens by index."""
        return self._idx_to_token

    @property
    def unknown_token(self):
        """The token every unknown token maps to (index 0)."""
        return self._unknown_token

    @property
    def reserved_tokens(self):
        """The reserved tokens (indices 1..), or None."""
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token, or the list of indices of a list of tokens (unknown: 0)."""
        if isinstance(tokens, list):
            return [self._token_to_idx.get(t, UNKNOWN_IDX) for t in tokens]
        return self._token_to_idx.get(tokens, UNKNOWN_IDX)

    def to_tokens(self, indices):
        """The token at an index, or the list of tokens at a list of indices."""
        single = not isinstance(indices, list)
        out = []
        for idx in [indices] if single else indices:
            if not isinstance(idx, int) or not 0 <= idx < len(self._idx_to_token):
                raise ValueError(f"Vocabulary: token index {idx!r} is invalid (the vocabulary "
                                 f"has {len(self._idx_to_token)} tokens)")
            out.append(self._idx_to_token[idx])
        return out[0] if single else out
