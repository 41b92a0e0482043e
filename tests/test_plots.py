"""The figures tell the truth: a correct answer is never shown as wrong, and what a figure claims is what it draws."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from autograder.reference.attention_block import MultiHeadAttention  # noqa: E402
from autograder.reference.masking import causal_mask, masked_attention  # noqa: E402
from course import plots  # noqa: E402


@pytest.fixture
def figures(monkeypatch) -> list:
    """The figures the plots would show, kept instead of shown."""
    shown = []
    monkeypatch.setattr(plt, "show", lambda: shown.append(plt.gcf()))
    yield shown
    plt.close("all")


def mask_after_softmax(Q, K, V, mask=None):
    """A correct masked attention written the other way round: softmax first, then mask and renormalise."""
    weights = torch.softmax(Q @ K.transpose(-2, -1) / Q.shape[-1] ** 0.5, dim=-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(dim=-1, keepdim=True)
    return weights @ V, weights


def leaks_one_step(Q, K, V, mask=None):
    return masked_attention(Q, K, V, None if mask is None else mask | torch.diag(torch.ones(len(mask) - 1), 1).bool())


@pytest.mark.parametrize(("attention", "verdict"), [(masked_attention, "✔ outputs 0 to 4 did not change at all."),
                                                    (mask_after_softmax, "✔ outputs 0 to 4 did not change beyond rounding"),
                                                    (leaks_one_step, "✘ earlier outputs moved")])
def test_the_causality_figure_judges_within_rounding(attention, verdict, figures, capsys):
    plots.show_causality(attention, causal_mask)
    assert capsys.readouterr().out.startswith(verdict)


def test_the_training_plot_shows_every_baseline(figures):
    history = {"step": list(range(100)), "train": [6.0 - 0.005 * i for i in range(100)], "eval_step": [50, 99],
               "val": [5.8, 5.6], "eval_windows": 10}
    plots.show_language_model_training(history, {"unigram": 6.3, "bigram": 4.3}, final=5.6)
    bottom, top = figures[0].axes[0].get_ylim()
    assert bottom < 4.3 and 6.3 < top, "a baseline below the model's curve fell off the chart"


def test_the_heads_figure_shows_untrained_heads_nearly_uniform_then_sharpened(figures, capsys):
    plots.show_attention_heads(MultiHeadAttention, ["the", "tired", "cat", "sat", "on", "the", "warm", "mat"])
    lines = capsys.readouterr().out.splitlines()
    largest = [float(line.split("largest weight is ")[1].split()[0]) for line in lines]
    assert lines[0].startswith("as initialised") and largest[0] < 0.3 < 0.5 < largest[1]
    assert len(figures[0].axes) >= 8, "two rows of four heads"
