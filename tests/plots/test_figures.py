"""The figures tell the truth: a correct answer is never shown as wrong, and what a figure claims is what it draws."""
from __future__ import annotations

import pytest
import torch

from autograder.authoring.reference.attention_block import MultiHeadAttention
from autograder.authoring.reference.masking import causal_mask, masked_attention
from course import plots


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


def test_the_training_plot_marks_the_best_validation_and_shades_what_came_after(figures):
    history = {"step": list(range(1, 401)), "train": [6.0 - 0.01 * i for i in range(400)],
               "eval_step": [100, 200, 300, 400], "val": [5.0, 4.4, 4.6, 6.9], "eval_windows": 10,
               "best_step": 200, "best_val": 4.4, "restored": True, "stopped_early": True}
    plots.show_language_model_training(history, {"unigram": 6.3, "bigram": 4.3}, final=4.4)
    ax = figures[0].axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert "best validation 4.40 at step 200 (the weights kept)" in labels
    assert "after the best: validation no longer improved (stopped early)" in labels
    (shade,) = [p for p in ax.patches]
    assert shade.get_x() == 200 and shade.get_width() == 200, "the shading runs from the best step to the last"
    assert ax.get_ylim()[1] > 6.9, "a validation curve that climbs stays on the chart"


def test_the_training_plot_shades_nothing_when_the_last_validation_is_the_best(figures):
    history = {"step": list(range(1, 201)), "train": [6.0 - 0.01 * i for i in range(200)], "eval_step": [100, 200],
               "val": [5.0, 4.4], "eval_windows": 10, "best_step": 200, "best_val": 4.4, "restored": False}
    plots.show_language_model_training(history, {"unigram": 6.3, "bigram": 4.3}, final=4.4)
    ax = figures[0].axes[0]
    assert not ax.patches and "best validation 4.40 at step 200 (the last weights)" in ax.get_legend_handles_labels()[1]


def test_the_heads_figure_shows_untrained_heads_nearly_uniform_then_sharpened(figures, capsys):
    plots.show_attention_heads(MultiHeadAttention, ["the", "tired", "cat", "sat", "on", "the", "warm", "mat"])
    lines = capsys.readouterr().out.splitlines()
    largest = [float(line.split("largest weight is ")[1].split()[0]) for line in lines]
    assert lines[0].startswith("as initialised") and largest[0] < 0.3 < 0.5 < largest[1]
    assert sum(1 for ax in figures[0].axes if ax.images) == 8, "two rows of four heads"


def best_mirror_weight(printed: str) -> float:
    """The value of the clearest head, from the last line show_trained_attention prints."""
    return float(printed.strip().splitlines()[-1].rsplit("with ", 1)[1].rstrip("."))


def small_reversal_model(seed: int):
    """A one-layer DecoderOnlyTransformer for reversal of 4 tokens out of 6, untrained."""
    from autograder.authoring.reference.transformer import DecoderOnlyTransformer

    torch.manual_seed(seed)
    return DecoderOnlyTransformer(vocab_size=6, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=8)


def test_the_trained_attention_figure_finds_the_mirror_after_training_and_not_before(figures, capsys, one_thread,
                                                                                    reversal_states):
    """Notebook 06's model before and after its training run (seed 0, 1000 steps: trained once per run and shared
    with test_reversal_lessons.py, tests/plots/conftest.py)."""
    from autograder.authoring.reference.reversal import reversal_batch
    from tests.plots import trained_reversal

    model = trained_reversal.untrained("causal mask")
    batch = reversal_batch(200, 6, 10, generator=torch.Generator().manual_seed(1))
    plots.show_trained_attention(model, batch, half_len=6)
    untrained = best_mirror_weight(capsys.readouterr().out)
    model = trained_reversal.trained(reversal_states, "causal mask")
    plots.show_trained_attention(model, batch, half_len=6)
    trained = best_mirror_weight(capsys.readouterr().out)
    assert untrained < 0.4 and trained > 0.5, (untrained, trained)
    assert len(figures) == 2 and len(figures[1].axes) >= 8, "one map per head and layer"
    assert model.training and not model.blocks[0].attn._forward_hooks, "mode restored, hooks removed"


def test_the_trained_attention_figure_removes_its_hooks_when_the_model_fails(figures):
    model = small_reversal_model(seed=0).eval()

    def broken(*args, **kwargs):
        raise RuntimeError("a bug after the attention")

    model.lm_head.forward = broken
    with pytest.raises(RuntimeError):
        plots.show_trained_attention(model, torch.zeros(2, 8, dtype=torch.long), half_len=4)
    assert not model.blocks[0].attn._forward_hooks and not model.training


class BlocksWithoutAttn(torch.nn.Module):
    """A model with `blocks` whose submodules are named otherwise than `attn`."""

    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([torch.nn.Linear(8, 8)])

    def forward(self, tokens):
        return self.blocks[0](tokens.float())


@pytest.mark.parametrize("model", [torch.nn.Linear(8, 8), BlocksWithoutAttn()], ids=["no blocks", "no attn"])
def test_the_trained_attention_figure_explains_a_model_without_attention_blocks(model, figures, capsys):
    plots.show_trained_attention(model, torch.zeros(2, 8, dtype=torch.long), half_len=4)
    assert capsys.readouterr().out.startswith("⏳") and not figures


def test_the_trained_attention_figure_waits_for_an_unwritten_model(figures, capsys):
    class Unwritten(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = small_reversal_model(seed=0).blocks

        def forward(self, tokens):
            raise NotImplementedError

    plots.show_trained_attention(Unwritten(), torch.zeros(2, 8, dtype=torch.long), half_len=4)
    assert capsys.readouterr().out.startswith("⏳") and not figures


def test_the_padding_figure_has_a_legend_in_the_colours_it_draws(figures):
    from autograder.authoring.reference.masking import padding_mask
    plots.show_padding_mask(padding_mask, causal_mask)
    (figure,) = figures
    (legend,) = figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    assert labels[0].startswith("True") and labels[1].startswith("False")
    padding_axes = figure.axes[0]
    image = padding_axes.images[0]
    drawn = {bool(value): tuple(image.to_rgba(value)) for value in image.get_array().ravel()}  # True/False cells
    for patch, value in zip(legend.get_patches(), (True, False)):
        assert tuple(patch.get_facecolor()) == pytest.approx(drawn[value]), f"the {value} swatch is not its cells' colour"


class _Words:
    """A vocabulary of made-up words for the frequency figure: id i is `w<i>`, id 0 `<unk>`."""

    def decode(self, ids):
        return ["<unk>" if i == 0 else f"w{i}" for i in ids]


def test_every_label_of_the_token_frequency_figure_is_inside_its_axes(figures):
    """Zipf-like counts over 30,000 ids, as many as Shakespeare has: the labels at ranks 1, 5, 50, 500 and 5000 are all drawn inside the plot (the
    rank-1 label used to stick out at the top)."""
    counts = torch.cat([torch.zeros(1), (100000 / torch.arange(1, 30001, dtype=torch.float64)).floor() + 1])
    plots.show_token_frequencies(counts.long(), _Words())
    (figure,) = figures
    figure.canvas.draw()
    ax = figure.axes[0]
    inside = ax.get_window_extent()
    labels = [t for t in ax.texts if t.get_text()]
    assert [t.get_text().split()[-1] for t in labels] == ["1)", "5)", "50)", "500)", "5000)"]
    for text in labels:
        box = text.get_window_extent()
        assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1, \
            f"{text.get_text()!r} sticks out of the plot"


def test_sharpening_multiplies_every_score_by_nine():
    """04's bottom row: W_q and W_k, weights and biases, times 3 make every score exactly 9 times larger (scaling the
    weights alone gave ratios from -4.0 to 18.6)."""
    from course.plots.attention_block import random_attention, scaled_scores

    x = torch.randn(2, 8, 16, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    plain, sharp = (scaled_scores(random_attention(MultiHeadAttention, 16, 4, 4, sharpen=s).double(), x, 4)[1]
                    for s in (1.0, 3.0))
    assert torch.allclose(sharp, 9 * plain, rtol=1e-6, atol=1e-5)  # float32 weights times 3, rounded once each


@pytest.mark.every_cpu
def test_04s_prose_quotes_the_numbers_its_heads_figure_prints(figures, capsys):
    """Every number of 04's 'What the heads look at' paragraph is the one its figure prints (to the digits quoted)."""
    import re

    import nbformat

    from autograder.paths import SOURCE, notebook_path
    from tests.notebooks import grade_id

    words = ["the", "tired", "cat", "sat", "on", "the", "warm", "mat"]
    plots.show_attention_heads(MultiHeadAttention, words)
    initial, sharpened = capsys.readouterr().out.splitlines()
    number = lambda pattern, line: re.search(pattern, line).group(1)  # noqa: E731
    measured = {"variance": number(r"variance ([\d.]+)", initial),
                "deviation": number(r"standard deviation of ([\d.]+)", initial),
                "largest": number(r"largest weight is ([\d.]+)", initial),
                "sharpened deviation": number(r"standard deviation of ([\d.]+)", sharpened)}
    notebook = nbformat.read(notebook_path(SOURCE, "04_attention_block"), as_version=4)
    prose = " ".join(next(c for c in notebook.cells if grade_id(c) == "heads_figure_text").source.split())
    assert f"variance {measured['variance']} for the queries" in prose
    assert f"standard deviation of only {measured['deviation']}" in prose
    assert f"largest weight is {measured['largest']} on average" in prose
    assert f"goes from {measured['deviation']} to {measured['sharpened deviation']}" in prose
    assert abs(float(measured["variance"]) - 1 / 3) < 0.05, "the prose says 'about 1/3'"
