"""03 · Masking: padding and causal masks, a fully masked row, and the causality test."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch
from matplotlib.patches import Patch

from course.checks.compare import tolerance
from course.plots.drawing import not_written_yet, heatmap

def _annotate(ax, weights: torch.Tensor) -> None:
    """Write each weight in its cell of a heatmap."""
    for i, row in enumerate(weights.tolist()):
        for j, w in enumerate(row):
            ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=8, color="white" if w > 0.6 else "black")


def show_padding_mask(padding_mask, causal_mask, lengths=(6, 4, 2), T: int = 6) -> None:
    """The padding mask of a small batch, and the causal mask combined with it for one sequence."""
    lengths = torch.tensor(lengths)
    try:
        padding = padding_mask(lengths, T)
    except NotImplementedError:
        return not_written_yet("padding_mask")
    try:
        causal = causal_mask(T)
    except NotImplementedError:
        return not_written_yet("causal_mask")
    combined = causal & padding  # (B, T, T)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.3, 1]})
    heatmap(left, padding[:, 0].float(), f"padding_mask(lengths={lengths.tolist()}, T={T})[:, 0]", "position",
            "sequence", cmap="Blues", vmin=0, vmax=1.6, colorbar=False)
    left.set_yticks(range(len(lengths)), [f"{b} (length {n})" for b, n in enumerate(lengths.tolist())])
    heatmap(right, combined[1].float(), f"(causal_mask({T}) & padding_mask(...))[1]", "key", "query",
            cmap="Blues", vmin=0, vmax=1.6, colorbar=False)
    for ax in (left, right):
        ax.set_xticks(range(T))
    colours = plt.get_cmap("Blues")(plt.Normalize(0, 1.6)([1.0, 0.0]))  # the colours of True and False above
    fig.legend(handles=[Patch(facecolor=colours[0], edgecolor="grey", label="True: a real token, may be attended to"),
                        Patch(facecolor=colours[1], edgecolor="grey", label="False: padding or a future token, never attended to")],
               loc="lower center", ncol=2, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    plt.show()


def show_causal_attention(masked_attention, causal_mask, T: int = 6, d: int = 8) -> None:
    """Causally masked self-attention weights over random tokens: the full square and the cached case."""
    x = torch.randn(T, d, generator=torch.Generator().manual_seed(3))
    try:
        mask_full, mask_cached = causal_mask(T), causal_mask(2, T)
    except NotImplementedError:
        return not_written_yet("causal_mask")
    try:
        _, full = masked_attention(x, x, x, mask_full)
        _, cached = masked_attention(x[-2:], x, x, mask_cached)
    except NotImplementedError:
        return not_written_yet("masked_attention")
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [1, 1]})
    for ax, w, title, rows in [(left, full, f"masked_attention with causal_mask({T})", range(T)),
                               (right, cached, f"the last 2 queries, causal_mask(2, {T})", range(T - 2, T))]:
        w = w.detach().to("cpu", torch.float32)
        heatmap(ax, w, title, "key (position)", "query (position)", cmap="Blues", vmin=0, vmax=1, colorbar=False)
        ax.set_yticks(range(len(rows)), [str(r) for r in rows])
        ax.set_xticks(range(T))
        _annotate(ax, w)
    right.set_aspect(1.0)
    fig.tight_layout()
    plt.show()


def show_fully_masked_row(masked_attention) -> None:
    """Attention with a mask whose row 2 allows no key: that row should be all zeros, not NaN."""
    g = torch.Generator().manual_seed(4)
    Q, K, V = torch.randn(4, 3, generator=g), torch.randn(5, 3, generator=g), torch.randn(5, 2, generator=g)
    mask = torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    try:
        output, weights = masked_attention(Q, K, V, mask)
    except NotImplementedError:
        return not_written_yet("masked_attention")
    weights, output = weights.detach().to("cpu", torch.float32), output.detach().to("cpu", torch.float32)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [5, 2]})
    heatmap(left, mask.float(), "the mask: grey = may attend (query 2: nothing)", "key", "query", cmap="Greys", vmin=0,
            vmax=2.5, colorbar=False)
    shown = weights.nan_to_num(-1.0)
    heatmap(right, shown, "weights", "key", "query", cmap="Blues", vmin=0, vmax=1, colorbar=False)
    for i, row in enumerate(weights.tolist()):
        for j, w in enumerate(row):
            right.text(j, i, "NaN" if w != w else f"{w:.2f}", ha="center", va="center", fontsize=7,
                       color="red" if w != w else "black")
    for ax in (left, right):
        ax.set_xticks(range(mask.shape[1]))
        ax.set_yticks(range(mask.shape[0]))
    fig.tight_layout()
    plt.show()
    print("output row 2 (should be zeros):", [round(v, 4) for v in output[2].tolist()])
    if torch.isnan(weights).any() or torch.isnan(output).any():
        print("✘ NaN: a row with no allowed key should give weights 0 and output 0.")


def show_causality(masked_attention, causal_mask, T: int = 8, d: int = 6, changed: int = 5) -> None:
    """Change one token and measure how much each output of causal self-attention moves."""
    g = torch.Generator().manual_seed(5)
    x = torch.randn(T, d, generator=g, dtype=torch.float64)
    x_changed = x.clone()
    x_changed[changed] = torch.randn(d, generator=g, dtype=torch.float64)
    try:
        mask = causal_mask(T)
    except NotImplementedError:
        return not_written_yet("causal_mask")
    try:
        before, _ = masked_attention(x, x, x, mask)
        after, _ = masked_attention(x_changed, x_changed, x_changed, mask)
    except NotImplementedError:
        return not_written_yet("masked_attention")
    moved = (after - before).detach().abs().amax(dim=-1).to("cpu", torch.float64)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(range(T), moved.tolist(), color=["tab:green" if p < changed else "tab:red" for p in range(T)])
    ax.axvline(changed - 0.5, color="gray", linestyle="--")
    ax.set(xlabel="output position", ylabel="largest change", xticks=list(range(T)),
           title=f"Changing token {changed}: how far each output moves")
    fig.tight_layout()
    plt.show()
    earlier = moved[:changed]
    rounding = tolerance(after.dtype)[0]  # a correct answer may move them by rounding, as the checks allow
    if earlier.max() == 0:
        print(f"✔ outputs 0 to {changed - 1} did not change at all.")
    elif earlier.max() <= rounding:
        print(f"✔ outputs 0 to {changed - 1} did not change beyond rounding (at most {earlier.max().item():.1g}).")
    else:
        print(f"✘ earlier outputs moved (by up to {earlier.max().item():.3g}): information leaks from the future.")
