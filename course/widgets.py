"""Interactive explorers (ipywidgets). Outside a live notebook they draw their first frame."""
from __future__ import annotations

import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from course.notebook_setup import under_grading


def positional_encoding_explorer(positional_encoding, max_len: int = 200, d_model: int = 64):
    """Sliders over a dimension and a position: one column as a wave over positions, one row as a bar chart."""
    if under_grading():
        # Widgets need a live front end; executed headless (nbgrader), their comm traffic can leave
        # the executor waiting for the whole cell timeout. Grading needs no explorer.
        print("(The explorer is interactive: it is skipped while nbgrader runs the notebook.)")
        return
    try:
        pe = positional_encoding(max_len, d_model).detach().to("cpu", torch.float32)
    except NotImplementedError:
        print("⏳ The explorer appears once `positional_encoding` is written.")
        return

    def draw(dimension: int, position: int):
        fig, (wave, row) = plt.subplots(1, 2, figsize=(12, 3.5))
        i = dimension // 2
        wavelength = 2 * math.pi * 10000 ** (2 * i / d_model)
        kind = "sin" if dimension % 2 == 0 else "cos"
        wave.plot(pe[:, dimension], color="tab:blue")
        wave.axvline(position, color="tab:red", linestyle="--")
        wave.set(title=f"dimension {dimension} ({kind}): wavelength {wavelength:,.1f} positions",
                 xlabel="position", ylabel="value", ylim=(-1.1, 1.1))
        row.bar(range(d_model), pe[position], color=["tab:blue" if d % 2 == 0 else "tab:orange" for d in range(d_model)])
        row.set(title=f"position {position}: its {d_model} numbers (blue sin, orange cos)",
                xlabel="dimension", ylim=(-1.1, 1.1))
        fig.tight_layout()
        plt.show()

    widgets.interact(
        draw,
        dimension=widgets.IntSlider(value=0, min=0, max=d_model - 1, description="dimension"),
        position=widgets.IntSlider(value=10, min=0, max=max_len - 1, description="position"),
    )
