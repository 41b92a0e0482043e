"""Interactive explorers (ipywidgets). Outside a live notebook they draw their first frame."""
from __future__ import annotations

import math

import ipywidgets as widgets
import matplotlib.pyplot as plt
import torch

from course.runtime import under_grading


def positional_encoding_explorer(positional_encoding, max_len: int = 200, d_model: int = 64):
    """Sliders over a dimension and a position: one column as a wave over positions, one row as a bar chart."""
    if under_grading():
        # Widgets need a live front end; executed headless (nbgrader), their comm traffic can leave
        # the executor waiting for the whole cell timeout. Grading needs no explorer.
        print("(The explorer is interactive: it is skipped while nbgrader runs the notebook.)")
        return
    try:
        pe = positional_encoding(max_len, d_model).detach().to("cpu", torch.float32)
    except NotImplementedError:
        print("⏳ The explorer appears once `positional_encoding` is written.")
        return

    def draw(dimension: int, position: int):
        fig, (wave, row) = plt.subplots(1, 2, figsize=(12, 3.5))
        i = dimension // 2
        wavelength = 2 * math.pi * 10000 ** (2 * i / d_model)
        kind = "sin" if dimension % 2 == 0 else "cos"
        wave.plot(pe[:, dimension], color="tab:blue")
        wave.axvline(position, color="tab:red", linestyle="--")
        wave.set(title=f"dimension {dimension} ({kind}): wavelength {wavelength:,.1f} positions",
                 xlabel="position", ylabel="value", ylim=(-1.1, 1.1))
        row.bar(range(d_model), pe[position], color=["tab:blue" if d % 2 == 0 else "tab:orange" for d in range(d_model)])
        row.set(title=f"position {position}: its {d_model} numbers (blue sin, orange cos)",
                xlabel="dimension", ylim=(-1.1, 1.1))
        fig.tight_layout()
        plt.show()

    widgets.interact(
        draw,
        dimension=widgets.IntSlider(value=0, min=0, max=d_model - 1, description="dimension"),
        position=widgets.IntSlider(value=10, min=0, max=max_len - 1, description="position"),
    )


def attention_head_explorer(TransformerBlock, words, n_layers: int = 3, n_heads: int = 4, d_model: int = 16,
                            seed: int = 4):
    """Sliders over a layer and a head of a stack of pre-norm blocks (seeded random weights, causal mask):
    the attention weights of that head on `words`."""
    if under_grading():
        print("(The explorer is interactive: it is skipped while nbgrader runs the notebook.)")
        return
    T = len(words)
    x = torch.randn(1, T, d_model, generator=torch.Generator().manual_seed(seed))
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    captured = []
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            blocks = [TransformerBlock(d_model, n_heads, 4 * d_model, norm_first=True) for _ in range(n_layers)]
        hooks = []
        for block in blocks:
            with torch.no_grad():
                block.attn.W_q.weight.mul_(3.0)
                block.attn.W_k.weight.mul_(3.0)
            hooks.append(block.attn.register_forward_hook(lambda _m, _i, out: captured.append(out[1][0].detach())))
        try:
            with torch.no_grad():
                h = x
                for block in blocks:
                    h = block(h, mask)
        finally:
            for hook in hooks:
                hook.remove()
    except NotImplementedError:
        print("⏳ The explorer appears once `TransformerBlock` (and the parts it uses) is written.")
        return

    def draw(layer: int, head: int):
        weights = captured[layer][head].to("cpu", torch.float32)
        fig, ax = plt.subplots(figsize=(6, 4.8))
        image = ax.imshow(weights, cmap="Blues", vmin=0, vmax=1)
        ax.set_xticks(range(T), words, rotation=45, ha="right")
        ax.set_yticks(range(T), words)
        ax.set(title=f"block {layer}, head {head}", xlabel="key", ylabel="query")
        for i in range(T):
            for j in range(T):
                w = float(weights[i, j])
                ax.text(j, i, f"{w:.2f}", ha="center", va="center", fontsize=7, color="white" if w > 0.6 else "black")
        fig.colorbar(image, ax=ax, fraction=0.046)
        fig.tight_layout()
        plt.show()

    widgets.interact(
        draw,
        layer=widgets.IntSlider(value=0, min=0, max=n_layers - 1, description="block"),
        head=widgets.IntSlider(value=0, min=0, max=n_heads - 1, description="head"),
    )


def sampling_explorer(generate, samples: int = 400):
    """Sliders for temperature and top-k: what the student's `generate` writes with a hand-made model over the
    letters a-h that prefers the next letter of the alphabet, and how often each letter follows "a"."""
    if under_grading():
        print("(The explorer is interactive: it is skipped while nbgrader runs the notebook.)")
        return
    from course.checks.transformer import ToyLanguageModel

    letters = "abcdefgh"
    V = len(letters)
    follow = torch.full((V, V), -1.0)
    for i in range(V):
        follow[i, (i + 1) % V] = 2.0  # the next letter is likely,
        follow[i, (i + 2) % V] = 1.0  # skipping one less so,
        follow[i, i] = 0.0  # repeating even less
    model = ToyLanguageModel(follow, torch.zeros(V, V), torch.zeros(64, V), max_len=16)
    prompt = torch.zeros(1, 1, dtype=torch.long)  # "a"
    try:
        generate(model, prompt, 1, temperature=0)
    except NotImplementedError:
        print("⏳ The explorer appears once `generate` is written.")
        return

    def draw(temperature: float, top_k: int):
        k = None if top_k == 0 else top_k
        g = torch.Generator().manual_seed(0)
        lines = generate(model, prompt.repeat(4, 1), 15, temperature=temperature, top_k=k, generator=g)
        for line in lines:
            print("".join(letters[i] for i in line.tolist()))
        firsts = generate(model, prompt.repeat(samples, 1), 1, temperature=temperature, top_k=k, generator=g)[:, 1]
        counts = torch.bincount(firsts, minlength=V).float() / samples
        fig, ax = plt.subplots(figsize=(6, 2.5))
        ax.bar(list(letters), counts, color="tab:blue")
        ax.set(title=f"the letter after 'a' in {samples} samples", ylim=(0, 1), ylabel="frequency")
        plt.show()

    widgets.interact(
        draw,
        temperature=widgets.FloatSlider(value=1.0, min=0.0, max=3.0, step=0.1, description="temperature"),
        top_k=widgets.IntSlider(value=0, min=0, max=V, description="top_k (0: off)"),
    )


def shakespeare_sampler(sample, model, vocab, device, prompt: str = "ROMEO.\nO", n_tokens: int = 80):
    """A prompt box, sliders for temperature, top-k and length, and a button that writes with the student's
    `sample` and the trained model."""
    if under_grading():
        print("(The sampler is interactive: it is skipped while nbgrader runs the notebook.)")
        return

    def write(prompt: str, temperature: float, top_k: int, n_tokens: int, seed: int):
        if not prompt.strip():
            print("Type a prompt of at least one word first.")
            return
        generator = torch.Generator(device).manual_seed(seed)
        print(sample(model, vocab, prompt, n_tokens, temperature=temperature, top_k=None if top_k == 0 else top_k,
                     generator=generator))

    widgets.interact_manual(
        write,
        prompt=widgets.Textarea(value=prompt, description="prompt"),
        temperature=widgets.FloatSlider(value=0.8, min=0.0, max=2.0, step=0.05, description="temperature"),
        top_k=widgets.IntSlider(value=0, min=0, max=200, description="top_k (0: off)"),
        n_tokens=widgets.IntSlider(value=n_tokens, min=1, max=400, description="tokens"),
        seed=widgets.IntText(value=0, description="seed"),
    )
