"""Figures the notebooks draw. Each takes the student's function and says so kindly when it is not written yet."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch


def _not_written(name: str) -> None:
    print(f"⏳ This figure appears once `{name}` is written.")


def heatmap(ax, matrix: torch.Tensor, title: str, xlabel: str, ylabel: str, cmap="RdBu_r",
            xticklabels=None, yticklabels=None, colorbar=True, **kwargs):
    """Draw a 2-D tensor `(rows, cols)` on `ax` with labelled axes."""
    image = ax.imshow(matrix.detach().to("cpu", torch.float32), cmap=cmap, aspect="auto", **kwargs)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if xticklabels is not None:
        ax.set_xticks(range(len(xticklabels)), xticklabels, rotation=45, ha="right")
    if yticklabels is not None:
        ax.set_yticks(range(len(yticklabels)), yticklabels)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046)
    return image


def show_positional_encoding(positional_encoding, max_len: int = 100, d_model: int = 64) -> None:
    """The encoding as a heatmap `(position, dimension)` beside the dot products of every pair of positions."""
    try:
        pe = positional_encoding(max_len, d_model)
    except NotImplementedError:
        return _not_written("positional_encoding")
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    heatmap(left, pe, f"positional_encoding({max_len}, {d_model})", "dimension", "position", vmin=-1, vmax=1)
    heatmap(right, pe @ pe.T, "PE · PEᵀ: how alike two positions look", "position", "position", cmap="viridis")
    fig.tight_layout()
    plt.show()


def attention_weights(weights: torch.Tensor, query_labels=None, key_labels=None, title="attention weights",
                      ax=None) -> None:
    """One attention pattern `(T_q, T_k)`: row i shows how query i spreads its attention over the keys."""
    weights = weights.detach().to("cpu", torch.float32)
    if ax is None:
        _, ax = plt.subplots(figsize=(1 + 0.5 * weights.shape[1], 1 + 0.45 * weights.shape[0]))
    heatmap(ax, weights, title, "key", "query", cmap="Blues", vmin=0, vmax=1,
            xticklabels=key_labels, yticklabels=query_labels)
    for (i, j), w in zip(torch.cartesian_prod(torch.arange(weights.shape[0]), torch.arange(weights.shape[1])).tolist(),
                         weights.flatten().tolist()):
        ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=8, color="white" if w > 0.6 else "black")
    plt.show()
