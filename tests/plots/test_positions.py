"""01's dot-product-by-offset figure draws PE[p] · PE[p + k] from the student's table, and says whether the lines agree."""
from __future__ import annotations

import pytest
import torch

from autograder.authoring.mistakes.positional_encoding import cosine_uses_own_index
from autograder.authoring.reference.positional_encoding import positional_encoding
from course import plots


def drawn_lines(figure) -> dict[str, tuple[list, list]]:
    (ax,) = figure.axes
    return {line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
            for line in ax.get_lines() if not line.get_label().startswith("_")}


def test_each_line_is_the_dot_product_of_a_start_with_its_offsets_and_they_coincide(figures, capsys):
    plots.show_dot_product_by_offset(positional_encoding, d_model=16, starts=(10, 25), reach=10)
    lines = drawn_lines(figures[0])
    assert set(lines) == {"p = 10", "p = 25"}
    pe = positional_encoding(36, 16).double()
    for p in (10, 25):
        offsets, values = lines[f"p = {p}"]
        assert offsets == list(range(-10, 11))
        expected = [float(pe[p] @ pe[p + k]) for k in offsets]
        assert torch.allclose(torch.tensor(values, dtype=torch.float64), torch.tensor(expected, dtype=torch.float64), atol=1e-9)
    first, second = (torch.tensor(lines[name][1]) for name in ("p = 10", "p = 25"))
    assert torch.allclose(first, second, atol=1e-4), "the sinusoidal table's lines lie on top of each other"
    assert "agree to within" in capsys.readouterr().out


def test_a_table_whose_dot_products_depend_on_the_position_draws_lines_apart(figures, capsys):
    plots.show_dot_product_by_offset(cosine_uses_own_index, d_model=16, starts=(10, 25), reach=10)
    first, second = (torch.tensor(values) for _, values in drawn_lines(figures[0]).values())
    assert (first - second).abs().max() > 0.1
    assert "differ by up to" in capsys.readouterr().out


def test_an_unwritten_encoding_gets_a_kind_word_and_no_figure(figures, capsys):
    def stub(max_len, d_model):
        raise NotImplementedError()
    plots.show_dot_product_by_offset(stub)
    assert not figures and "appears once `positional_encoding` is written" in capsys.readouterr().out


def test_only_rope_keeps_the_score_a_function_of_the_offset(figures, capsys):
    """01's RoPE figure: the table's own dot product and the RoPE score are the same at every p (to float32's and
    float64's rounding); the score after adding the table and projecting changes with p, by more than its own size."""
    from autograder.authoring.reference.positional_encoding import offset_rotation, positional_encoding

    plots.show_scores_after_projection(positional_encoding, offset_rotation)
    rows = {line.split()[0]: [float(x) for x in line.split()[-5:]] for line in capsys.readouterr().out.splitlines()[1:]}
    table, projected, rope = rows["table"], rows["added,"], rows["RoPE"]
    assert table[-1] < 1e-5 * abs(table[0]) and rope[-1] < 1e-9 * abs(rope[0])
    assert projected[-1] > max(abs(v) for v in projected[:4]) / 2, "the projected score should vary with p"
    assert len(figures) == 1 and len(figures[0].axes[0].lines) == 3


@pytest.mark.every_cpu
def test_01s_prose_on_adding_quotes_what_its_demo_cell_prints(capsys):
    """'19 of the 128 hold 99% of their energy' and 'about 15%' in 01's 'Add, or put side by side?' are what the cell
    below that text prints (run here with the reference table)."""
    import math
    import re

    import nbformat
    from torch import nn

    from autograder.paths import SOURCE, notebook_path
    from tests.notebooks import grade_id

    cells = {grade_id(c): c.source for c in nbformat.read(notebook_path(SOURCE, "01_positional_encoding"), 4).cells}
    exec(cells["add_demo"], {"torch": torch, "math": math, "nn": nn, "positional_encoding": positional_encoding})
    printed = capsys.readouterr().out
    needed, share = re.search(r"(\d+) of 128 directions hold 99% .* puts (\d+)% of its energy", printed).groups()
    prose = " ".join(cells["add_text"].split())
    assert f"({needed} of the 128 hold 99% of their energy)" in prose and f"about {share}% of its own energy" in prose
    assert f"into those {needed}" in prose
