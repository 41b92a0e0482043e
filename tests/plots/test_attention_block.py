"""04's figures draw what they claim: the cells coloured together are the numbers one norm statistic is taken over,
and the head split colours column c as head c // d_head and puts every column back in its place."""
from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

from autograder.authoring.reference.attention_block import LayerNorm
from course import plots


def colours(ax) -> list[list[tuple]]:
    """The colour of every cell of the grid drawn on `ax`, as the image shows it."""
    image = ax.images[0]
    return [[tuple(image.cmap(image.norm(v))) for v in row] for row in image.get_array().tolist()]


def cell_texts(ax) -> dict[tuple[int, int], str]:
    """What is written in each cell (row, column) of the grid on `ax`."""
    return {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}


def ytick_labels(ax) -> list[str]:
    return [label.get_text() for label in ax.get_yticklabels()]


def groups_by_colour(ax) -> set[frozenset]:
    found = {}
    for i, row in enumerate(colours(ax)):
        for j, colour in enumerate(row):
            found.setdefault(colour, set()).add((i, j))
    return {frozenset(cells) for cells in found.values()}


def shared_statistic_groups(normalise, batch: int, tokens: int, d_model: int) -> set[frozenset]:
    """The cells (row = batch item · tokens + token, column = feature) that every input number reaches through
    `normalise`: exactly the numbers it shares a mean and a variance with."""
    x = torch.randn(batch, tokens, d_model, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    n = x.numel()
    jacobian = torch.autograd.functional.jacobian(normalise, x).reshape(n, n)  # [output, input]
    return {frozenset(divmod(k, d_model) for k in jacobian[:, i].abs().gt(1e-12).nonzero().flatten().tolist())
            for i in range(n)}


def batch_norm(v):
    return F.batch_norm(v.transpose(1, 2), None, None, training=True).transpose(1, 2)


@pytest.mark.parametrize(("batch", "tokens", "d_model"), [(2, 3, 8), (3, 2, 5)])
def test_the_norm_figure_colours_together_exactly_the_numbers_one_statistic_is_taken_over(batch, tokens, d_model,
                                                                                         figures):
    plots.show_norm_axes(batch, tokens, d_model)
    (figure,) = figures
    panels = {ax.get_title().split(":")[0]: ax for ax in figure.axes}
    assert set(panels) == {"layer norm", "batch norm"}
    expected = {"layer norm": shared_statistic_groups(lambda v: F.layer_norm(v, (d_model,)), batch, tokens, d_model),
                "batch norm": shared_statistic_groups(batch_norm, batch, tokens, d_model)}
    assert len(expected["layer norm"]) == batch * tokens and len(expected["batch norm"]) == d_model
    for name, ax in panels.items():
        assert groups_by_colour(ax) == expected[name], f"{name}: the colours are not the groups of one statistic"
        assert ytick_labels(ax) == [f"seq {b} · token {t}" for b in range(batch) for t in range(tokens)]


@pytest.mark.parametrize(("d_model", "n_heads", "tokens"), [(8, 4, 3), (12, 3, 4)])
def test_the_head_figure_gives_column_c_to_head_c_over_d_head_and_merges_it_back_in_place(d_model, n_heads, tokens,
                                                                                          figures, capsys):
    d_head = d_model // n_heads
    plots.show_head_split(d_model, n_heads, tokens)
    (figure,) = figures
    grids = {ax.get_label(): ax for ax in figure.axes if ax.images}
    head_colour = {n: colours(grids[f"head {n}"])[0][0] for n in range(n_heads)}
    assert len(set(head_colour.values())) == n_heads, "every head has its own colour"
    for name in ("x", "merged"):
        texts, drawn = cell_texts(grids[name]), colours(grids[name])
        assert texts == {(t, c): str(c) for t in range(tokens) for c in range(d_model)}, f"{name}: a column moved"
        assert all(drawn[t][c] == head_colour[c // d_head] for t in range(tokens) for c in range(d_model)), name
        assert ytick_labels(grids[name]) == [f"t{t}" for t in range(tokens)]
    for n in range(n_heads):
        ax = grids[f"head {n}"]
        assert cell_texts(ax) == {(t, j): str(n * d_head + j) for t in range(tokens) for j in range(d_head)}
        assert all(colour == head_colour[n] for row in colours(ax) for colour in row)
        assert ytick_labels(ax) == [f"t{t}" for t in range(tokens)], "a head holds every token, in order"
    assert "gives back exactly the tensor it started from" in capsys.readouterr().out


def test_the_wrong_split_shows_the_pieces_it_really_takes(figures):
    """view(B, h, T, d_head) on (B, T, d_model) = (1, 3, 8), h = 4: "head" 0 is token 0's columns 0-5, "head" 1 is
    token 0's columns 6-7 and token 1's columns 0-3."""
    plots.show_head_split(8, 4, 3)
    grids = {ax.get_label(): ax for ax in figures[0].axes if ax.images}
    assert ytick_labels(grids["wrong head 0"]) == ["t0", "t0", "t0"]
    assert cell_texts(grids["wrong head 0"]) == {(0, 0): "0", (0, 1): "1", (1, 0): "2", (1, 1): "3",
                                                 (2, 0): "4", (2, 1): "5"}
    assert ytick_labels(grids["wrong head 1"]) == ["t0", "t1", "t1"]
    assert len({c for row in colours(grids["wrong head 0"]) for c in row}) == 3, "three heads' columns in one"


def moved(printed: str) -> dict[str, tuple[float, float]]:
    """The table the comparison prints: case -> (largest change under LayerNorm, under batch norm)."""
    rows = [line.rsplit(maxsplit=2) for line in printed.splitlines() if line.startswith("when ")]
    return {case.strip(): (float(mine), float(theirs)) for case, mine, theirs in rows}


def test_the_norm_comparison_shows_layer_norm_independent_of_the_batch_and_batch_norm_not(figures, capsys):
    plots.compare_layer_norm_with_batch_norm(LayerNorm)
    printed = capsys.readouterr().out
    table = moved(printed)
    assert set(table) == {"when sequence 1 changes", "when it is alone"}
    assert all(mine < 1e-6 and theirs > 0.1 for mine, theirs in table.values()), printed
    mean_off, std_off = map(float, re.findall(r"at most (\S+) away from [01]", printed))
    assert mean_off < 1e-5 and std_off < 1e-4, printed


class NormalisesPerFeature(torch.nn.Module):
    """A wrong LayerNorm: statistics per feature over the batch and the positions."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()

    def forward(self, x):
        return batch_norm(x)


def test_the_norm_comparison_shows_a_layer_norm_over_the_wrong_axes_moving(figures, capsys):
    plots.compare_layer_norm_with_batch_norm(NormalisesPerFeature)
    assert all(mine > 0.1 for mine, _ in moved(capsys.readouterr().out).values())


def test_the_norm_comparison_waits_for_an_unwritten_layer_norm(figures, capsys):
    class Unwritten(torch.nn.Module):
        def __init__(self, d_model, eps=1e-5):
            raise NotImplementedError

    plots.compare_layer_norm_with_batch_norm(Unwritten)
    assert capsys.readouterr().out.startswith("⏳") and not figures
