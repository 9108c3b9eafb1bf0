"""The checkpoint shipped in the package, and the `minigpt-np` command line."""

import json
import subprocess
import sys

import numpy as np
import pytest
from minigpt_np import checkpoint
from minigpt_np.cli import main
from minigpt_np.grammar import grammar
from minigpt_np.lexicon import PAST_SIMPLE
from minigpt_np.sample import generate, topk

SHIPPED = checkpoint.load()


def test_shipped_checkpoint_is_the_card_model_with_its_provenance():
    cfg = SHIPPED.model.config
    assert (cfg.n_layer, cfg.n_head, cfg.n_embd, cfg.head_size, cfg.vocab_size) == (4, 4, 64, 16, 616)
    meta = SHIPPED.meta
    assert meta["command"].startswith("minigpt-np train ") and meta["seed"] == meta["train_config"]["seed"]
    assert meta["steps"] == meta["train_config"]["steps"]
    assert SHIPPED.tokenizer.vocab[1:] == grammar().words


def test_yesterday_i_is_followed_by_past_simple_verbs():
    top = topk(SHIPPED.model, SHIPPED.tokenizer, "Yesterday I", 5)
    assert all(word in PAST_SIMPLE for word, _ in top), top


def test_tomorrow_i_is_followed_by_will():
    assert topk(SHIPPED.model, SHIPPED.tokenizer, "Tomorrow I", 1)[0][0] == "will"


def test_greedy_continuations_are_grammatical():
    g = grammar()
    for prompt in ("Yesterday I", "Tomorrow she", "Every day they", "Right now we", "Last week my"):
        sentence = generate(SHIPPED.model, SHIPPED.tokenizer, prompt)
        assert g.accepts(sentence.split()), sentence


def test_recorded_quality():
    """The metadata's numbers are those of a model that learned the grammar."""
    assert SHIPPED.meta["grammatical_rate"] >= 0.9
    assert SHIPPED.meta["val_loss"] < 2.3


def test_topk_json(capsys):
    assert main(["topk", "Yesterday I", "-k", "5", "--json"]) == 0
    top = json.loads(capsys.readouterr().out)
    assert [set(t) for t in top] == [{"token", "prob"}] * 5
    assert all(t["token"] in PAST_SIMPLE for t in top)
    probs = [t["prob"] for t in top]
    assert probs == sorted(probs, reverse=True) and 0 < sum(probs) <= 1


def test_generate_greedy_and_seeded_sampling(capsys):
    assert main(["generate", "Yesterday I"]) == 0
    greedy = capsys.readouterr().out.strip()
    assert greedy.startswith("Yesterday I ") and greedy.endswith(" .")
    runs = []
    for _ in range(2):
        assert main(["generate", "Tomorrow she", "--sample", "--seed", "3", "-n", "4"]) == 0
        runs.append(capsys.readouterr().out.splitlines())
    assert runs[0] == runs[1] and len(runs[0]) == 4
    assert all(line.startswith("Tomorrow she will ") for line in runs[0])


def test_unknown_prompt_word_is_a_clear_error(capsys):
    assert main(["topk", "Yesterday Iz", "-k", "5"]) == 2
    assert "unknown word(s) ['Iz']" in capsys.readouterr().err


def test_bad_checkpoint_is_a_clear_error(capsys, tmp_path):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"nope")
    assert main(["topk", "Yesterday I", "--checkpoint", str(bad)]) == 2
    assert "not a readable checkpoint" in capsys.readouterr().err


def test_console_script_runs():
    out = subprocess.run([sys.executable, "-m", "minigpt_np.cli", "topk", "Tomorrow I", "-k", "3", "--json"],
                         check=True, capture_output=True, text=True).stdout  # fmt: skip
    assert json.loads(out)[0]["token"] == "will"


@pytest.mark.parametrize("k", [0, 617])
def test_topk_k_out_of_range(k):
    with pytest.raises(ValueError, match="k must be"):
        topk(SHIPPED.model, SHIPPED.tokenizer, "Yesterday I", k)


def test_sampling_needs_an_rng():
    from minigpt_np.sample import continue_batch

    with pytest.raises(ValueError, match="rng"):
        continue_batch(SHIPPED.model, np.zeros((1, 1), np.int64), 1, greedy=False)


def test_package_imports_numpy_only():
    """minigpt_np must not import labtools (or torch): every module, in a fresh process."""
    code = ("import pkgutil, importlib, sys, minigpt_np\n"
            "for m in pkgutil.iter_modules(minigpt_np.__path__): importlib.import_module('minigpt_np.' + m.name)\n"
            "print(sorted({n.split('.')[0] for n in sys.modules} & {'labtools', 'torch', 'scipy'}))")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == "[]"
