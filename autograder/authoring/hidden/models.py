"""Models and weights the hidden tests give to the student's code: random weights by parameter name, the exact
next-token probabilities of a model, and stand-ins built on torch's own layers for pieces with tests of their own.
Nothing here solves an exercise: this module is loaded into graded kernels, where the reference never is."""
import torch

from course.checks.attention_block import torch_mask


def random_state(module: torch.nn.Module, g: torch.Generator) -> dict:
    """Random float64 values for every parameter (norm weights around 1), by name."""
    state = {}
    for name, p in module.named_parameters():
        centre = 1.0 if "norm" in name and name.endswith("weight") else 0.0
        scale = 0.3 if p.dim() == 1 else p.shape[-1] ** -0.5
        state[name] = centre + scale * torch.randn(p.shape, generator=g, dtype=torch.float64)
    return state


def next_probabilities(model, tokens, temperature, top_k) -> torch.Tensor:
    """softmax(logits / temperature) of the last position, top-k filtered: (B, V)."""
    with torch.no_grad():
        logits = model(tokens[:, -model.embedding.max_len:])[:, -1] / temperature
    if top_k is not None:
        kth = logits.topk(top_k, dim=-1).values[:, -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    return logits.softmax(-1)


def pair_probabilities(model, prompt, temperature, top_k) -> torch.Tensor:
    """Exact probability of each pair (first, second) of new tokens after `prompt` (1, T0): (V, V)."""
    first = next_probabilities(model, prompt, temperature, top_k)[0]  # (V,)
    V = first.shape[0]
    extended = torch.cat([prompt.expand(V, -1), torch.arange(V)[:, None]], dim=1)  # every possible first token
    second = next_probabilities(model, extended, temperature, top_k)  # (V, V)
    return first[:, None] * second


def blocked_for_torch(mask, batch: int, n_heads: int, T_q: int, T_k: int):
    """The course's mask as torch's attn_mask, (batch * n_heads, T_q, T_k), True = blocked; a query that may attend
    to no key is let attend to every key (torch would give NaN). For stand-ins, which need only be the same on both
    sides of a hidden test."""
    if mask is None:
        return None
    blocked = torch_mask(mask, batch, n_heads, T_q, T_k)
    return blocked & ~blocked.all(-1, keepdim=True)


class StandInDecoderBlock(torch.nn.Module):
    """Stands where a DecoderBlock is (notebook 05): torch's nn.TransformerDecoderLayer behind the course's call
    (x, memory, self_mask=None, memory_mask=None) and masks. Not the exercise: torch's parameter names and layout."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int, dropout: float = 0.0, norm_first: bool = True):
        super().__init__()
        self.n_heads = n_heads
        self.inner = torch.nn.TransformerDecoderLayer(d_model, n_heads, d_ff, dropout=0.0, batch_first=True,
                                                      norm_first=norm_first)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        (B, T, _), S = x.shape, memory.shape[1]
        return self.inner(x, memory, tgt_mask=blocked_for_torch(self_mask, B, self.n_heads, T, T),
                          memory_mask=blocked_for_torch(memory_mask, B, self.n_heads, T, S))
