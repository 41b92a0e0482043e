"""05 · The whole architecture: the encoder-decoder's data flow, teacher forcing, the cross-attention a tiny
encoder-decoder learns when it is trained to reverse letters, temperature and top-k, and what a key-value cache saves
in generation."""
from __future__ import annotations

import math

import matplotlib.pyplot as plt
import torch

from course.plots.drawing import not_written_yet, heatmap
from course.progress_bar import progress


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
    ax.text(4.4, 4.6, "keys and values\n(B, S, d_model),\nto every\ndecoder block", fontsize=8, color="tab:blue",
            va="top")  # under the arrow, clear of it and of the boxes
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
        return not_written_yet("EncoderDecoderTransformer")
    source = torch.randint(0, 10, (1, 5))
    with torch.no_grad():
        at_once = model(source, decoder_input)  # (1, T, V): every position in one pass
        gaps = [(model(source, decoder_input[:, : t + 1])[:, -1] - at_once[:, t]).abs().max().item()
                for t in range(decoder_input.shape[1])]
        loss = torch.nn.functional.cross_entropy(at_once.flatten(0, 1), labels.flatten())
    print(f"one pass over {decoder_input.shape[1]} positions; largest difference from the prefix-by-prefix passes: "
          f"{max(gaps):.2e}")
    uniform = math.log(len(vocab))
    verdict = ("worse than a uniform guess. Its random logits make an uneven guess that knows nothing: on average it "
               "still gives the right token 1 / V, but the logarithm of an uneven share averages lower (the logarithm "
               "is concave), so the cross-entropy is higher" if loss.item() > uniform else "no better than a uniform guess")
    print(f"the teacher-forced loss of this untrained model: {loss.item():.3f} nats per token; a uniform guess over "
          f"the {len(vocab)} tokens scores ln({len(vocab)}) = {uniform:.3f}, so the model is "
          f"{abs(loss.item() / uniform - 1):.0%} {'above' if loss.item() > uniform else 'below'} it, {verdict}")


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


# The tiny encoder-decoder that learns to reverse: the source is LENGTH letters drawn from LETTERS, the target the
# same letters in reverse order. Source ids are 0..9 (A..J); the target vocabulary adds <s> as id 10.
LETTERS = "ABCDEFGHIJ"
START = len(LETTERS)  # the id of <s> in the target vocabulary
LENGTH = 8
REVERSER = dict(src_vocab_size=len(LETTERS), tgt_vocab_size=len(LETTERS) + 1, d_model=32, n_heads=2, d_ff=64,
                n_encoder_layers=1, n_decoder_layers=1, max_len=LENGTH)
REVERSER_STEPS = 300  # about 3 s on one CPU core
REVERSER_STEPS_GRADED = 80  # the pattern is there already (graded runs are kept short)


def reversal_pairs(batch_size: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A batch for teacher forcing: source (B, LENGTH), decoder input (B, LENGTH), labels (B, LENGTH).
    The target is <s> followed by the reversed source; the decoder reads it shifted right (without its last
    letter) and must predict it without the <s>: label t is source letter LENGTH - 1 - t."""
    source = torch.randint(0, len(LETTERS), (batch_size, LENGTH), generator=generator)
    target = torch.cat([torch.full((batch_size, 1), START), source.flip(-1)], dim=1)  # (B, LENGTH + 1)
    return source, target[:, :-1], target[:, 1:]


def _kind_word(error: Exception, doing: str) -> None:
    """What the reversal figure says instead of drawing when the student's EncoderDecoderTransformer raised."""
    if isinstance(error, NotImplementedError):
        return not_written_yet("EncoderDecoderTransformer")
    print(f"⏳ Your EncoderDecoderTransformer raised {type(error).__name__} {doing}: {error}. "
          "The checks above show where; this figure waits for it.")


def train_tiny_reverser(EncoderDecoderTransformer, steps: int | None = None, seed: int = 0, batch_size: int = 64,
                        lr: float = 1e-2):
    """Train a tiny EncoderDecoderTransformer (REVERSER) on the CPU to reverse LENGTH letters, with teacher forcing
    and the cross-entropy of every position; `steps` defaults to REVERSER_STEPS (REVERSER_STEPS_GRADED while the
    notebook is graded). Prints the loss and the accuracy on 1000 new sequences and returns the trained model,
    or None after a kind word when the class is not written yet or fails."""
    from course.runtime import under_grading

    if steps is None:
        steps = REVERSER_STEPS_GRADED if under_grading() else REVERSER_STEPS
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tensors this small train fastest on one thread
    try:
        torch.manual_seed(seed)
        model = EncoderDecoderTransformer(**REVERSER).cpu().train()
        optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
        generator = torch.Generator().manual_seed(seed)
        losses = []
        for _ in progress(range(steps), "training"):  # a few seconds, a minute on a busy machine
            source, decoder_input, labels = reversal_pairs(batch_size, generator)
            logits = model(source, decoder_input)  # (B, LENGTH, 11)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            losses.append(loss.detach().item())
        source, decoder_input, labels = reversal_pairs(1000, torch.Generator().manual_seed(seed + 1))
        model.eval()
        with torch.no_grad():
            right = model(source, decoder_input).argmax(dim=-1) == labels  # (1000, LENGTH)
    except Exception as error:  # an unwritten or broken model must not stop the notebook
        return _kind_word(error, "while the tiny model was training")
    finally:
        torch.set_num_threads(threads)
    print(f"{steps} steps of {batch_size} sequences: loss {losses[0]:.2f} at the start, {losses[-1]:.2g} at the end. "
          f"On 1000 new sequences: {right.float().mean():.1%} of the letters right (chance {1 / len(LETTERS):.0%}), "
          f"{right.all(dim=1).float().mean():.1%} of the sequences reversed without a mistake.")
    return model


def mirrored_weight(weights: torch.Tensor) -> torch.Tensor:
    """weights (..., T, S) with T == S -> (...,): the weight each target position t puts on source position
    S - 1 - t, the letter it must write, averaged over t."""
    t = torch.arange(weights.shape[-2])
    return weights[..., t, weights.shape[-1] - 1 - t].mean(dim=-1)


def show_cross_attention(model, source: str = "HDAGBJEC") -> None:
    """The cross-attention of the last decoder block of `model` (trained by train_tiny_reverser) on one source,
    one heatmap per head: row = target position (the query, from the decoder), column = source position (the key,
    from the encoder's memory), each labelled with its letter. Does nothing when `model` is None."""
    from course.plots.recorded import recorded_attention

    if model is None:
        return None
    blocks = getattr(model, "decoder", None)
    cross = getattr(blocks[-1], "cross_attn", None) if isinstance(blocks, (torch.nn.ModuleList, list)) and blocks else None
    if cross is None:
        print("⏳ This figure reads the cross-attention of the last decoder block, `model.decoder[-1].cross_attn`, "
              "as Exercises 2 and 3 name them; your model has no such submodule yet.")
        return None
    ids = torch.tensor([[LETTERS.index(letter) for letter in source]])  # (1, S)
    reversed_letters = source[::-1]
    decoder_input = torch.tensor([[START] + [LETTERS.index(letter) for letter in reversed_letters[:-1]]])  # (1, T)
    try:
        (weights,) = recorded_attention(model, (ids, decoder_input), [cross])  # (n_heads, T, S)
    except Exception as error:  # a broken model must not stop the notebook
        return _kind_word(error, "while its cross-attention was read")
    if weights is None:
        print("⏳ This figure needs `cross_attn` to return `(output, weights)`, with weights (B, n_heads, T, S), "
              "as notebook 04 asks; yours does not yet.")
        return None
    n_heads, T, S = weights.shape
    reads = ["<s>"] + list(reversed_letters[:-1])
    rows = [f"{t}: {reads[t]} → {reversed_letters[t]}" for t in range(T)]
    columns = [f"{s}: {letter}" for s, letter in enumerate(source)]
    mirrored = mirrored_weight(weights)  # (n_heads,)
    fig, axes = plt.subplots(1, n_heads, figsize=(0.4 + 4.6 * n_heads, 4.6), squeeze=False)
    for head, ax in enumerate(axes[0]):
        heatmap(ax, weights[head], f"head {head}: {mirrored[head]:.2f} on the mirrored letter",
                "source position: letter (key)", "target position: reads → writes (query)" if head == 0 else "",
                cmap="Blues", vmin=0, vmax=1,
                xticklabels=columns, yticklabels=rows if head == 0 else [""] * T, colorbar=head == n_heads - 1)
        for t in range(T):
            for s in range(S):
                w = weights[head, t, s].item()
                if w >= 0.05:
                    ax.text(s, t, f"{w:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if w > 0.6 else "black")
    fig.suptitle(f"Cross-attention of the trained model (last decoder block), reversing {source} → "
                 f"{reversed_letters}\n"
                 "rows: queries, from the decoder; columns: keys, from the encoder's memory")
    fig.tight_layout()
    plt.show()
    print("Weight each target position puts on the source letter it must write (S - 1 - t), averaged over the "
          f"{T} positions: " + ", ".join(f"head {h} {w:.2f}" for h, w in enumerate(mirrored.tolist())))
    head, t, s, w = strongest_stray_weight(weights)
    print(f"The largest weight on a letter two or more places from the one a row writes: {w:.2f}, in head {head}'s "
          f"row {t}, on column {s}, {abs(s - (S - 1 - t))} places from column {S - 1 - t}, the letter that row writes.")


def strongest_stray_weight(weights: torch.Tensor) -> tuple[int, int, int, float]:
    """weights (n_heads, T, S) with T == S -> (head, row t, column s, weight) of the largest weight any row puts on
    a source position two or more places from S - 1 - t, the letter it must write (neighbours do not count)."""
    _, T, S = weights.shape
    away = (torch.arange(S)[None, :] - (S - 1 - torch.arange(T))[:, None]).abs()  # (T, S)
    stray = weights.masked_fill(away < 2, float("-inf"))
    head, t, s = (int(i) for i in torch.unravel_index(stray.argmax(), stray.shape))
    return head, t, s, stray[head, t, s].item()


# The model and the lengths the cache's timing cell uses (bench/kv_cache.py measures the same): an untrained
# DecoderOnlyTransformer, a prompt of CACHE_PROMPT tokens, then each number of new tokens, greedily.
CACHE_MODEL = dict(vocab_size=64, d_model=64, n_heads=4, d_ff=128, n_layers=2, max_len=264)
CACHE_PROMPT = 8
CACHE_LENGTHS = (32, 64, 128, 256)
CACHE_LENGTHS_GRADED = (16, 32, 64)  # graded runs are kept short
CACHE_REPEATS, CACHE_REPEATS_GRADED = 3, 1


def time_cached_generation(model, prompt, lengths, repeats, generate, generate_cached) -> list[dict]:
    """For each number of new tokens: the median seconds of `repeats` greedy runs of each generator, the two taking
    turns, each run's seconds ("runs"), and whether they wrote the same tokens."""
    import statistics
    import time

    rows = []
    for n in lengths:
        seconds = {"generate": [], "generate_cached": []}
        written = {}
        for _ in range(repeats):
            for name, write in (("generate", generate), ("generate_cached", generate_cached)):
                started = time.perf_counter()
                written[name] = write(model, prompt, n, temperature=0)
                seconds[name].append(time.perf_counter() - started)
        rows.append({"new": n, "generate": statistics.median(seconds["generate"]),
                     "generate_cached": statistics.median(seconds["generate_cached"]),
                     "same": torch.equal(written["generate"], written["generate_cached"]), "runs": seconds})
    return rows


def show_cache_speed(DecoderOnlyTransformer, generate, generate_cached, lengths=None, repeats=None, seed=0) -> None:
    """Time the student's `generate` against their `generate_cached` on one CPU thread, on an untrained
    DecoderOnlyTransformer(**CACHE_MODEL) after a prompt of CACHE_PROMPT tokens, for each number of new tokens in
    `lengths` (CACHE_LENGTHS; CACHE_LENGTHS_GRADED, once each, while the notebook is graded); draw the median seconds
    of both against the number of new tokens, and print the speed-up at each length and whether both wrote the same
    tokens. Says so kindly when a piece is not written yet or fails."""
    from course.runtime import under_grading

    graded = under_grading()
    lengths = lengths or (CACHE_LENGTHS_GRADED if graded else CACHE_LENGTHS)
    repeats = repeats or (CACHE_REPEATS_GRADED if graded else CACHE_REPEATS)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # one thread: steady figures on a shared machine, and tensors this small run fastest so
    try:
        torch.manual_seed(seed)
        model = DecoderOnlyTransformer(**CACHE_MODEL).eval()
        prompt = torch.randint(0, CACHE_MODEL["vocab_size"], (1, CACHE_PROMPT),
                               generator=torch.Generator().manual_seed(seed))
        time_cached_generation(model, prompt, (2,), 1, generate, generate_cached)  # warm-up: first calls are slow
        rows = time_cached_generation(model, prompt, lengths, repeats, generate, generate_cached)
    except NotImplementedError:
        return not_written_yet("DecoderOnlyTransformer, generate and generate_cached")
    except Exception as error:  # a broken piece must not stop the notebook
        print(f"⏳ Timing the two generators raised {type(error).__name__}: {error}. The checks above show where; this "
              "figure waits for them.")
        return None
    finally:
        torch.set_num_threads(threads)
    new = [row["new"] for row in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
    left.plot(new, [row["generate"] for row in rows], "o-", color="tab:red", label="generate (the whole text each step)")
    left.plot(new, [row["generate_cached"] for row in rows], "o-", color="tab:blue",
              label="generate_cached (one position each step)")
    left.set(xlabel="new tokens", ylabel="seconds (median)", title=f"writing after a prompt of {CACHE_PROMPT} tokens, "
             "one CPU thread")
    left.legend(fontsize=8)
    right.bar([str(n) for n in new], [row["generate"] / row["generate_cached"] for row in rows], color="tab:green")
    right.axhline(1, color="black", linewidth=1, linestyle="--")
    right.set(xlabel="new tokens", ylabel="generate's seconds / generate_cached's", title="speed-up of the cache")
    fig.tight_layout()
    plt.show()
    for row in rows:
        print(f"{row['new']:4d} new tokens: generate {row['generate']:.3f} s, generate_cached {row['generate_cached']:.3f} "
              f"s, {row['generate'] / row['generate_cached']:.1f} times as fast; "
              f"{'the same tokens' if row['same'] else 'OTHER TOKENS: see the checks above'}")
