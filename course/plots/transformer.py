"""05 · The whole architecture: the encoder-decoder's data flow, teacher forcing, temperature and top-k."""
from __future__ import annotations

import matplotlib.pyplot as plt
import torch

from course.plots.drawing import not_written_yet

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
        return not_written_yet("EncoderDecoderTransformer")
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
