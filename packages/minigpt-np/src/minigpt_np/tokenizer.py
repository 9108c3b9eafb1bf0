"""Word-level tokenizer: one id per word of the grammar, plus the sentence-start token.

Text is split on whitespace ("Yesterday I walked ." -> 4 words). A word outside the
vocabulary is an error, never a silent id.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

BOS = "<bos>"  # starts every sentence; the corpus is a stream "<bos> w w w . <bos> w w ."
SPECIAL_TOKENS = (BOS,)


class Tokenizer:
    def __init__(self, vocab: Sequence[str]):
        vocab = list(vocab)
        if len(set(vocab)) != len(vocab):
            raise ValueError("vocabulary has duplicate tokens")
        if vocab[: len(SPECIAL_TOKENS)] != list(SPECIAL_TOKENS):
            raise ValueError(f"vocabulary must start with the special tokens {SPECIAL_TOKENS}")
        self.vocab = vocab
        self.ids = {w: i for i, w in enumerate(vocab)}
        self.bos_id = self.ids[BOS]

    @classmethod
    def from_words(cls, words: Sequence[str]) -> Tokenizer:
        return cls([*SPECIAL_TOKENS, *sorted(set(words))])

    def __len__(self) -> int:
        return len(self.vocab)

    def encode(self, text: str | Sequence[str], *, bos: bool = True) -> np.ndarray:
        """(T,) int64 ids of the words of `text` (a string or a list of words), with a
        leading <bos> unless bos=False."""
        words = text.split() if isinstance(text, str) else list(text)
        unknown = [w for w in words if w not in self.ids]
        if unknown:
            raise ValueError(f"unknown word(s) {unknown!r}: not in the {len(self)}-token vocabulary")
        return np.array(([self.bos_id] if bos else []) + [self.ids[w] for w in words], dtype=np.int64)

    def decode(self, ids: Sequence[int] | np.ndarray) -> str:
        """Words joined by spaces; <bos> tokens are left out."""
        ids = np.asarray(ids).reshape(-1)
        bad = [int(i) for i in ids if not 0 <= i < len(self)]
        if bad:
            raise ValueError(f"token id(s) {bad} out of range for a {len(self)}-token vocabulary")
        return " ".join(self.vocab[i] for i in ids if i != self.bos_id)

    def encode_stream(self, sentences: Sequence[Sequence[str]]) -> np.ndarray:
        """The training stream: every sentence preceded by <bos>, concatenated."""
        return np.concatenate([self.encode(s) for s in sentences]) if sentences else np.zeros(0, np.int64)
