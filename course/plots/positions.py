"""01 · Positional encoding: the figures of positions."""
from __future__ import annotations

import matplotlib.pyplot as plt

from course.plots.drawing import not_written_yet, heatmap

def show_positional_encoding(positional_encoding, max_len: int = 100, d_model: int = 64) -> None:
    """The encoding as a heatmap `(position, dimension)` beside the dot products of every pair of positions."""
    try:
        pe = positional_encoding(max_len, d_model)
    except NotImplementedError:
        return not_written_yet("positional_encoding")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    heatmap(left, pe, f"positional_encoding({max_len}, {d_model})", "dimension", "position", vmin=-1, vmax=1)
    heatmap(right, pe @ pe.T, "PE · PEᵀ: how alike two positions look", "position", "position", cmap="viridis")
    fig.tight_layout()
    plt.show()
