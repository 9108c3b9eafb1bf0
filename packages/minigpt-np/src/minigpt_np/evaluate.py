"""How well a model learned the grammar: the numbers a checkpoint's metadata records.

- val_loss: mean next-token cross-entropy on the held-out sentences;
- grammar_entropy: the floor of that loss, the grammar's own entropy per token on the
  same sentences (sum of -log P(sentence) over their tokens, <bos> included);
- grammatical_rate: see `sample.grammatical_rate`;
- top5: the five most likely next words after each probe prompt.
"""

from __future__ import annotations

import math

from minigpt_np.corpus import Corpus
from minigpt_np.grammar import grammar
from minigpt_np.model import MiniGPT
from minigpt_np.sample import grammatical_rate, topk
from minigpt_np.train import validation_loss

PROBES = ("Yesterday I", "Tomorrow I")


def quality(model: MiniGPT, corpus: Corpus, seed: int) -> dict:
    report = grammatical_rate(model, corpus.tokenizer, corpus.val_sentences, seed=seed)
    g = grammar()
    log_p = sum(math.log(g.probability(s)) for s in corpus.val_sentences)
    return {
        "val_loss": validation_loss(model, corpus.val),
        "grammar_entropy": -log_p / sum(len(s) + 1 for s in corpus.val_sentences),
        "grammatical_rate": report.rate,
        "grammatical_n": report.n,
        "ungrammatical_examples": report.to_dict(5)["ungrammatical_examples"],
        "top5": {p: topk(model, corpus.tokenizer, p, 5) for p in PROBES},
    }
