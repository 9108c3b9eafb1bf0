"""The probabilistic grammar that makes the training corpus and judges the model's output.

One weighted context-free grammar serves both directions:

- `Grammar.sample(rng)` expands the start symbol, choosing each rule with its weight;
- `Grammar.probability(words)` is the sentence's probability summed over its
  derivations (memoised top-down inside probabilities: for each symbol and start
  position, the probability of deriving each possible end; the grammar has no left
  recursion and no cycles, so this terminates and is exact); `accepts(words)` is
  probability > 0. The mean of -log P per token over held-out sentences is the
  entropy rate a perfect model would reach: the floor of the validation loss.

`english_grammar()` builds it from the tables in `lexicon`. The time adverbial that opens a
sentence fixes the tense (past simple / will + base / present simple / am-is-are + -ing);
the subject fixes agreement in the present tenses; the verb fixes the kind of complement
(a destination, food, a drink, a text, ...), and "a" / "an" follows the next word's sound.
"""

from __future__ import annotations

import bisect
import functools
import random
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import accumulate

from minigpt_np import lexicon as lx

Rule = tuple[tuple[str, ...], float]  # (right-hand side, weight)


@dataclass
class Grammar:
    """A weighted CFG. Symbols that are keys of `rules` are nonterminals; every other
    symbol is a word."""

    rules: dict[str, list[Rule]]
    start: str = "S"
    _cumulative: dict[str, list[float]] = field(init=False, repr=False)

    def __post_init__(self):
        words = {s for alts in self.rules.values() for rhs, _ in alts for s in rhs if s not in self.rules}
        clash = words & set(self.rules)
        assert not clash, f"symbols used as both word and nonterminal: {clash}"
        self._cumulative = {lhs: list(accumulate(w for _, w in alts)) for lhs, alts in self.rules.items()}

    @functools.cached_property
    def words(self) -> list[str]:
        """Every word the grammar can produce, sorted."""
        return sorted(
            {s for alts in self.rules.values() for rhs, _ in alts for s in rhs if s not in self.rules}
        )

    def sample(self, rng: random.Random) -> list[str]:
        """One sentence, as a list of words."""
        out: list[str] = []
        stack = [self.start]
        while stack:  # depth-first, leftmost first
            symbol = stack.pop()
            if symbol not in self.rules:
                out.append(symbol)
                continue
            cum = self._cumulative[symbol]
            rhs, _ = self.rules[symbol][bisect.bisect_right(cum, rng.random() * cum[-1])]
            stack.extend(reversed(rhs))
        return out

    def sentences(self, n: int, seed: int) -> list[list[str]]:
        rng = random.Random(seed)
        return [self.sample(rng) for _ in range(n)]

    def accepts(self, words: list[str]) -> bool:
        """Whether `words` is a complete sentence of the grammar."""
        return self.probability(words) > 0.0

    def probability(self, words: list[str]) -> float:
        """P(sentence) under the grammar, summed over all its derivations (the inside
        probability of the start symbol over the whole sentence); 0 if not a sentence."""
        n = len(words)

        @functools.cache
        def inside(symbol: str, i: int) -> dict[int, float]:
            """end position j -> P(symbol derives words[i:j])."""
            if symbol not in self.rules:
                return {i + 1: 1.0} if i < n and words[i] == symbol else {}
            out: dict[int, float] = defaultdict(float)
            total = self._cumulative[symbol][-1]
            for rhs, weight in self.rules[symbol]:
                spans = {i: weight / total}
                for s in rhs:
                    nxt: dict[int, float] = defaultdict(float)
                    for p, prob in spans.items():
                        for j, q in inside(s, p).items():
                            nxt[j] += prob * q
                    spans = nxt
                    if not spans:
                        break
                for j, prob in spans.items():
                    out[j] += prob
            return dict(out)

        return inside(self.start, 0).get(n, 0.0)


# --- the English-like grammar ------------------------------------------------------------


def _alts(*options, weight: float = 1.0) -> list[Rule]:
    """Rules from options given as strings ("a b" -> ("a", "b")) or tuples."""
    return [(tuple(o.split()) if isinstance(o, str) else tuple(o), weight) for o in options]


def _noun_phrases(rules: dict[str, list[Rule]], kind: str, singular: list[str], plural: list[str]) -> None:
    """NP_<kind> -> a singular or plural noun phrase with an optional adjective.

    Singular: DET_SG [ADJ] N | a/an [ADJ] N, where "a"/"an" agrees with the next word.
    Plural:   DET_PL [ADJ] N_PL.
    """
    adjectives = lx.ADJECTIVES[kind]
    rules[f"N_{kind}_SG"] = _alts(*singular)
    rules[f"N_{kind}_PL"] = _alts(*plural)
    rules[f"ADJ_{kind}"] = _alts(*adjectives)
    indefinite = [(lx.a_or_an(n), n) for n in singular]
    indefinite += [(lx.a_or_an(a), a, f"N_{kind}_SG") for a in adjectives]
    rules[f"INDEF_{kind}"] = _alts(*indefinite)
    rules[f"NP_{kind}_SG"] = (
        _alts(f"DET_SG N_{kind}_SG", weight=2.0)
        + _alts(f"DET_SG ADJ_{kind} N_{kind}_SG", weight=1.0)
        + _alts(f"INDEF_{kind}", weight=2.0)
    )
    rules[f"NP_{kind}_PL"] = _alts(f"DET_PL N_{kind}_PL", weight=2.0) + _alts(
        f"DET_PL ADJ_{kind} N_{kind}_PL"
    )
    rules[f"NP_{kind}"] = _alts(f"NP_{kind}_SG", weight=3.0) + _alts(f"NP_{kind}_PL", weight=2.0)


def _verb_phrases(rules: dict[str, list[Rule]]) -> None:
    """VP_<FORM> -> verb-in-that-form complement [ending], for each verb.

    The complement depends on the verb; motion verbs (DEST) take no location ending
    ("walked to the park in the park" is out)."""
    forms = {"BASE": "base", "3SG": "third_singular", "PAST": "past", "ING": "ing"}
    for form, attr in forms.items():
        rules[f"VP_{form}"] = [
            ((getattr(v, attr), f"COMP_{v.complement}", "END_DEST" if v.complement == "DEST" else "END"), 1.0)
            for v in lx.VERBS
        ]
    rules["COMP_DEST"] = _alts("home") + _alts("to NP_PLACE", weight=3.0)
    for kind in ("FOOD", "DRINK", "TEXT", "ITEM", "PLACE", "ANIMAL", "SHOW"):
        rules[f"COMP_{kind}"] = _alts(f"NP_{kind}")
    rules["COMP_PERSON"] = _alts("OBJ_PERSON")
    rules["COMP_GAME"] = _alts(*lx.GAMES) + _alts(*(("the", i) for i in lx.INSTRUMENTS))
    rules["COMP_NONE"] = _alts(())
    ending = (
        _alts((), weight=4.0) + _alts(*lx.MANNER_ADVERBS, weight=0.2) + _alts("with OBJ_PERSON", weight=1.0)
    )
    rules["END_DEST"] = ending
    rules["END"] = ending + _alts(*((p, "NP_PLACE") for p in lx.LOCATION_PREPOSITIONS), weight=0.4)


def english_grammar() -> Grammar:
    rules: dict[str, list[Rule]] = {}
    by_kind: dict[str, list[lx.Noun]] = {}
    for noun in lx.NOUNS:
        by_kind.setdefault(noun.kind, []).append(noun)
    for kind, nouns in by_kind.items():
        _noun_phrases(rules, kind, [n.singular for n in nouns], [n.plural for n in nouns])
    rules["DET_SG"] = _alts(*lx.DETERMINERS_SINGULAR)
    rules["DET_PL"] = _alts(*lx.DETERMINERS_PLURAL)
    rules["ADJ_DRINK"] = _alts(*lx.ADJECTIVES["DRINK"])
    rules["DRINK"] = _alts(*lx.DRINKS) + _alts("ADJ_DRINK DRINK_NOUN", weight=2.0)
    rules["DRINK_NOUN"] = _alts(*lx.DRINKS)
    rules["NP_DRINK"] = _alts("some DRINK", "the DRINK_NOUN") + _alts(
        *((lx.a_or_an(c), c, "of", "DRINK") for c in lx.DRINK_CONTAINERS), weight=0.5
    )
    _verb_phrases(rules)

    # Subjects by agreement class, and persons as objects.
    rules["SUBJ_1SG"] = _alts("I")
    rules["SUBJ_3SG"] = (
        _alts("he", "she", weight=2.0) + _alts(*lx.NAMES, weight=0.3) + _alts("NP_PERSON_SG", weight=4.0)
    )
    rules["SUBJ_OTHER"] = _alts("you", "we", "they", weight=2.0) + _alts("NP_PERSON_PL", weight=4.0)
    rules["SUBJ"] = _alts("SUBJ_1SG", weight=2.0) + _alts("SUBJ_3SG", "SUBJ_OTHER", weight=3.0)
    rules["OBJ_PERSON"] = (
        _alts("me", "you", "him", "her", "us", "them", weight=1.0)
        + _alts(*lx.NAMES, weight=0.3)
        + _alts("NP_PERSON", weight=4.0)
    )

    # The time adverbial governs the tense.
    for tense, adverbials in lx.ADVERBIALS.items():
        rules[f"ADV_{tense}"] = _alts(*adverbials)
    rules["S"] = [
        (("ADV_PAST", "SUBJ", "VP_PAST", "."), 3.0),
        (("ADV_FUTURE", "SUBJ", "will", "VP_BASE", "."), 3.0),
        (("ADV_HABITUAL", "SUBJ_1SG", "VP_BASE", "."), 1.0),
        (("ADV_HABITUAL", "SUBJ_3SG", "VP_3SG", "."), 1.5),
        (("ADV_HABITUAL", "SUBJ_OTHER", "VP_BASE", "."), 1.5),
        (("ADV_PROGRESSIVE", "SUBJ_1SG", "am", "VP_ING", "."), 0.5),
        (("ADV_PROGRESSIVE", "SUBJ_3SG", "is", "VP_ING", "."), 0.75),
        (("ADV_PROGRESSIVE", "SUBJ_OTHER", "are", "VP_ING", "."), 0.75),
    ]
    return Grammar(rules)


@functools.cache
def grammar() -> Grammar:
    """The corpus grammar (built once)."""
    return english_grammar()
