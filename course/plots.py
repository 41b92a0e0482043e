"""Figures the notebooks draw. Each takes the student's function and says so kindly when it is not written yet."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from course.checks.compare import tolerance


def _not_written(name: str) -> None:
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
    rounding = tolerance(after.dtype)[0]  # a correct answer may move them by rounding, as the checks allow
    if earlier.max() == 0:
        print(f"✔ outputs 0 to {changed - 1} did not change at all.")
    elif earlier.max() <= rounding:
        print(f"✔ outputs 0 to {changed - 1} did not change beyond rounding (at most {earlier.max().item():.1g}).")
    else:
        print(f"✘ earlier outputs moved (by up to {earlier.max().item():.3g}): information leaks from the future.")


# ---------------------------------------------------------------- 04 · The attention block

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
        return _not_written("MultiHeadAttention")
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


# ---------------------------------------------------------------- 05 · The whole architecture

def _flow_box(ax, x, y, w, h, text, color, fontsize=9):
    from matplotlib.patches import FancyBboxPatch
    ax.add_patch(FancyBboxPatch((x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02", facecolor=color,
                                edgecolor="black", linewidth=1))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _flow_arrow(ax, start, end, text=None, color="black", offset=(0.05, 0.0), **kwargs):
    ax.annotate("", xy=end, xytext=start, arrowprops=dict(arrowstyle="-|>", color=color, lw=1.4, **kwargs))
    if text:
        ax.text((start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1], text, fontsize=8,
                color=color, ha="left", va="center")


def show_encoder_decoder_flow() -> None:
    """The encoder-decoder as boxes and arrows, with the shape of every tensor; in cross-attention the queries
    come from the decoder, the keys and values from the encoder's memory."""
    fig, ax = plt.subplots(figsize=(12, 7.5))
    ax.set(xlim=(0, 11.5), ylim=(0, 10))
    ax.axis("off")
    enc, dec = 2.8, 7.6
    # encoder column
    _flow_box(ax, enc, 0.7, 2.6, 0.6, "src tokens (B, S)", "#eeeeee")
    _flow_box(ax, enc, 1.9, 2.6, 0.6, "src_embedding", "#fde0c5")
    _flow_box(ax, enc, 3.6, 3.0, 1.4, "encoder: N × TransformerBlock\nself-attention (padding mask)\n+ feed-forward",
         "#cfe2f3")
    _flow_box(ax, enc, 5.2, 2.6, 0.6, "encoder_norm", "#d9ead3")
    _flow_box(ax, enc, 6.6, 2.6, 0.8, "memory (B, S, d_model)", "#ffe599")
    _flow_arrow(ax, (enc, 1.0), (enc, 1.6))
    _flow_arrow(ax, (enc, 2.2), (enc, 2.9), "(B, S, d_model)")
    _flow_arrow(ax, (enc, 4.3), (enc, 4.9))
    _flow_arrow(ax, (enc, 5.5), (enc, 6.2))
    # decoder column
    _flow_box(ax, dec, 0.7, 2.6, 0.6, "tgt tokens (B, T)", "#eeeeee")
    _flow_box(ax, dec, 1.9, 2.6, 0.6, "tgt_embedding", "#fde0c5")
    _flow_box(ax, dec, 3.2, 3.2, 0.7, "masked self-attention (causal)", "#cfe2f3")
    _flow_box(ax, dec, 4.6, 3.2, 0.9, "cross-attention\nQ from the decoder,\nK and V from the memory", "#f4cccc")
    _flow_box(ax, dec, 5.9, 3.2, 0.6, "feed-forward", "#cfe2f3")
    ax.text(dec + 1.95, 4.55, "N × DecoderBlock\n(each with skip\nconnections and\nlayer norms)", fontsize=8,
            va="center")
    ax.add_patch(plt.Rectangle((dec - 1.8, 2.7), 3.6, 3.6, fill=False, linestyle="--", edgecolor="gray"))
    _flow_box(ax, dec, 7.1, 2.6, 0.6, "decoder_norm", "#d9ead3")
    _flow_box(ax, dec, 8.2, 2.6, 0.6, "lm_head", "#fde0c5")
    _flow_box(ax, dec, 9.3, 3.0, 0.6, "logits (B, T, tgt_vocab_size)", "#eeeeee")
    _flow_arrow(ax, (dec, 1.0), (dec, 1.6))
    _flow_arrow(ax, (dec, 2.2), (dec, 2.85), "(B, T, d_model)")
    _flow_arrow(ax, (dec, 3.55), (dec, 4.15), "queries (B, T, d_model)", color="tab:red")
    _flow_arrow(ax, (dec, 5.05), (dec, 5.6), "(B, T, d_model): one row per target token")
    _flow_arrow(ax, (dec, 6.2), (dec, 6.8))
    _flow_arrow(ax, (dec, 7.4), (dec, 7.9))
    _flow_arrow(ax, (dec, 8.5), (dec, 9.0))
    # memory -> every decoder block's cross-attention
    _flow_arrow(ax, (enc + 1.3, 6.6), (dec - 1.6, 4.75), color="tab:blue")
    ax.text(4.3, 4.9, "keys and values\n(B, S, d_model),\nto every decoder block", fontsize=8, color="tab:blue")
    ax.set_title("Encoder-decoder: the decoder asks (queries), the encoder's memory answers (keys, values)\n"
                 "cross-attention weights: (B, n_heads, T, S)", fontsize=11)
    plt.show()


def show_teacher_forcing(EncoderDecoderTransformer) -> None:
    """Build the decoder input and the labels from a target sentence, then show that one teacher-forced pass
    gives, at every position, the logits of a pass over that position's prefix alone."""
    words = ["<s>", "</s>", "le", "chat", "dort", "sur", "le", "tapis"]
    vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
    sentence = ["le", "chat", "dort", "sur", "le", "tapis"]
    target = torch.tensor([[vocab["<s>"]] + [vocab[w] for w in sentence] + [vocab["</s>"]]])  # (1, T + 1)
    decoder_input, labels = target[:, :-1], target[:, 1:]  # shifted right / as it is
    names = {i: w for w, i in vocab.items()}
    fig, ax = plt.subplots(figsize=(11, 2.2))
    ax.axis("off")
    ax.set(xlim=(-1.6, decoder_input.shape[1]), ylim=(-0.6, 1.8))
    for t in range(decoder_input.shape[1]):
        _flow_box(ax, t, 1.2, 0.85, 0.45, names[int(decoder_input[0, t])], "#cfe2f3")
        _flow_box(ax, t, 0.0, 0.85, 0.45, names[int(labels[0, t])], "#d9ead3")
        _flow_arrow(ax, (t, 0.95), (t, 0.25))
    ax.text(-1.5, 1.2, "decoder input", va="center", fontsize=9)
    ax.text(-1.5, 0.0, "label", va="center", fontsize=9)
    ax.set_title("Teacher forcing: input = target shifted right (starts with <s>); label = target (ends with </s>)",
                 fontsize=10)
    plt.show()
    try:
        torch.manual_seed(0)
        model = EncoderDecoderTransformer(src_vocab_size=10, tgt_vocab_size=len(vocab), d_model=16, n_heads=2,
                                          d_ff=32, n_encoder_layers=1, n_decoder_layers=2, max_len=16).eval()
    except NotImplementedError:
        return _not_written("EncoderDecoderTransformer")
    source = torch.randint(0, 10, (1, 5))
    with torch.no_grad():
        at_once = model(source, decoder_input)  # (1, T, V): every position in one pass
        gaps = [(model(source, decoder_input[:, : t + 1])[:, -1] - at_once[:, t]).abs().max().item()
                for t in range(decoder_input.shape[1])]
        loss = torch.nn.functional.cross_entropy(at_once.flatten(0, 1), labels.flatten())
    print(f"one pass over {decoder_input.shape[1]} positions; largest difference from the prefix-by-prefix passes: "
          f"{max(gaps):.2e}")
    print(f"the teacher-forced loss of this untrained model: {loss.item():.3f} nats per token "
          f"(about ln({len(vocab)}) = {torch.log(torch.tensor(float(len(vocab)))).item():.3f} for a uniform guess)")


def show_temperature_and_top_k() -> None:
    """One distribution over eight tokens at three temperatures, and with top-k."""
    logits = torch.tensor([2.0, 1.5, 1.0, 0.6, 0.2, -0.3, -0.8, -1.5])
    tokens = range(len(logits))
    fig, axes = plt.subplots(1, 4, figsize=(14, 3), sharey=True)
    for ax, temperature in zip(axes[:3], (0.5, 1.0, 2.0)):
        ax.bar(tokens, torch.softmax(logits / temperature, -1), color="tab:blue")
        ax.set(title=f"temperature {temperature}", xlabel="token")
    kept = logits.masked_fill(logits < logits.topk(3).values[-1], float("-inf"))
    axes[3].bar(tokens, torch.softmax(kept, -1), color="tab:orange")
    axes[3].set(title="temperature 1.0, top_k=3", xlabel="token")
    axes[0].set_ylabel("probability")
    fig.tight_layout()
    plt.show()


def show_reversal_training(runs: dict, half_len: int, vocab_size: int, smooth: int = 20) -> None:
    """Loss curves against the task's floor, and per-position accuracy against chance, for one or more runs.

    runs: {label: (losses, accuracy)}, with losses a list of floats and accuracy a tensor (2 * half_len - 1,).
    """
    import math

    n, V = half_len, vocab_size
    floor = (n - 1) / (2 * n - 1) * math.log(V)
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4))
    colors = ["tab:blue", "tab:red", "tab:green", "tab:purple"]
    width = 0.8 / len(runs)
    positions = torch.arange(1, 2 * n)  # the index of the predicted token
    for k, (label, (losses, accuracy)) in enumerate(runs.items()):
        losses = torch.tensor(losses, dtype=torch.float64)
        window = max(1, min(smooth, len(losses)))
        smoothed = losses.unfold(0, window, 1).mean(1) if len(losses) >= window else losses
        left.plot(range(window, window + len(smoothed)), smoothed, color=colors[k % 4], label=label)
        right.bar(positions + (k - (len(runs) - 1) / 2) * width, torch.as_tensor(accuracy).cpu().float(), width,
                  color=colors[k % 4], label=label)
    left.axhline(floor, color="black", linestyle=":", label=f"floor  (n-1)/(2n-1)·ln V = {floor:.3f}")
    left.axhline(math.log(V), color="grey", linestyle="--", linewidth=1, label=f"uniform guess  ln V = {math.log(V):.3f}")
    left.set(xlabel="step", ylabel="loss (nats per prediction)", title=f"training loss (mean of {smooth} steps)",
             ylim=(0, math.log(V) * 1.15))
    left.legend(fontsize=8)
    right.axvspan(0.5, n - 0.5, color="tab:orange", alpha=0.08)
    right.text(n / 2, 1.04, "random first half", ha="center", fontsize=9)
    right.text(n + (n - 1) / 2, 1.04, "mirrored second half", ha="center", fontsize=9)
    right.axhline(1 / V, color="black", linestyle="--", linewidth=1, label=f"chance 1/V = {1 / V:.2f}")
    right.set(xlabel="index of the predicted token", ylabel="accuracy", ylim=(0, 1.12), xticks=positions.tolist(),
              title="next-token accuracy by position")
    right.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=3)
    fig.tight_layout()
    plt.show()


def show_token_frequencies(counts: torch.Tensor, vocab, labelled=(1, 5, 50, 500, 5000)) -> None:
    """Rank against frequency on logarithmic axes (Zipf's law), with the tokens at a few ranks labelled.

    counts: (len(vocab),) how often each id occurs, id 0 being <unk>; vocab decodes ids to tokens.
    """
    frequencies, order = counts[1:].double().sort(descending=True)
    order = order + 1
    seen = frequencies > 0
    ranks = torch.arange(1, int(seen.sum()) + 1)
    fig, ax = plt.subplots(figsize=(7, 3.8))
    ax.loglog(ranks, frequencies[seen], color="tab:blue", linewidth=1.5)
    for rank in [r for r in labelled if r <= len(ranks)]:
        count = frequencies[rank - 1].item()
        ax.plot(rank, count, "o", color="tab:orange", markersize=4)
        ax.annotate(f"{vocab.decode([int(order[rank - 1])])[0]!r} (rank {rank})", (rank, count), fontsize=8,
                    xytext=(6, 4), textcoords="offset points")
    rare = int((frequencies[seen] <= 2).sum())
    ax.set(xlabel="rank of the token (1 = most frequent)", ylabel="occurrences",
           title=f"{int(seen.sum()):,} tokens by frequency; {rare:,} of them occur once or twice")
    fig.tight_layout()
    plt.show()


def show_language_model_training(history: dict, baselines: dict, final: float, smooth: int = 50,
                                  final_label: str = "your model, all validation windows") -> None:
    """Training loss (mean of `smooth` steps) and validation loss against the step, drawn together so that one sees
    where they part, with the baselines' losses and the final validation loss as horizontal lines. history as returned
    by course.training.train_language_model; baselines: {name: nats per token}; final_label names the final
    validation loss (what was scored, on which windows). Where the history has a best
    validation (`best_step`, `best_val`) it is marked, and the steps after it, where validation no longer improved,
    are shaded."""
    import math

    steps = torch.tensor(history["step"], dtype=torch.float64)
    losses = torch.tensor(history["train"], dtype=torch.float64)
    window = max(1, min(smooth, len(losses)))
    smoothed = losses.unfold(0, window, 1).mean(1)
    fig, ax = plt.subplots(figsize=(8, 4.2))
    ax.plot(steps[window - 1:], smoothed, color="tab:blue", label=f"training loss (mean of {window} steps)")
    ax.plot(history["eval_step"], history["val"], "o-", color="tab:orange", markersize=3,
            label=f"validation loss ({history['eval_windows']} windows)")
    best_step, best_val = history.get("best_step"), history.get("best_val")
    if best_step is not None:
        kept = "the weights kept" if history.get("restored") else "the last weights"
        ax.plot([best_step], [best_val], "*", color="tab:green", markersize=14, zorder=5,
                label=f"best validation {best_val:.2f} at step {best_step:,} ({kept})")
        last = history["step"][-1]
        if best_step < last:
            ax.axvspan(best_step, last, color="tab:red", alpha=0.08,
                       label="after the best: validation no longer improved"
                             + (" (stopped early)" if history.get("stopped_early") else ""))
    styles = {"unigram": ("grey", "--"), "bigram": ("black", ":")}
    for name, loss in baselines.items():
        color, line = styles.get(name, ("tab:purple", "-."))
        ax.axhline(loss, color=color, linestyle=line, label=f"{name} baseline {loss:.2f} (perplexity {math.exp(loss):,.0f})")
    ax.axhline(final, color="tab:red", linewidth=1, label=f"{final_label}: {final:.2f} "
                                                            f"(perplexity {math.exp(final):,.0f})")
    # the first steps' loss (about ln of the vocabulary) is cut; a validation curve that climbs stays on the chart
    top = max(max(baselines.values()) + 1.0, final + 0.5, *(v + 0.2 for v in history["val"]))
    bottom = min(smoothed.min().item(), final, *baselines.values(), *history["val"]) - 0.3  # every line on the chart
    ax.set(xlabel="step", ylabel="nats per token", ylim=(bottom, top),
           title="learning Shakespeare: training and validation loss")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()


def _attention_submodules(model) -> list | None:
    """Each block's attention submodule, `model.blocks[i].attn`, in order; None when the model has none."""
    blocks = getattr(model, "blocks", None)
    if blocks is None or len(blocks) == 0 or not all(hasattr(block, "attn") for block in blocks):
        return None
    return [block.attn for block in blocks]


def _recorded_attention(model, batch: torch.Tensor, attention_modules: list) -> list:
    """Run `model` on `batch` (B, T) once in eval mode without gradients and return what each attention module
    returned as its weights, averaged over the batch: one tensor (n_heads, T, T) on the CPU per module, or None
    where the module did not return `(output, weights (B, n_heads, T, T))`. The model's mode is restored and the
    hooks are removed whatever happens."""
    recorded = [None] * len(attention_modules)

    def keeper(layer: int):
        def keep(module, inputs, output):
            weights = output[1] if isinstance(output, tuple) and len(output) == 2 else None
            if isinstance(weights, torch.Tensor) and weights.dim() == 4:
                recorded[layer] = weights.detach().to("cpu", torch.float64).mean(dim=0)
        return keep

    hooks = [module.register_forward_hook(keeper(layer)) for layer, module in enumerate(attention_modules)]
    mode_before = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(batch)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(mode_before)
    return recorded


def _copying_queries(half_len: int) -> torch.Tensor:
    """The positions t = n - 1 .. 2n - 2 whose next token, t + 1, is in the mirrored half: (n,)."""
    return torch.arange(half_len - 1, 2 * half_len - 1)


def mirror_weights(weights: torch.Tensor, half_len: int) -> torch.Tensor:
    """weights (n_heads, 2n, 2n) -> (n_heads,): the weight each query t = n - 1 .. 2n - 2 (those whose next token
    is a mirrored one) puts on key 2n - 2 - t, the token it must copy next, averaged over those queries."""
    n = half_len
    queries = _copying_queries(n)
    return weights[:, queries, 2 * n - 2 - queries].mean(dim=-1)


def show_trained_attention(model, batch: torch.Tensor, half_len: int) -> None:
    """The attention of a model trained on reversal: one heatmap per head (columns) and layer (rows), each the
    weights averaged over `batch` (B, 2 * half_len), query down, key across; outlined, the key 2n - 2 - t that each
    query t = n - 1 .. 2n - 2 must read to predict the mirrored token t + 1. Below, for every head, the average
    weight on those keys."""
    n = half_len
    attention_modules = _attention_submodules(model)
    if attention_modules is None:
        print("⏳ This figure reads the attention of every block, `model.blocks[i].attn`, as notebook 05 names "
              "them; your model has no such submodules, so there is nothing to draw yet.")
        return
    parameter = next(model.parameters(), None)
    try:
        recorded = _recorded_attention(model, batch.to(parameter.device) if parameter is not None else batch,
                                       attention_modules)
    except NotImplementedError:
        return _not_written(type(model).__name__)
    if any(weights is None for weights in recorded):
        print("⏳ This figure needs each block's `attn` to return `(output, weights)`, with weights "
              "(B, n_heads, T_q, T_k), as notebook 04 asks; yours do not yet.")
        return
    n_layers, n_heads = len(recorded), recorded[0].shape[0]
    mirrors = [mirror_weights(weights, n) for weights in recorded]  # n_layers tensors (n_heads,)
    queries = _copying_queries(n)
    fig, axes = plt.subplots(n_layers, n_heads, figsize=(3.2 * n_heads, 3.2 * n_layers), squeeze=False)
    for layer, weights in enumerate(recorded):
        for head, ax in enumerate(axes[layer]):
            heatmap(ax, weights[head], f"layer {layer}, head {head}: {mirrors[layer][head]:.2f}",
                    "key" if layer == n_layers - 1 else "", "query" if head == 0 else "", cmap="Blues", vmin=0,
                    vmax=1, colorbar=head == n_heads - 1)
            ax.plot(2 * n - 2 - queries, queries, "s", markersize=9, markerfacecolor="none",
                    markeredgecolor="tab:red", markeredgewidth=1.2)
            ax.axhline(n - 1.5, color="tab:orange", linestyle=":", linewidth=1)
            ax.set_xticks(range(0, 2 * n, 2))
            ax.set_yticks(range(0, 2 * n, 2))
    fig.suptitle(f"Attention after training, averaged over {batch.shape[0]} sequences (row = query t, column = key)\n"
                 "red squares: key 2n - 2 - t, the token that query t must copy next; they start below the dotted line")
    fig.tight_layout()
    plt.show()
    print("Average weight a query puts on the key it must copy, over the queries below the dotted line "
          "(1 = all of it):")
    for layer, found in enumerate(mirrors):
        print(f"layer {layer}: " + "   ".join(f"head {head} {w:.2f}" for head, w in enumerate(found.tolist())))
    layer, head = divmod(int(torch.stack(mirrors).argmax()), n_heads)
    print(f"The clearest mirror: layer {layer}, head {head}, with {mirrors[layer][head]:.2f}.")
