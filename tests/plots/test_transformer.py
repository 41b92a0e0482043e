"""05's trained cross-attention: the tiny encoder-decoder trained on reversal reads source position S - 1 - t from
target position t, the figure draws exactly the weights the model computes, and an unwritten or broken model gets a
kind word instead of a figure, without stopping the notebook."""
from __future__ import annotations

import re

import pytest
import torch

from autograder.authoring.reference.transformer import EncoderDecoderTransformer
from course.plots import transformer as figure


def cross_attention_of(model, source: torch.Tensor, decoder_input: torch.Tensor) -> torch.Tensor:
    """The weights (B, n_heads, T, S) the last decoder block's cross-attention returns, kept by a hook of this test's
    own (not the figure's)."""
    kept = []
    hook = model.decoder[-1].cross_attn.register_forward_hook(lambda module, inputs, output: kept.append(output[1]))
    try:
        with torch.no_grad():
            model.eval()(source, decoder_input)
    finally:
        hook.remove()
    return kept[0].double()


def tick_labels(axis) -> list[str]:
    return [label.get_text() for label in axis.get_ticklabels()]


@pytest.fixture(scope="module")
def trained():
    """The notebook's run outside grading (REVERSER_STEPS steps, seed 0): the model and what it printed."""
    import contextlib
    import io
    import os

    grading = os.environ.pop("NBGRADER_EXECUTION", None)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stdout(printed):
            model = figure.train_tiny_reverser(EncoderDecoderTransformer)
    finally:
        if grading is not None:
            os.environ["NBGRADER_EXECUTION"] = grading
    return model, printed.getvalue()


def test_the_trained_cross_attention_reads_the_mirrored_source_letter(trained):
    model, printed = trained
    source, decoder_input, labels = figure.reversal_pairs(200, torch.Generator().manual_seed(7))
    assert torch.equal(labels, source.flip(-1)) and (decoder_input[:, 0] == figure.START).all()
    weights = cross_attention_of(model, source, decoder_input).mean(dim=(0, 1))  # (T, S), over sequences and heads
    T = weights.shape[0]
    assert weights.argmax(dim=-1).tolist() == list(range(T - 1, -1, -1)), "every row's strongest key is S - 1 - t"
    assert figure.mirrored_weight(weights).item() > 0.9
    letters = float(re.search(r"([\d.]+)% of the letters right", printed).group(1))
    assert f"{figure.REVERSER_STEPS} steps" in printed and letters > 99, printed


def test_the_figure_draws_the_cross_attention_of_its_example(trained, figures, capsys):
    model, _ = trained
    figure.show_cross_attention(model, source="HDAGBJEC")
    ids = torch.tensor([[figure.LETTERS.index(c) for c in "HDAGBJEC"]])
    decoder_input = torch.tensor([[figure.START] + [figure.LETTERS.index(c) for c in "CEJBGAD"]])
    expected = cross_attention_of(model, ids, decoder_input)[0]  # (n_heads, T, S)
    (fig,) = figures
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == expected.shape[0] == figure.REVERSER["n_heads"], "one map per head"
    for head, ax in enumerate(maps):
        drawn = torch.as_tensor(ax.images[0].get_array(), dtype=torch.float64)
        torch.testing.assert_close(drawn, expected[head], atol=1e-6, rtol=0)
        assert f"{figure.mirrored_weight(expected[head]).item():.2f}" in ax.get_title()
    assert tick_labels(maps[0].xaxis) == [f"{s}: {c}" for s, c in enumerate("HDAGBJEC")]
    assert tick_labels(maps[0].yaxis) == ["0: <s> → C", "1: C → E", "2: E → J", "3: J → B", "4: B → G", "5: G → A",
                                          "6: A → D", "7: D → H"]
    printed = [float(w) for w in re.findall(r"head \d ([\d.]+)", capsys.readouterr().out)]
    assert printed == pytest.approx(figure.mirrored_weight(expected).tolist(), abs=0.006)
    assert not model.decoder[-1].cross_attn._forward_hooks, "the figure removes its hook"


def test_a_graded_run_is_shorter_and_still_learns(monkeypatch, capsys):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert figure.REVERSER_STEPS_GRADED < figure.REVERSER_STEPS
    assert figure.train_tiny_reverser(EncoderDecoderTransformer) is not None
    printed = capsys.readouterr().out
    assert f"{figure.REVERSER_STEPS_GRADED} steps" in printed
    assert float(re.search(r"([\d.]+)% of the letters right", printed).group(1)) > 95, printed


class Unwritten(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        raise NotImplementedError()


class ForwardUnwritten(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.lm_head = torch.nn.Linear(2, 2)

    def forward(self, src, tgt, src_lengths=None):
        raise NotImplementedError()


def without_progress(printed: str) -> str:
    """What a cell printed, without the training's progress bar (its lines start with a carriage return)."""
    return re.sub(r"\rtraining:[^\r\n]*", "", printed).lstrip("\n")


@pytest.mark.parametrize("model_class", [Unwritten, ForwardUnwritten], ids=["__init__", "forward"])
def test_an_unwritten_model_gets_a_kind_word_and_no_figure(model_class, figures, capsys):
    assert figure.train_tiny_reverser(model_class, steps=3) is None
    figure.show_cross_attention(None)
    assert without_progress(capsys.readouterr().out) == \
        "⏳ This figure appears once `EncoderDecoderTransformer` is written.\n"
    assert not figures


class Broken(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        self.lm_head = torch.nn.Linear(32, 11)

    def forward(self, src, tgt, src_lengths=None):
        return self.lm_head(torch.zeros(*tgt.shape, 31))  # one feature short: a shape error


def test_a_broken_model_is_named_without_stopping_the_notebook(figures, capsys):
    threads = torch.get_num_threads()
    assert figure.train_tiny_reverser(Broken, steps=3) is None
    printed = without_progress(capsys.readouterr().out)
    assert printed.startswith("⏳ Your EncoderDecoderTransformer raised RuntimeError while the tiny model was training")
    assert not figures and torch.get_num_threads() == threads, "the thread count is restored"


class WithoutWeights(torch.nn.Module):
    """A decoder whose cross-attention returns only its output."""

    def __init__(self):
        super().__init__()
        block = torch.nn.Module()
        block.cross_attn = torch.nn.Linear(4, 4)
        self.decoder = torch.nn.ModuleList([block])

    def forward(self, src, tgt, src_lengths=None):
        return self.decoder[0].cross_attn(torch.zeros(*tgt.shape, 4))


@pytest.mark.parametrize(("model", "said"), [(torch.nn.Linear(2, 2), "has no such submodule"),
                                             (WithoutWeights(), "to return `(output, weights)`")],
                         ids=["no decoder", "no weights"])
def test_the_figure_explains_what_it_cannot_read(model, said, figures, capsys):
    figure.show_cross_attention(model)
    printed = capsys.readouterr().out
    assert printed.startswith("⏳") and said in printed and not figures


def test_no_label_of_the_flow_diagram_crosses_an_arrow_or_another_label(figures):
    """Every text's box, on the drawn figure, is clear of every arrow's line and of every other text's box (a box's
    own label sits inside it, which is fine: boxes are patches, not texts)."""
    import numpy as np
    from matplotlib.text import Annotation

    figure.show_encoder_decoder_flow()
    (drawn,) = figures
    drawn.canvas.draw()
    renderer = drawn.canvas.get_renderer()
    ax = drawn.axes[0]
    labels = [t for t in ax.texts if not isinstance(t, Annotation) and t.get_text().strip()]
    boxes = {t.get_text(): t.get_window_extent(renderer).padded(-1) for t in labels}
    arrows = [a for a in ax.texts if isinstance(a, Annotation)]
    assert len(arrows) >= 10 and len(labels) >= 15
    for arrow in arrows:
        start, end = ax.transData.transform([arrow.xyann, arrow.xy])
        points = [start + (end - start) * f for f in np.linspace(0, 1, 200)]
        for text, box in boxes.items():
            assert not any(box.contains(*p) for p in points), f"the label {text!r} lies on an arrow"
    names = list(boxes)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not boxes[a].overlaps(boxes[b]), f"the labels {a!r} and {b!r} overlap"


def test_the_teacher_forcing_demo_compares_the_untrained_loss_with_a_uniform_guess_truthfully(capsys):
    """05's untrained model scores 2.649 nats against ln 7 = 1.946: the line says it is worse than a uniform guess,
    and by how much, from the numbers it prints."""
    import math

    import matplotlib.pyplot as plt

    torch.manual_seed(0)
    figure.show_teacher_forcing(EncoderDecoderTransformer)
    plt.close("all")
    line = capsys.readouterr().out.splitlines()[-1]
    loss, uniform, share = (float(x) for x in re.search(
        r"loss of this untrained model: ([\d.]+) nats.* scores ln\(7\) = ([\d.]+), so the model is (\d+)%", line).groups())
    assert uniform == pytest.approx(math.log(7), abs=5e-4)
    assert share == round(100 * (loss / uniform - 1))
    assert ("worse than a uniform guess" in line) == (loss > uniform)
