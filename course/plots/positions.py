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


def show_scores_after_projection(positional_encoding, offset_rotation, d_model: int = 64, k: int = 3,
                                 starts=tuple(range(0, 301, 10)), shown=(0, 50, 120, 300), seed: int = 0) -> None:
    """The attention score between position p and position p + k, for every p in `starts`, three ways, with one
    fixed token vector e (the same word at both places) and random projections W_q, W_k `(d_model, d_model)`:

    - the table alone, PE[p] · PE[p + k];
    - the table added to the token, then projected, as attention computes it: W_q (e + PE[p]) · W_k (e + PE[p + k]);
    - RoPE: the token projected, then each query and key turned by its own position with `offset_rotation`:
      M_p W_q e · M_{p+k} W_k e, which is W_q e · M_k W_k e (a rotation keeps dot products) whatever p is.

    Draws the three against p, and prints them at the positions `shown` and how much each varies."""
    try:
        pe = positional_encoding(max(starts) + k + 1, d_model).detach().to("cpu", torch.float64)
        turn = {p: offset_rotation(p, d_model, dtype=torch.float64) for p in sorted({*starts, *(p + k for p in starts)})}
    except NotImplementedError:
        return not_written_yet("positional_encoding and offset_rotation")
    g = torch.Generator().manual_seed(seed)
    W_q, W_k = (torch.randn(d_model, d_model, generator=g, dtype=torch.float64) / d_model ** 0.5 for _ in range(2))
    e = torch.randn(d_model, generator=g, dtype=torch.float64)
    scores = {
        "table alone: PE[p] · PE[p+k]": [float(pe[p] @ pe[p + k]) for p in starts],
        "added, then projected: W_q(e + PE[p]) · W_k(e + PE[p+k])":
            [float((W_q @ (e + pe[p])) @ (W_k @ (e + pe[p + k]))) for p in starts],
        "RoPE: projected, then turned: M_p W_q e · M_(p+k) W_k e":
            [float((turn[p].detach().double() @ (W_q @ e)) @ (turn[p + k].detach().double() @ (W_k @ e))) for p in starts],
    }
    fig, ax = plt.subplots(figsize=(8, 4))
    for (label, values), style in zip(scores.items(), ("-", "-", "--")):
        ax.plot(list(starts), values, style, label=label, linewidth=2)
    ax.set(title=f"The score between p and p + {k} (d_model = {d_model}, random W_q and W_k)", xlabel="position p",
           ylabel="score")
    ax.legend(fontsize=8)
    fig.tight_layout()
    plt.show()
    at = [starts.index(p) for p in shown]
    print(f"{'p':>22}" + "".join(f"{p:>9}" for p in shown) + "   spread over all p")
    for label, values in scores.items():
        spread = max(values) - min(values)
        print(f"{label.split(':')[0]:>22}" + "".join(f"{values[i]:9.3f}" for i in at) + f"   {spread:.3g}")
