"""07 · Shakespeare: token frequencies and the language model's training curves."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch


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
    ax.set_ylim(top=frequencies[0].item() * 4)  # room above the most frequent token for its label
    rare = int((frequencies[seen] <= 2).sum())
    ax.set(xlabel="rank of the token (1 = most frequent)", ylabel="occurrences",
           title=f"{int(seen.sum()):,} tokens by frequency; {rare:,} of them occur once or twice")
    fig.tight_layout()
    plt.show()


def show_language_model_training(history: dict, baselines: dict, final: float, smooth: int = 50,
                                  final_label: str = "your model, all validation windows",
                                  title: str = "learning Shakespeare: training and validation loss") -> None:
    """Training loss (mean of `smooth` steps) and validation loss against the step, drawn together so that one sees
    where they part, with the baselines' losses and the final validation loss as horizontal lines. history as returned
    by course.training.train_language_model; baselines: {name: nats per token}; final_label names the final
    validation loss (what was scored, on which windows). Where the history has a best
    validation (`best_step`, `best_val`) it is marked, and the steps after it, where validation no longer improved,
    are shaded. `title` names the run. The legend sits below the axes, where it can hide no line and no mark."""
    import math

    steps = torch.tensor(history["step"], dtype=torch.float64)
    losses = torch.tensor(history["train"], dtype=torch.float64)
    window = max(1, min(smooth, len(losses)))
    smoothed = losses.unfold(0, window, 1).mean(1)
    fig, ax = plt.subplots(figsize=(8, 5.6))
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
           title=title)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    plt.show()


def show_learning_rate(learning_rate, max_lr: float, warmup_steps: int, total_steps: int, min_lr: float = 0.0) -> None:
    """The rate `learning_rate(step, max_lr, warmup_steps, total_steps, min_lr)` gives each update, step 0 to
    total_steps - 1, with the end of the warmup marked."""
    steps = list(range(total_steps))
    rates = [float(learning_rate(step, max_lr, warmup_steps, total_steps, min_lr)) for step in steps]
    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot(steps, rates, color="tab:blue", linewidth=1.8)
    ax.axvline(warmup_steps - 0.5, color="tab:gray", linestyle=":", linewidth=1)
    ax.annotate("end of the warmup", (warmup_steps, max_lr), xytext=(6, -14), textcoords="offset points", fontsize=8)
    ax.axhline(min_lr, color="tab:gray", linestyle="--", linewidth=0.8)
    ax.set(xlabel="update (step)", ylabel="learning rate", ylim=(0, max_lr * 1.1),
           title=f"your schedule: warmup over {warmup_steps} updates, cosine down to {min_lr:g}")
    fig.tight_layout()
    plt.show()
