"""01 · Positional encoding: the figures of positions."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

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


def show_dot_product_by_offset(positional_encoding, d_model: int = 64, starts=(50, 120, 300), reach: int = 40) -> None:
    """PE[p] · PE[p + k] against the offset k = -reach, ..., reach, one line per starting position p in `starts`:
    for the sinusoidal table the lines coincide (the dot product depends on k only). Prints how far apart they are."""
    if min(starts) < reach:
        raise ValueError(f"every start must be at least reach={reach}, so that p - reach is a position")
    try:
        pe = positional_encoding(max(starts) + reach + 1, d_model)
    except NotImplementedError:
        return not_written_yet("positional_encoding")
    pe = pe.detach().to("cpu", torch.float64)
    offsets = torch.arange(-reach, reach + 1)
    curves = {p: pe[p + offsets] @ pe[p] for p in starts}
    fig, ax = plt.subplots(figsize=(8, 4))
    styles = [dict(linewidth=6, alpha=0.35), dict(linewidth=2.5, linestyle="--"), dict(linewidth=1.5, linestyle=":")]
    for (p, curve), style in zip(curves.items(), styles * len(starts)):
        ax.plot(offsets.numpy(), curve.numpy(), label=f"p = {p}", **style)
    ax.axvline(0, color="grey", linewidth=0.8)
    ax.set(title=f"PE[p] · PE[p + k] for d_model = {d_model}: the same curve from every start",
           xlabel="offset k", ylabel="dot product")
    ax.legend(title="start")
    fig.tight_layout()
    plt.show()
    stacked = torch.stack(list(curves.values()))
    gap = (stacked.max(dim=0).values - stacked.min(dim=0).values).max().item()
    if gap <= 1e-3 * max(1.0, stacked.abs().max().item()):
        print(f"The {len(starts)} curves agree to within {gap:.1e}: the dot product depends on the offset k alone.")
    else:
        print(f"The curves differ by up to {gap:.3g}: in a sinusoidal table they coincide, so check positional_encoding.")
