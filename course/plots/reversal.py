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


def write_second_half(model, batch: torch.Tensor, half_len: int) -> torch.Tensor:
    """The second half a model writes on its own: it reads the first half `batch[:, :half_len]`, takes its most likely
    next token, appends it and reads again, half_len times, as `generate` does at temperature 0.
    batch: LongTensor (B, 2 * half_len) on the model's device. Returns LongTensor (B, half_len) on that device."""
    mode = model.training  # put back afterwards
    model.eval()
    try:
        with torch.no_grad():
            written = batch[:, :half_len]
            for _ in range(half_len):
                written = torch.cat([written, model(written)[:, -1].argmax(-1, keepdim=True)], dim=1)
    finally:
        model.train(mode)
    return written[:, half_len:]


def compare_teacher_forced_and_generation(models: dict, teacher_forced: dict, batch: torch.Tensor, half_len: int,
                                          vocab_size: int) -> dict:
    """For each model, its accuracy on the first and second halves when it sees the whole sequence at once (the
    per-position accuracy `teacher_forced[label]` (2 * half_len - 1,) measured above), and what it gets right when it
    writes the second half itself from the first half of each sequence of `batch` (B, 2 * half_len): the share of
    tokens, and the share of whole sequences reversed without a mistake. Printed as a table and returned as
    {label: {"teacher-forced": (first, second), "generated": (tokens, sequences)}}."""
    n = half_len
    table = {}
    print(f"{'':>12}  {'seeing the whole sequence':>27}  {'writing the second half itself':>37}")
    print(f"{'':>12}  {'first half':>12} {'second half':>14}  {'tokens right':>15} {'sequences reversed':>21}")
    for label, model in models.items():
        whole = teacher_forced[label].cpu()
        right = write_second_half(model, batch, n) == batch[:, n:]  # (B, n)
        table[label] = {"teacher-forced": (whole[:n - 1].mean().item(), whole[n - 1:].mean().item()),
                        "generated": (right.float().mean().item(), right.all(1).float().mean().item())}
        (a, b), (c, d) = table[label]["teacher-forced"], table[label]["generated"]
        print(f"{label:>12}  {a:12.1%} {b:14.1%}  {c:15.1%} {d:21.1%}")
    print(f"(chance: {1 / vocab_size:.0%} of the tokens; {batch.shape[0]} test sequences)")
    return table


def base_v_codes(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """tokens LongTensor (..., k) -> (...): each row of k tokens read as one number in base vocab_size, a context's
    row in a count table."""
    return (tokens * vocab_size ** torch.arange(tokens.shape[-1] - 1, -1, -1)).sum(-1)


def most_frequent_followers(contexts: torch.Tensor, followers: torch.Tensor,
                            vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A count table kept sparse: contexts, followers LongTensors (N,) -> (known (K,), best (K,)), the distinct
    contexts seen, sorted, and the token that followed each most often (the smallest one on a tie)."""
    rows = int(contexts.max()) + 1
    if rows <= 100_000:  # small enough for a dense table (rows, vocab_size): counting it is quicker than sorting
        counts = torch.bincount(contexts * vocab_size + followers, minlength=rows * vocab_size).view(rows, vocab_size)
        known = counts.any(1).nonzero().squeeze(1)
        return known, counts[known].argmax(1)
    pairs, counts = torch.unique(contexts * vocab_size + followers, return_counts=True)  # sorted by context
    known, group = torch.unique_consecutive(pairs // vocab_size, return_inverse=True)
    score = counts * vocab_size + (vocab_size - 1 - pairs % vocab_size)  # the most counts first, then the smaller token
    best = torch.zeros_like(known).scatter_reduce(0, group, score, "amax", include_self=False)
    return known, vocab_size - 1 - best % vocab_size


def look_up(known: torch.Tensor, best: torch.Tensor, wanted: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """wanted LongTensor (B,) of contexts -> (guess (B,), seen (B,)): the table's follower of each context, token 0
    for a context the table never saw, and whether it saw it."""
    where = torch.searchsorted(known, wanted).clamp(max=len(known) - 1)
    seen = known[where] == wanted
    return torch.where(seen, best[where], 0), seen


def count_tables(train: torch.Tensor, lengths, vocab_size: int) -> dict:
    """One count table for each context length in `lengths`, counted on every window of `train` (N, 2 * half_len):
    {length: (known, best)} as most_frequent_followers returns them."""
    tables, codes = {}, train  # codes: each window of `length` tokens as one number, by where it starts
    for length in range(1, max(lengths, default=0) + 1):
        if length > 1:  # a window one token longer: its code is the shorter one's, shifted, plus the new token
            codes = codes[:, :-1] * vocab_size + train[:, length - 1:]  # (N, 2n - length + 1)
        if length in lengths:  # each window but the last has a follower, the token just after it
            tables[length] = most_frequent_followers(codes[:, :-1].flatten(), train[:, length:].flatten(), vocab_size)
    return tables


def ngram_second_half(order: int | None, half_len: int, vocab_size: int, train: torch.Tensor, test: torch.Tensor,
                      back_off: bool = False, tables: dict | None = None) -> tuple[float, float]:
    """(accuracy, unseen) of a count-based model on the second half of the reversal sequences `test` (B, 2 * half_len),
    counted on `train` (N, 2 * half_len). An n-gram of `order` predicts each token from the order - 1 tokens before it,
    wherever they stand; order None is a table over the whole prefix, one for each position. Each predicts the
    follower counted most often, token 0 for a context never seen. Without back-off, a position an n-gram this long
    cannot start at counts as chance, 1 / vocab_size, and unseen is the share of its predictions whose context never
    occurs in train. With back-off, a context never seen, or one that would start before the sequence, falls back to
    the longest context before the position that train has (down to one token), and unseen is the share of its
    predictions that fell back. `tables`: count tables by context length (count_tables), when already counted."""
    V, n = vocab_size, half_len
    if order is not None:
        lengths = range(1, order) if back_off else [order - 1]
        tables = {**count_tables(train, [k for k in lengths if k not in (tables or {})], V), **(tables or {})}
    hits, unseen, made = 0.0, 0, 0
    for p in range(n, 2 * n):  # the index of the predicted token
        if order is None:
            table = most_frequent_followers(base_v_codes(train[:, :p], V), train[:, p], V)
            guess, seen = look_up(*table, base_v_codes(test[:, :p], V))
        elif not back_off:
            if p < order - 1:  # the window would start before the sequence
                hits += 1 / V
                continue
            guess, seen = look_up(*tables[order - 1], base_v_codes(test[:, p - (order - 1):p], V))
        else:
            widest = min(order - 1, p)  # the window, cut at the start of the sequence
            guess, found = torch.zeros(len(test), dtype=torch.long), torch.zeros(len(test), dtype=torch.bool)
            for length in range(widest, 0, -1):  # the longest context first
                answer, counted = look_up(*tables[length], base_v_codes(test[:, p - length:p], V))
                if length == widest:  # seen: the whole window fitted and was counted, so no back-off
                    seen = counted & (widest == order - 1)
                guess = torch.where(~found & counted, answer, guess)
                found |= counted
        hits += (guess == test[:, p]).float().mean().item()
        unseen, made = unseen + int((~seen).sum()), made + len(test)
    return hits / n, unseen / max(made, 1)


def show_ngram_baselines(reversal_batch, half_len: int, vocab_size: int, transformer_second_half: float,
                         orders=(2, 3, 4, 5, 6, 8, 10, 12), backed_off=(8, 10, 12), n_train: int = 50_000,
                         seed: int = 0) -> dict:
    """What count-based models reach on the second half of the reversal task: an n-gram sees only the last order - 1
    tokens, and token t + 1 of the second half is token 2n - 2 - t, 2t - 2n + 2 places back; a table over the whole
    prefix sees everything, but only the prefixes it has counted; an n-gram with back-off, where its own window was
    never counted or does not fit, reads the longest shorter one that was. Prints each one's accuracy beside the
    Transformer's, with the share of contexts never seen in training (for back-off: the share of predictions that
    fell back), and returns {order: (accuracy, unseen)}, with the key None for the whole prefix and
    ("back-off", order) for the tables with back-off. Counts are whole numbers, so every CPU prints the same."""
    g = torch.Generator().manual_seed(seed)
    train = reversal_batch(n_train, half_len, vocab_size, generator=g)
    test = reversal_batch(5_000, half_len, vocab_size, generator=g)
    longest = max([*orders, *backed_off]) - 1
    tables = count_tables(train, range(1, longest + 1) if backed_off else sorted({k - 1 for k in orders}),
                          vocab_size)  # shared: each context length is counted once
    found = {order: ngram_second_half(order, half_len, vocab_size, train, test, tables=tables) for order in orders}
    found[None] = ngram_second_half(None, half_len, vocab_size, train, test)
    found.update({("back-off", order): ngram_second_half(order, half_len, vocab_size, train, test, back_off=True,
                                                         tables=tables) for order in backed_off})
    name = lambda order: {2: "bigram", 3: "trigram"}.get(order, f"{order}-gram")  # noqa: E731
    print(f"counted on {n_train:,} sequences, scored on {len(test):,} new ones:")
    print(f"{'':>25}  {'reads':>23}  {'second half':>11}  {'contexts never seen':>19}")
    for order in (*orders, None):
        accuracy, unseen = found[order]
        reads = "every token before" if order is None else f"the last {order - 1} token{'s' if order > 2 else ''}"
        print(f"{'table of whole prefixes' if order is None else name(order):>25}  {reads:>23}  {accuracy:11.1%}  "
              f"{unseen:19.1%}")
    if backed_off:
        print("with back-off, where the window was never counted or would start before the sequence:")
        print(f"{'':>25}  {'reads':>23}  {'second half':>11}  {'predictions backed off':>22}")
        for order in backed_off:
            accuracy, fell = found["back-off", order]
            print(f"{name(order) + ' with back-off':>25}  {f'the last 1 to {order - 1} tokens':>23}  {accuracy:11.1%}  "
                  f"{fell:22.1%}")
    print(f"{'your Transformer':>25}  {'every token before':>23}  {transformer_second_half:11.1%}  {'(no table)':>19}")
    return found
