"""04 · The attention block: heads with random weights, how the heads are split and merged, which numbers layer
norm and batch norm normalise together, and post-norm against pre-norm."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from course.plots.drawing import not_written_yet, heatmap

def random_attention(MultiHeadAttention, d_model: int, n_heads: int, seed: int = 0, sharpen: float = 3.0):
    """A freshly built `MultiHeadAttention(d_model, n_heads)` with seeded random weights, W_q and W_k (weights and
    biases) multiplied by `sharpen`, so every query and key by `sharpen` and every score by sharpen²: at 1 the
    untrained heads spread their attention almost evenly; larger, their differences show."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = MultiHeadAttention(d_model, n_heads)
    with torch.no_grad():
        for projection in (module.W_q, module.W_k):
            projection.weight.mul_(sharpen)
            if projection.bias is not None:
                projection.bias.mul_(sharpen)
    return module


def scaled_scores(module, x: torch.Tensor, n_heads: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The queries `(B, T, d_model)` of `module` for `x`, and its scores `(B, n_heads, T, T)` divided by sqrt(d_head),
    computed from its W_q and W_k with the heads as contiguous slices of d_model."""
    with torch.no_grad():
        q, k = module.W_q(x), module.W_k(x)
    B, T, d_model = q.shape
    heads = lambda t: t.reshape(B, T, n_heads, d_model // n_heads).transpose(1, 2)  # noqa: E731
    return q, heads(q) @ heads(k).transpose(-2, -1) / (d_model // n_heads) ** 0.5


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
    for label, scale in rows.items():
        q, scores = scaled_scores(random_attention(MultiHeadAttention, d_model, n_heads, seed, sharpen=scale), x, n_heads)
        print(f"{label}: the entries of the queries have variance {q.var().item():.2f}, the scaled scores a standard "
              f"deviation of {scores.std().item():.2f}; a query's largest weight is "
              f"{weights[label].amax(dim=-1).mean().item():.2f} on average (evenly spread would be 1/{len(words)} = "
              f"{1 / len(words):.3f})")


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


def _cells(ax, groups: list[list[int]], colours: list, labels=None, title: str = "", fontsize: int = 8):
    """A grid of cells on `ax`: `groups[i][j]` picks the colour of cell (i, j) from `colours`, `labels[i][j]` (if
    given) is written in it. White lines separate the cells."""
    from matplotlib.colors import ListedColormap

    rows, cols = len(groups), len(groups[0])
    ax.imshow(torch.tensor(groups).numpy(), cmap=ListedColormap(colours), vmin=-0.5, vmax=len(colours) - 0.5)
    if labels is not None:
        for i, row in enumerate(labels):
            for j, label in enumerate(row):
                ax.text(j, i, label, ha="center", va="center", fontsize=fontsize)
    ax.set_xticks([x - 0.5 for x in range(1, cols)], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, rows)], minor=True)
    ax.grid(which="minor", color="white", lw=2)
    ax.tick_params(which="both", length=0, labelsize=fontsize)
    ax.set_xticks([])
    ax.set_yticks([])
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(title, fontsize=fontsize + 1)


def show_norm_axes(batch: int = 2, tokens: int = 3, d_model: int = 8) -> None:
    """Which numbers share one mean and variance, for an activation (batch, tokens, d_model) laid out flat: one row
    per token (batch item after batch item), one column per feature. Layer norm: one colour per row (token); batch
    norm: one colour per column (feature)."""
    rows = batch * tokens
    palette = list(plt.get_cmap("Set3").colors) * (1 + max(rows, d_model) // 12)
    per_token = [[r] * d_model for r in range(rows)]
    per_feature = [list(range(d_model)) for _ in range(rows)]
    row_names = [f"seq {r // tokens} · token {r % tokens}" for r in range(rows)]
    fig, axes = plt.subplots(1, 2, figsize=(12, 0.5 * rows + 2.0))
    panels = [(f"layer norm: one mean and variance per token\n({rows} of them, each over the token's "
               f"{d_model} features)", per_token),
              (f"batch norm: one mean and variance per feature\n({d_model} of them, each over {batch} sequences "
               f"× {tokens} positions = {rows} numbers)", per_feature)]
    for ax, (title, groups) in zip(axes, panels):
        _cells(ax, groups, palette, title=title, fontsize=9)
        ax.set_yticks(range(rows), row_names)
        ax.set_xticks(range(d_model), [str(c) for c in range(d_model)])
        ax.set_xlabel("feature (the d_model axis)", fontsize=9)
        for b in range(1, batch):
            ax.axhline(b * tokens - 0.5, color="k", lw=2)
    fig.suptitle(f"x of shape (B, T, d_model) = ({batch}, {tokens}, {d_model}), one row per token: "
                 "cells of one colour are normalised together", fontsize=11)
    fig.tight_layout()
    plt.show()


def compare_layer_norm_with_batch_norm(LayerNorm, batch: int = 2, tokens: int = 5, d_model: int = 8,
                                       seed: int = 0) -> None:
    """Your LayerNorm on a small batch: each token's mean and spread afterwards, and how far the first sequence's
    outputs move when only the other sequences change (or when it is alone in its batch), beside batch norm
    (statistics per feature over the batch and the positions, as while training)."""
    x = 3 + 2 * torch.randn(batch, tokens, d_model, generator=torch.Generator().manual_seed(seed))
    changed = x.clone()
    changed[1:] = 10 * changed[1:] - 5

    def batch_norm(v):
        return torch.nn.functional.batch_norm(v.transpose(1, 2), None, None, training=True).transpose(1, 2)

    try:
        norm = LayerNorm(d_model)
        with torch.no_grad():
            outputs = {name: [f(v) for v in (x, changed, x[:1])]
                       for name, f in [("your LayerNorm", norm), ("batch norm", batch_norm)]}
    except NotImplementedError:
        print("⏳ This comparison runs once `LayerNorm` is written.")
        return
    mine = outputs["your LayerNorm"][0]
    means, spreads = mine.mean(dim=-1), mine.std(dim=-1, correction=0)
    print(f"Your LayerNorm on x of shape {tuple(x.shape)}, numbers around 3 with spread 2.")
    print(f"After it, over each token's {d_model} features: the mean is at most {means.abs().max().item():.1e} "
          f"away from 0, the standard deviation at most {(spreads - 1).abs().max().item():.1e} away from 1.")
    print("\nHow far do the outputs of sequence 0 move (largest change of one number)...")
    print(f"{'':24}{'your LayerNorm':>16}{'batch norm':>12}")
    for case, which in [("when sequence 1 changes", 1), ("when it is alone", 2)]:
        moved = [(found[which][0] - found[0][0]).abs().max().item() for found in outputs.values()]
        print(f"{case:24}{moved[0]:>16.1e}{moved[1]:>12.2f}")


def show_head_split(d_model: int = 8, n_heads: int = 4, tokens: int = 3) -> None:
    """Where every number of one sequence goes when the heads are split and merged. Each cell is one number of a
    projected tensor such as Q: its colour is the head that owns its column, its label the column it started in.
    The reshapes are applied to a tensor that numbers the cells, so the picture is what they really do. Below, the
    tempting `view(B, h, T, d_head)` without a transpose."""
    d_head = d_model // n_heads
    index = torch.arange(tokens * d_model).view(1, tokens, d_model)  # cell number = token * d_model + column
    split = index.view(1, tokens, n_heads, d_head).transpose(1, 2)  # (1, h, T, d_head)
    back = split.transpose(1, 2).reshape(1, tokens, d_model)
    wrong = index.view(1, n_heads, tokens, d_head)
    palette = list(plt.get_cmap("Set2").colors) * (1 + n_heads // 8)

    def draw(ax, cells: torch.Tensor, title: str) -> None:
        """`cells` (rows, cols) of cell numbers: coloured by the head of their column, labelled with the column,
        each row named after the token it holds."""
        columns = (cells % d_model).tolist()
        _cells(ax, [[c // d_head for c in row] for row in columns], palette, [[str(c) for c in row] for row in columns],
               title=title)
        ax.set_yticks(range(len(columns)), [f"t{t}" for t in (cells[:, 0] // d_model).tolist()])

    unit, gap, head_gap = 0.32, 7.0, 1.7  # sizes in cells
    stack = n_heads * tokens + (n_heads - 1) * head_gap
    strip = n_heads * d_head + (n_heads - 1) * (head_gap + 0.5)
    width = 1.6 + max(2 * d_model + d_head + 2 * gap, strip) + 2.4
    bottom, top = tokens + 4.6, 3.6
    height = bottom + stack + top
    fig = plt.figure(figsize=(width * unit, height * unit))
    sketch = fig.add_axes((0, 0, 1, 1), xlim=(0, width), ylim=(height, 0))
    sketch.axis("off")

    def place(x: float, y: float, rows: int, cols: int, title: str, cells: torch.Tensor, label: str):
        ax = fig.add_axes((x / width, 1 - (y + rows) / height, cols / width, rows / height), label=label)
        draw(ax, cells, title)
        return ax

    left, middle = 1.6, 1.6 + d_model + gap
    right = middle + d_head + gap
    centre = top + stack / 2
    place(left, centre - tokens / 2, tokens, d_model, "", index[0], "x")
    place(right, centre - tokens / 2, tokens, d_model, "", back[0], "merged")
    for n in range(n_heads):
        place(middle, top + n * (tokens + head_gap), tokens, d_head,
              f"head {n}: columns {n * d_head}–{(n + 1) * d_head - 1}", split[0, n], f"head {n}")
    for at, text in [(left + d_model / 2, f"Q, K or V: (B, T, d_model)\none sequence, d_model = {d_model}"),
                     (middle + d_head / 2, f"(B, h, T, d_head), h = {n_heads}, d_head = {d_head}:\n"
                                          "each head attends over all T tokens\nwith its own columns only"),
                     (right + d_model / 2, "the heads' outputs merged: (B, T, d_model),\nevery column back in its place")]:
        sketch.text(at, 0.4, text, ha="center", va="top", fontsize=9)
    for start, text in [(left + d_model, "split\n.view(B, T, h, d_head)\n.transpose(1, 2)"),
                        (middle + d_head, "merge\n.transpose(1, 2)\n.reshape(B, T, d_model)")]:
        sketch.annotate("", (start + gap - 1.2, centre), (start + 0.4, centre),
                        arrowprops={"arrowstyle": "-|>", "lw": 1.6, "color": "0.3"})
        sketch.text(start + gap / 2 - 0.4, centre - 0.3, text, ha="center", va="bottom", fontsize=8.5, family="monospace")
    strip_top = top + stack + 1.2
    sketch.axhline(strip_top - 0.6, xmin=0.02, xmax=0.98, color="0.7", lw=0.8)
    sketch.text(left, strip_top - 0.2, "✘ x.view(B, h, T, d_head), without the transpose: no error, but each \"head\" "
                "gets pieces of a few tokens\n    (a row's label says which token it really comes from)",
                ha="left", va="top", fontsize=9, color="firebrick")
    for n in range(n_heads):
        place(left + n * (d_head + head_gap + 0.5), strip_top + 2.4, tokens, d_head, f"\"head {n}\"", wrong[0, n],
              f"wrong head {n}")
    plt.show()
    if torch.equal(back, index):
        print("Split then merge gives back exactly the tensor it started from: every number is again in its own "
              "token's row and its own column.")
