"""02 · Attention: hard against soft attention, the softmax's gradient, attention over a sentence."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from course.plots.drawing import not_written_yet, attention_weights

def show_hard_vs_soft(attention) -> None:
    """One query against four keys: a hard lookup (all weight on the best key) beside the soft one
    (the student's `attention` weights), and where each puts its answer among the values."""
    query = torch.tensor([[1.0, 0.6]])
    keys = torch.tensor([[1.2, 0.3], [0.9, 1.0], [-0.8, 0.5], [0.1, -1.1]])
    values = torch.tensor([[0.5, 3.0], [3.0, 2.5], [2.5, 0.0], [0.0, 0.5]])  # two numbers each, so they can be drawn
    try:
        soft_output, soft = attention(query, keys, values)
    except NotImplementedError:
        return not_written_yet("attention")
    soft, soft_output = soft.detach().float()[0], soft_output.detach().float()[0]
    scores = (query @ keys.T)[0] / keys.shape[-1] ** 0.5
    hard = torch.zeros(len(keys))
    hard[scores.argmax()] = 1.0
    hard_output = hard @ values
    fig, (bars, plane) = plt.subplots(1, 2, figsize=(12, 4.3))
    x = torch.arange(len(keys)).float()
    bars.bar(x - 0.2, hard, width=0.4, color="tab:blue", label="hard: all weight on the best key")
    bars.bar(x + 0.2, soft, width=0.4, color="tab:orange", label="soft: softmax of the scores")
    bars.set_xticks(x.tolist(), [f"key {j + 1}\nscore {s:.2f}" for j, s in enumerate(scores.tolist())])
    bars.set(ylabel="weight on its value", ylim=(0, 1.1), title="How much each value counts")
    bars.legend(loc="upper right")
    for j, (v, w) in enumerate(zip(values.tolist(), soft.tolist())):
        plane.plot([soft_output[0], v[0]], [soft_output[1], v[1]], color="tab:orange", alpha=0.6, linewidth=1 + 10 * w)
        plane.annotate(f"value {j + 1}", v, textcoords="offset points", xytext=(6, 6))
    plane.scatter(values[:, 0], values[:, 1], s=60, color="gray", zorder=3)
    plane.scatter(*hard_output.tolist(), s=220, marker="s", facecolors="none", edgecolors="tab:blue", linewidths=2,
                  zorder=4, label="hard answer: one value")
    plane.scatter(*soft_output.tolist(), s=250, marker="*", color="tab:orange", zorder=4,
                  label="soft answer: a weighted average")
    plane.set(title="The answer among the values", xlim=(-0.7, 3.8), ylim=(-0.7, 3.8))
    plane.set_aspect("equal")
    plane.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    plt.show()


def show_softmax_gradient(d_ks, unscaled, scaled) -> None:
    """The size of the softmax's derivative against d_k, with and without the 1/sqrt(d_k) scale."""
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(d_ks, unscaled, "o-", color="tab:red", label="scores q·k (unscaled)")
    ax.plot(d_ks, scaled, "o-", color="tab:green", label="scores q·k / √d_k")
    ax.set(xscale="log", yscale="log", xlabel="d_k (log scale)", ylabel="typical size of ∂softmax / ∂scores (log)",
           title="Unscaled scores saturate the softmax as d_k grows")
    ax.set_xticks(list(d_ks), [str(d) for d in d_ks])
    ax.minorticks_off()
    ax.legend()
    fig.tight_layout()
    plt.show()


def show_attention_on_sentence(attention, words, queries: torch.Tensor, keys: torch.Tensor) -> None:
    """The weights of `attention(queries, keys, values)` for a sentence, one row per query word."""
    values = torch.eye(len(words))  # any values do: the figure shows the weights
    try:
        _, weights = attention(queries, keys, values)
    except NotImplementedError:
        return not_written_yet("attention")
    attention_weights(weights, query_labels=words, key_labels=words,
                      title="Who looks at whom (hand-made queries and keys)")
