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


# ---------------------------------------------------------------- 02 · Attention

def show_hard_vs_soft(attention) -> None:
    """One query against four keys: a hard lookup (all weight on the best key) beside the soft one
    (the student's `attention` weights), and where each puts its answer among the values."""
    query = torch.tensor([[1.0, 0.6]])
    keys = torch.tensor([[1.2, 0.3], [0.9, 1.0], [-0.8, 0.5], [0.1, -1.1]])
    values = torch.tensor([[0.5, 3.0], [3.0, 2.5], [2.5, 0.0], [0.0, 0.5]])  # two numbers each, so they can be drawn
    try:
        soft_output, soft = attention(query, keys, values)
    except NotImplementedError:
        return _not_written("attention")
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
        return _not_written("attention")
    attention_weights(weights, query_labels=words, key_labels=words,
                      title="Who looks at whom (hand-made queries and keys)")


# ---------------------------------------------------------------- 03 · Masking

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
        return _not_written("padding_mask")
    try:
        causal = causal_mask(T)
    except NotImplementedError:
        return _not_written("causal_mask")
    combined = causal & padding  # (B, T, T)
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8), gridspec_kw={"width_ratios": [1.3, 1]})
    heatmap(left, padding[:, 0].float(), f"padding_mask(lengths={lengths.tolist()}, T={T})[:, 0]", "position",
            "sequence", cmap="Blues", vmin=0, vmax=1.6, colorbar=False)
    left.set_yticks(range(len(lengths)), [f"{b} (length {n})" for b, n in enumerate(lengths.tolist())])
    heatmap(right, combined[1].float(), f"(causal_mask({T}) & padding_mask(...))[1]", "key", "query",
            cmap="Blues", vmin=0, vmax=1.6, colorbar=False)
    for ax in (left, right):
        ax.set_xticks(range(T))
    fig.tight_layout()
    plt.show()


def show_causal_attention(masked_attention, causal_mask, T: int = 6, d: int = 8) -> None:
    """Causally masked self-attention weights over random tokens: the full square and the cached case."""
    x = torch.randn(T, d, generator=torch.Generator().manual_seed(3))
    try:
        mask_full, mask_cached = causal_mask(T), causal_mask(2, T)
    except NotImplementedError:
        return _not_written("causal_mask")
    try:
        _, full = masked_attention(x, x, x, mask_full)
        _, cached = masked_attention(x[-2:], x, x, mask_cached)
    except NotImplementedError:
        return _not_written("masked_attention")
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
        return _not_written("masked_attention")
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
        return _not_written("causal_mask")
    try:
        before, _ = masked_attention(x, x, x, mask)
        after, _ = masked_attention(x_changed, x_changed, x_changed, mask)
    except NotImplementedError:
        return _not_written("masked_attention")
    moved = (after - before).detach().abs().amax(dim=-1).to("cpu", torch.float64)
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.bar(range(T), moved.tolist(), color=["tab:green" if p < changed else "tab:red" for p in range(T)])
    ax.axvline(changed - 0.5, color="gray", linestyle="--")
    ax.set(xlabel="output position", ylabel="largest change", xticks=list(range(T)),
           title=f"Changing token {changed}: how far each output moves")
    fig.tight_layout()
    plt.show()
    earlier = moved[:changed]
    if earlier.max() == 0:
        print(f"✔ outputs 0 to {changed - 1} did not change at all.")
    else:
        print(f"✘ earlier outputs moved (by up to {earlier.max().item():.3g}): information leaks from the future.")
