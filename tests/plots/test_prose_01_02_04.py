"""Issue 38 in notebooks 01 and 02: 01 says the table carries every offset and leaves what a layer makes of it to the
RoPE section, asks Question 1b after that section (with an answer key whose claims hold for the reference table),
and 02 says which variance `nn.Linear`'s starting weights give (measured here)."""
from __future__ import annotations

import nbformat
import pytest
import torch
from torch import nn

from autograder.paths import RELEASE, SOURCE, notebook_path
from autograder.authoring.reference.positional_encoding import offset_rotation, positional_encoding
from tests.notebooks import grade_id

PE_NOTEBOOK = "01_positional_encoding"


def cells_of(folder, notebook: str) -> dict[str, nbformat.NotebookNode]:
    return {grade_id(c): c for c in nbformat.read(notebook_path(folder, notebook), as_version=4).cells}


def prose(notebook: str, cell: str) -> str:
    return " ".join(cells_of(SOURCE, notebook)[cell].source.split())


def spread(values: list[float]) -> float:
    return max(values) - min(values)


def test_01_says_the_table_carries_the_offset_and_leaves_the_layer_to_the_rope_section():
    """'a layer of the model can learn it once' pulled against the RoPE section, which measures that the property is
    gone after the projections: the sentence now claims the table's property only and points to that section."""
    text = prose(PE_NOTEBOOK, "offset_explain")
    assert "learn it once" not in text
    assert ("the table itself carries every offset. Whether attention can still read the offset once its learned "
            "projections have mixed the columns is another matter; the section on RoPE below measures it.") in text
    ids = list(cells_of(SOURCE, PE_NOTEBOOK))
    assert ids.index("offset_explain") < ids.index("rope_text") < ids.index("rope_figure")


def test_01s_question_1b_is_a_written_question_after_the_rope_section():
    """Curriculum question (a) is asked of the student: prompt, answer cell (2 points, graded by hand, a model answer
    for the grader) and hints, shaped like Question 1's, after the RoPE figure and before 'Learned positions'."""
    cells = cells_of(SOURCE, PE_NOTEBOOK)
    ids = list(cells)
    at = ids.index("q1b_prompt")
    assert ids[at: at + 3] == ["q1b_prompt", "q1b_relative_positions", "hints_q1b_relative_positions"]
    assert ids.index("rope_figure") < at < ids.index("learned_text")
    prompt, answer, hints = (cells[i] for i in ids[at: at + 3])
    assert prompt.source.startswith("**Question 1b (manually graded).**")
    for new, model in ((prompt, "q1_prompt"), (answer, "q1_rnn_vs_transformer"), (hints, "hints_q1_rnn_vs_transformer")):
        shape = dict(cells[model].metadata["nbgrader"], grade_id=grade_id(new))
        assert new.cell_type == "markdown" and new.metadata["nbgrader"] == shape, grade_id(new)
    assert answer.metadata["nbgrader"]["points"] == 2
    assert answer.source.startswith("### BEGIN SOLUTION\n") and answer.source.endswith("\n### END SOLUTION")
    assert cells_of(RELEASE, PE_NOTEBOOK)["q1b_relative_positions"].source == "YOUR ANSWER HERE"


@pytest.mark.every_cpu
def test_question_1bs_answer_key_holds_for_the_reference_table():
    """What the key tells the grader, for one word e at p and p + 3 (d_model = 64, random W_q and W_k, p = 0 ... 300):
    both cross terms and the position term move with p; the position term stays fixed for A = I and for an A made of
    scaled rotations of each pair; the RoPE score is fixed for every p, and differs between the key 3 before and 3
    after, while the table's own x . M_k x does not."""
    d_model, k, starts = 64, 3, range(0, 301, 10)
    pe = positional_encoding(max(starts) + k + 1, d_model).double()
    turn = lambda n: offset_rotation(n, d_model, dtype=torch.float64)  # noqa: E731
    g = torch.Generator().manual_seed(0)
    W_q, W_k = (torch.randn(d_model, d_model, generator=g, dtype=torch.float64) / d_model ** 0.5 for _ in range(2))
    e = torch.randn(d_model, generator=g, dtype=torch.float64)
    A = W_q.T @ W_k
    pairs = torch.randn(d_model // 2, 2, generator=g, dtype=torch.float64)
    commuting = torch.block_diag(*(torch.tensor([[a, b], [-b, a]], dtype=torch.float64) for a, b in pairs.tolist()))

    moving = {"e A PE[p+k]": [float(e @ A @ pe[p + k]) for p in starts],
              "PE[p] A e": [float(pe[p] @ A @ e) for p in starts],
              "PE[p] A PE[p+k]": [float(pe[p] @ A @ pe[p + k]) for p in starts]}
    for name, values in moving.items():
        assert spread(values) > 0.2 * max(map(abs, values)), f"{name} should change with p: {values}"
    for name, middle in (("A = I", torch.eye(d_model, dtype=torch.float64)), ("scaled rotations", commuting)):
        values = [float(pe[p] @ middle @ pe[p + k]) for p in starts]
        assert spread(values) < 1e-5 * max(map(abs, values)), f"{name}: the position term should not move with p"

    q, key = W_q @ e, W_k @ e
    key_after = [float((turn(p) @ q) @ (turn(p + k) @ key)) for p in starts]
    key_before = [float((turn(p + k) @ q) @ (turn(p) @ key)) for p in starts]
    for values in (key_after, key_before):
        assert spread(values) < 1e-9 * max(map(abs, values)), "RoPE's score should depend on the offset alone"
    assert abs(key_after[0] - key_before[0]) > 0.1 * abs(key_after[0]), (key_after[0], key_before[0])
    x = pe[7]
    assert torch.isclose(x @ turn(k) @ x, x @ turn(-k) @ x, rtol=1e-12)


@pytest.mark.every_cpu
def test_02_says_which_variance_the_projections_start_with():
    """'from inputs whose entries have variance 1 they make queries and keys whose entries have variance about 1/3':
    a fresh nn.Linear(d, d) on inputs of variance 1, measured at 04's d = 16 and two larger sizes (8 seeds each;
    the bias adds 1/(3d), so 0.354 is expected at d = 16 and 0.334 at d = 512)."""
    assert ("`nn.Linear`'s starting weights do not keep that: from inputs whose entries have variance 1 they make "
            "queries and keys whose entries have variance about 1/3.") in prose("02_attention", "scaling_text")
    with torch.random.fork_rng():
        for d in (16, 64, 512):
            ratios = []
            for seed in range(8):
                torch.manual_seed(seed)
                layer, x = nn.Linear(d, d), torch.randn(2048, d)
                with torch.no_grad():
                    ratios.append(float(layer(x).var() / x.var()))
            mean = sum(ratios) / len(ratios)
            assert abs(mean - 1 / 3) < 0.03, f"d = {d}: queries' variance / inputs' {mean:.3f}, not about 1/3"


@pytest.mark.every_cpu
def test_02s_scaling_prose_quotes_what_its_experiment_prints(capsys):
    """'holds up while d_k is small, then collapses: from 16 to 1024 it shrinks by four orders of magnitude'; scaled,
    'the same size at every d_k' (the unscaled gradient first grows a little, 0.335 at d_k = 4 and 0.357 at 16, so
    'shrinks as d_k grows' was not true of the whole range)."""
    import math
    import re

    import matplotlib.pyplot as plt

    from course import plots

    cell = cells_of(SOURCE, "02_attention")["scaling_experiment"].source
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plt, "show", lambda: None)
        exec(cell, {"torch": torch, "math": math, "plots": plots})
        plt.close("all")
    rows = {int(d): (float(u), float(s)) for d, u, s in re.findall(
        r"d_k = +(\d+): gradient size ([\d.e+-]+) unscaled, ([\d.e+-]+) scaled", capsys.readouterr().out)}
    text = prose("02_attention", "sentence_text")
    assert ("the gradient holds up while $d_k$ is small, then collapses: from $d_k = 16$ to $d_k = 1024$ it shrinks by "
            "four orders of magnitude. With the scaling it stays the same size at every $d_k$.") in text
    assert math.floor(math.log10(rows[16][0] / rows[1024][0])) == 4, rows
    assert rows[16][0] >= rows[4][0] * 0.9, "small d_k: the unscaled gradient holds up"
    scaled = [s for _, s in rows.values()]
    assert max(scaled) / min(scaled) < 1.1, scaled
