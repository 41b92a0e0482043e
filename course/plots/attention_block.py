"""04 · The attention block: heads with random weights, and post-norm against pre-norm."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from course.plots.drawing import not_written_yet, heatmap

def random_attention(MultiHeadAttention, d_model: int, n_heads: int, seed: int = 0, sharpen: float = 3.0):
    """A freshly built `MultiHeadAttention(d_model, n_heads)` with seeded random weights, W_q and W_k multiplied by
    `sharpen` (every score by sharpen²): at 1 the untrained heads spread their attention almost evenly; larger, their
    differences show."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = MultiHeadAttention(d_model, n_heads)
    with torch.no_grad():
        module.W_q.weight.mul_(sharpen)
        module.W_k.weight.mul_(sharpen)
    return module


def show_attention_heads(MultiHeadAttention, words, n_heads: int = 4, d_model: int = 16, seed: int = 4,
                         sharpen: float = 3.0) -> None:
    """Self-attention over `words` (seeded random vectors) in one untrained MultiHeadAttention, one heatmap per head:
    the top row as PyTorch initialises W_q and W_k, the bottom row with both multiplied by `sharpen`."""
    x = torch.randn(1, len(words), d_model, generator=torch.Generator().manual_seed(seed))
    rows = {"as initialised": 1.0, f"W_q and W_k × {sharpen:g}": sharpen}
    try:
        weights = {}
        for label, scale in rows.items():
            module = random_attention(MultiHeadAttention, d_model, n_heads, seed, sharpen=scale)
            with torch.no_grad():
                weights[label] = module(x)[1][0].to("cpu", torch.float64)  # (n_heads, T, T)
    except NotImplementedError:
        return not_written_yet("MultiHeadAttention")
    fig, axes = plt.subplots(len(rows), n_heads, figsize=(3.3 * n_heads, 3.4 * len(rows)), squeeze=False)
    for row, (label, found) in enumerate(weights.items()):
        for head, ax in enumerate(axes[row]):
            heatmap(ax, found[head], f"head {head}" if row == 0 else "", "key" if row == len(rows) - 1 else "",
                    label if head == 0 else "", cmap="Blues", vmin=0, vmax=1,
                    xticklabels=words if row == len(rows) - 1 else [""] * len(words),
                    yticklabels=words if head == 0 else [""] * len(words), colorbar=head == n_heads - 1)
    fig.suptitle(f"MultiHeadAttention({d_model}, {n_heads}), untrained: each head's weights (row = query)")
    fig.tight_layout()
    plt.show()
    for label, found in weights.items():
        print(f"{label}: a query's largest weight is {found.amax(dim=-1).mean().item():.2f} on average "
              f"(evenly spread would be 1/{len(words)} = {1 / len(words):.3f})")


def _draw_block(ax, title: str, steps: list[tuple[str, str]], skips: list[tuple[int, int]]) -> None:
    """One block drawn bottom to top. `steps` are (kind, label) with kind "io", "box" or "add"; each skip
    (i, j) branches off just above step i and joins the "add" step j."""
    from matplotlib.patches import FancyBboxPatch

    colours = {"attention": "#f6c9a0", "feed": "#a8d5ba", "norm": "#f3e79b"}
    ax.set(xlim=(-1.6, 1.9), ylim=(-0.6, len(steps) - 0.4), title=title)
    ax.axis("off")
    for y, (kind, label) in enumerate(steps):
        if kind == "box":
            colour = next((c for key, c in colours.items() if key in label.lower()), "#ddd")
            ax.add_patch(FancyBboxPatch((-1.0, y - 0.28), 2.0, 0.56, boxstyle="round,pad=0.02", fc=colour, ec="k"))
            ax.text(0, y, label, ha="center", va="center", fontsize=10)
        elif kind == "add":
            ax.text(0, y, "+", ha="center", va="center", fontsize=13,
                    bbox={"boxstyle": "circle,pad=0.15", "fc": "white", "ec": "k"})
        else:
            ax.text(0, y, label, ha="center", va="center", fontsize=11, fontweight="bold")
        if y > 0:
            below = 0.13 if steps[y - 1][0] == "add" else 0.28
            above = 0.13 if kind == "add" else 0.28
            ax.annotate("", (0, y - above), (0, y - 1 + below), arrowprops={"arrowstyle": "->", "lw": 1.4})
    for start, end in skips:
        y0 = start + 0.5
        ax.plot([0, 1.5, 1.5], [y0, y0, end], color="tab:blue", lw=1.8)
        ax.annotate("", (0.13, end), (1.5, end), arrowprops={"arrowstyle": "->", "lw": 1.8, "color": "tab:blue"})
        ax.plot([0], [y0], "o", color="tab:blue", ms=4)
    ax.text(1.55, skips[0][0] + 0.5 + 0.15, "skip", color="tab:blue", fontsize=9)


def show_block_diagram() -> None:
    """The TransformerBlock in both orders: post-norm (norm_first=False) beside pre-norm (norm_first=True)."""
    post = [("io", "x"), ("box", "attn: multi-head attention"), ("add", "+"), ("box", "norm1: LayerNorm"),
            ("box", "ff: feed-forward"), ("add", "+"), ("box", "norm2: LayerNorm"), ("io", "output")]
    pre = [("io", "x"), ("box", "norm1: LayerNorm"), ("box", "attn: multi-head attention"), ("add", "+"),
           ("box", "norm2: LayerNorm"), ("box", "ff: feed-forward"), ("add", "+"), ("io", "output")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 6.5))
    _draw_block(left, "post-norm (norm_first=False, the 2017 paper)\nx = norm1(x + attn(x)); x = norm2(x + ff(x))",
                post, [(0, 2), (3, 5)])
    _draw_block(right, "pre-norm (norm_first=True, GPT-2 and later)\nx = x + attn(norm1(x)); x = x + ff(norm2(x))",
                pre, [(0, 3), (3, 6)])
    fig.tight_layout()
    plt.show()
