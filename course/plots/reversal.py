"""06 · Reversal: the training curves against the floor, and the trained model's attention."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from course.plots.drawing import not_written_yet, heatmap
from course.plots.recorded import recorded_attention as _recorded_attention

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


def _attention_submodules(model) -> list | None:
    """Each block's attention submodule, `model.blocks[i].attn`, in order; None when the model has none."""
    blocks = getattr(model, "blocks", None)
    if blocks is None or len(blocks) == 0 or not all(hasattr(block, "attn") for block in blocks):
        return None
    return [block.attn for block in blocks]


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
        return not_written_yet(type(model).__name__)
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


def prefix_accuracy(model, batch: torch.Tensor) -> torch.Tensor:
    """Next-token accuracy at every predicted position `(T - 1,)` when the model reads, for the prediction of token
    t + 1, the prefix `batch[:, :t + 1]` alone, as `generate` feeds it: a model that peeks at later tokens during
    training finds none here. batch: LongTensor (B, T) on the model's device."""
    mode = model.training  # put back afterwards
    model.eval()
    try:
        with torch.no_grad():
            found = [(model(batch[:, :t + 1])[:, -1].argmax(-1) == batch[:, t + 1]).float().mean()
                     for t in range(batch.shape[1] - 1)]
    finally:
        model.train(mode)
    return torch.stack(found).cpu()


def compare_teacher_forced_and_prefix(models: dict, teacher_forced: dict, batch: torch.Tensor, half_len: int,
                                      vocab_size: int) -> dict:
    """For each model, its accuracy on the first and second halves when it sees the whole sequence at once (the
    per-position accuracy `teacher_forced[label]` measured above) and when it reads prefixes only; printed as a
    table and returned as {label: {"teacher-forced": (first, second), "prefixes only": (first, second)}}."""
    n = half_len
    table = {}
    print(f"{'':>16}  {'seeing the whole sequence':>27}  {'reading prefixes only (as generate)':>36}")
    print(f"{'':>16}  {'first half':>12} {'second half':>14}  {'first half':>18} {'second half':>17}")
    for label, model in models.items():
        whole, prefix = teacher_forced[label].cpu(), prefix_accuracy(model, batch)
        table[label] = {"teacher-forced": (whole[:n - 1].mean().item(), whole[n - 1:].mean().item()),
                        "prefixes only": (prefix[:n - 1].mean().item(), prefix[n - 1:].mean().item())}
        (a, b), (c, d) = table[label]["teacher-forced"], table[label]["prefixes only"]
        print(f"{label:>16}  {a:12.1%} {b:14.1%}  {c:18.1%} {d:17.1%}")
    print(f"(chance: {1 / vocab_size:.0%})")
    return table


def ngram_second_half_accuracy(order: int, half_len: int, vocab_size: int, train: torch.Tensor,
                               test: torch.Tensor) -> float:
    """The second-half accuracy of a count-based n-gram model of `order` (it predicts each token from the
    order - 1 tokens before it, by the most frequent follower in `train`; an unseen context predicts token 0) on the
    reversal sequences `test` (B, 2 * half_len). train, test: LongTensors of reversal sequences."""
    context = order - 1
    V = vocab_size

    def codes(sequences: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        windows = sequences.unfold(1, context + 1, 1)  # (B, T - context, order): context, then the next token
        weights = V ** torch.arange(context - 1, -1, -1)
        return (windows[..., :-1] * weights).sum(-1), windows[..., -1]

    seen, following = codes(train)
    counts = torch.bincount((seen * V + following).flatten(), minlength=V ** order).reshape(V ** context, V)
    wanted, actual = codes(test)
    guess = counts[wanted].argmax(-1)  # (B, T - context); a context never seen has all-zero counts: token 0
    first_predicted = context  # windows start at position 0; window i predicts token i + context
    second = torch.arange(2 * half_len - 1)[half_len - 1:] + 1  # the predicted tokens n .. 2n - 1
    columns = second - first_predicted
    hits = (guess[:, columns[columns >= 0]] == actual[:, columns[columns >= 0]]).float()
    unseen = int((columns < 0).sum())  # positions an n-gram this long cannot even start at: counted as chance
    return (hits.sum(1).mean().item() + unseen / vocab_size) / len(columns)


def show_ngram_baselines(reversal_batch, half_len: int, vocab_size: int, transformer_second_half: float,
                         orders=(2, 3, 4, 5), n_train: int = 50_000, seed: int = 0) -> dict:
    """What an n-gram model reaches on the second half of the reversal task: it sees only the last order - 1 tokens,
    and token t + 1 of the second half is token 2n - 2 - t, 2t - 2n + 2 places back. Prints each order's accuracy
    beside the Transformer's and returns {order: accuracy}."""
    g = torch.Generator().manual_seed(seed)
    train = reversal_batch(n_train, half_len, vocab_size, generator=g)
    test = reversal_batch(5_000, half_len, vocab_size, generator=g)
    found = {order: ngram_second_half_accuracy(order, half_len, vocab_size, train, test) for order in orders}
    for order, accuracy in found.items():
        name = {2: "bigram", 3: "trigram"}.get(order, f"{order}-gram")
        print(f"{name:>8} (reads the last {order - 1} token{'s' if order > 2 else ''}): second half {accuracy:.1%}")
    print(f"{'your Transformer (reads the whole prefix)':>8}: second half {transformer_second_half:.1%}")
    return found
