"""Drawing helpers every notebook's figures share: a labelled heatmap and one attention pattern."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch


def not_written_yet(name: str) -> None:
    print(f"⏳ This figure appears once `{name}` is written.")


def heatmap(ax, matrix: torch.Tensor, title: str, xlabel: str, ylabel: str, cmap="RdBu_r",
            xticklabels=None, yticklabels=None, colorbar=True, **kwargs):
    """Draw a 2-D tensor `(rows, cols)` on `ax` with labelled axes."""
    image = ax.imshow(matrix.detach().to("cpu", torch.float32).numpy(), cmap=cmap, aspect="auto", **kwargs)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if xticklabels is not None:
        ax.set_xticks(range(len(xticklabels)), xticklabels, rotation=45, ha="right")
    if yticklabels is not None:
        ax.set_yticks(range(len(yticklabels)), yticklabels)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046)
    return image


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
