"""The corpus grammar: what it generates, what it accepts and rejects, the tokenizer."""

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from minigpt_np import lexicon as lx
from minigpt_np.corpus import make_corpus
from minigpt_np.grammar import grammar
from minigpt_np.tokenizer import BOS, Tokenizer

G = grammar()


@pytest.mark.parametrize("sentence", [
    "Yesterday I walked to the market .",
    "Tomorrow she will eat an apple .",
    "Every day they walk home .",
    "Right now the old teachers are writing a long letter in the library .",
    "Last week Anna bought an expensive umbrella .",
    "Usually my brother drinks a cup of hot tea .",
])  # fmt: skip
def test_accepts_grammatical_sentences(sentence):
    assert G.accepts(sentence.split())


@pytest.mark.parametrize("sentence", [
    "Yesterday I will walk home .",  # tense: past adverbial, future verb
    "Yesterday I walk home .",
    "Tomorrow she walks home .",  # future needs will + base
    "Tomorrow she will ate an apple .",
    "Every day she walk home .",  # agreement
    "Every day they walks home .",
    "Right now I is writing a book .",
    "Right now they is writing a book .",
    "Tomorrow she will eat a apple .",  # a / an
    "Tomorrow she will eat an banana .",
    "Tomorrow she will eat the book .",  # complement kind
    "Yesterday I walked to the market",  # no final "."
    "Yesterday I walked to the market . .",
    "Yesterday these teacher walked home .",  # determiner number
    "",
])  # fmt: skip
def test_rejects_ungrammatical_sentences(sentence):
    assert not G.accepts(sentence.split())


@given(seed=st.integers(0, 2**32 - 1))
def test_every_sampled_sentence_is_accepted(seed):
    for s in G.sentences(20, seed):
        assert G.accepts(s), " ".join(s)


@given(seed=st.integers(0, 2**32 - 1))
def test_tense_follows_the_adverbial(seed):
    """After a past adverbial and a subject comes a past-simple verb; after a future one,
    "will"; never a past-simple form in a present or future sentence."""
    past_openers = {a.split()[0] for a in lx.ADVERBIALS["PAST"]}
    for s in G.sentences(50, seed):
        if s[0] in past_openers:
            assert any(w in lx.PAST_SIMPLE for w in s)
        else:
            assert not any(w in lx.PAST_SIMPLE for w in s)


def test_sampling_is_deterministic_for_a_seed():
    assert G.sentences(30, 7) == G.sentences(30, 7)
    assert G.sentences(30, 7) != G.sentences(30, 8)


def test_vocabulary_is_about_600_words():
    assert 550 <= len(G.words) + 1 <= 650


def test_past_simple_forms_are_unambiguous():
    other_forms = {w for v in lx.VERBS for w in (v.base, v.third_singular, v.ing)}
    other_forms |= {w for n in lx.NOUNS for w in (n.singular, n.plural)}
    other_forms |= {a for adjs in lx.ADJECTIVES.values() for a in adjs}
    assert not lx.PAST_SIMPLE & other_forms
    irregular = [v.past for v in lx.VERBS if not v.past.endswith("ed")]
    assert len(irregular) >= 20 and "ate" in irregular and "went" in irregular


def test_corpus_validation_sentences_are_held_out():
    corpus = make_corpus(2000, 200, seed=3)
    assert len(corpus.val_sentences) == 200
    train_sentences = {tuple(s) for s in G.sentences(2000, 3)}
    assert not {tuple(s) for s in corpus.val_sentences} & train_sentences
    assert corpus.train[0] == corpus.tokenizer.bos_id and corpus.val[0] == corpus.tokenizer.bos_id


# --- tokenizer -----------------------------------------------------------------------


TOK = Tokenizer.from_words(G.words)


@given(seed=st.integers(0, 2**32 - 1))
def test_tokenizer_round_trip(seed):
    for s in G.sentences(10, seed):
        text = " ".join(s)
        ids = TOK.encode(text)
        assert ids.dtype == np.int64 and ids[0] == TOK.bos_id and len(ids) == len(s) + 1
        assert TOK.decode(ids) == text
        assert TOK.decode(TOK.encode(s, bos=False)) == text


def test_tokenizer_vocabulary_starts_with_special_tokens():
    assert TOK.vocab[0] == BOS and len(TOK) == len(G.words) + 1


def test_unknown_word_is_a_clear_error():
    with pytest.raises(ValueError, match="'Yesterdayy'"):
        TOK.encode("Yesterdayy I walked .")


def test_decode_out_of_range_id_is_an_error():
    with pytest.raises(ValueError, match="out of range"):
        TOK.decode([1, len(TOK)])


def test_tokenizer_rejects_bad_vocabularies():
    with pytest.raises(ValueError, match="duplicate"):
        Tokenizer([BOS, "a", "a"])
    with pytest.raises(ValueError, match="special"):
        Tokenizer(["a", BOS])


def test_random_sentences_use_only_vocabulary_words():
    rng = random.Random(0)
    words = set(TOK.vocab)
    for _ in range(200):
        assert set(G.sample(rng)) <= words
