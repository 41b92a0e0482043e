"""06's lessons say what their cells print: the model trained without a mask, scored as `generate` feeds it, and
count-based n-gram models on the reversal task (issue 28: 06 used to call the leaky model 'worthless' at generation,
which its own numbers contradict)."""
from __future__ import annotations

import re

import nbformat
import pytest
import torch

from autograder.paths import SOURCE, notebook_path
from autograder.reference.reversal import per_position_accuracy, reversal_batch, train_reversal
from autograder.reference.transformer import DecoderOnlyTransformer
from course import plots
from tests.notebooks import grade_id

VOCAB, HALF = 10, 6
CONFIG = dict(vocab_size=VOCAB, d_model=32, n_heads=4, d_ff=64, n_layers=2, max_len=2 * HALF)


def prose(cell_id: str) -> str:
    cells = nbformat.read(notebook_path(SOURCE, "06_reversal"), as_version=4).cells
    return " ".join(next(c for c in cells if grade_id(c) == cell_id).source.split())


class NoMaskTransformer(DecoderOnlyTransformer):
    """06's model with the causal mask taken out, as its leak_run cell defines it."""

    def forward(self, tokens):
        hidden = self.embedding(tokens)
        for layer in self.blocks:
            hidden = layer(hidden, mask=None)
        return self.lm_head(self.norm_final(hidden))


def test_the_leaky_model_read_by_prefixes_is_as_06_says(one_thread, capsys):
    """400 steps each (the notebook trains 1000; the picture is the same): seeing the whole sequence the leaky model
    gets the random first half right; reading prefixes its first half is at chance and its second half mostly
    right, a little below the masked model's; the masked model scores the same both ways."""
    models = {}
    for label, cls in (("causal mask", DecoderOnlyTransformer), ("no mask", NoMaskTransformer)):
        torch.manual_seed(0)
        models[label] = cls(**CONFIG)
        train_reversal(models[label], 400, batch_size=64, half_len=HALF, vocab_size=VOCAB, lr=5e-3)
    batch = reversal_batch(1000, HALF, VOCAB, generator=torch.Generator().manual_seed(1))
    table = plots.compare_teacher_forced_and_prefix(
        models, {label: per_position_accuracy(m, batch) for label, m in models.items()}, batch, HALF, VOCAB)
    leaky, honest = table["no mask"], table["causal mask"]
    assert leaky["teacher-forced"][0] > 0.9, "seeing the whole sequence, the first half is right"
    assert leaky["prefixes only"][0] < 0.15, "reading prefixes, the first half is at chance (10%)"
    assert 0.6 < leaky["prefixes only"][1] < honest["prefixes only"][1], "the second half: mostly right, a little below"
    assert honest["prefixes only"] == pytest.approx(honest["teacher-forced"], abs=0.01), "the mask: the same both ways"
    text = prose("leak_explain")
    assert "worthless" not in text and "a leak does not make a model useless" in text


def test_06s_ngram_numbers_are_what_its_cell_prints(capsys):
    """The prose quotes 25% for a bigram and a trigram, 38% for a 4-gram and no more for a 5-gram, under a 40%
    ceiling; the counts are integers, so the numbers are the same on every CPU."""
    found = plots.show_ngram_baselines(reversal_batch, HALF, VOCAB, 1.0, n_train=200_000)
    printed = capsys.readouterr().out
    assert re.search(r"bigram .*second half 24\.\d%", printed) and "4-gram" in printed
    text = prose("ngram_text")
    assert f"A bigram and a trigram get {round(100 * found[2])}%" in text and round(found[2], 2) == round(found[3], 2)
    assert f"a 4-gram gets {round(100 * found[4])}%" in text and round(100 * found[5]) <= round(100 * found[4])
    ceiling = 2 / 6 + 4 / 6 / VOCAB
    assert f"= {round(100 * ceiling)}\\%" in text and found[4] < ceiling and found[5] < ceiling
