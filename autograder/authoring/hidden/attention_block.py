"""Hidden tests for notebook 04. Fresh sizes, weights and masks on every device and dtype. Each side's module gets
the same fresh weights by parameter name (drawn from the name, so the order the parameters are declared in does not
matter); the names and shapes themselves are an observation. `TransformerBlock` runs with stand-in parts built from
torch's own layers, so that it grades only how the block joins its parts."""
import zlib
from collections import OrderedDict
from dataclasses import dataclass

import torch
from torch import nn

from autograder.authoring.hidden.models import blocked_for_torch
from autograder.authoring.hidden.observe import HiddenTestFailed, Observations, Rule, generator, grid, hidden_test
from course.checks.attention_block import BLOCK_PARTS
from course.checks.stand_ins import earlier_pieces_replaced


# ---- weights by name ----

@dataclass(frozen=True)
class SameParameters(Rule):
    """The student's (name, shape) pairs equal the reference's; the message names what is missing or extra."""

    def judge(self, what, student, reference):
        if not isinstance(student, list) or not all(isinstance(p, list) and len(p) == 2 for p in student):
            return f"{what}: could not be read"
        own, expected = ({n: tuple(s) for n, s in pairs} for pairs in (student, reference))
        missing, extra = sorted(set(expected) - set(own)), sorted(set(own) - set(expected))
        if missing or extra:
            return (f"{what}: the parameter names differ from the exercise's (missing {missing[:6]}, "
                    f"unexpected {extra[:6]}); use the submodule names of the exercise and share no weights")
        wrong = [n for n in sorted(expected) if own[n] != expected[n]]
        if wrong:
            return f"{what}: {wrong[0]} has shape {own[wrong[0]]}, expected {expected[wrong[0]]}"
        return None


def case_seed(g: torch.Generator) -> int:
    """A seed for one case's weights, drawn from the shared generator the same way whatever the module holds."""
    return int(torch.randint(0, 2 ** 31, (1,), generator=g))


def fresh_weights(seen: Observations, module: nn.Module, what: str, seed: int, spread: float = 1.0) -> nn.Module:
    """Record `module`'s parameter names and shapes, then give each parameter values drawn from `seed` and its name
    alone: a layer norm's scale (a 1-d weight) around 1, the rest ~ spread * N(0, 1) / sqrt(fan-in)."""
    parameters = dict(module.named_parameters())
    seen.judged_by(f"{what}: parameter names and shapes",
                   sorted([name, list(p.shape)] for name, p in parameters.items()), SameParameters())
    with torch.no_grad():
        for name, p in parameters.items():
            fresh = torch.randn(p.shape, generator=generator(seed + zlib.crc32(name.encode())), dtype=torch.float64)
            if p.dim() == 1 and name.endswith("weight"):
                p.copy_(1 + 0.5 * fresh)
            else:
                p.copy_(spread * fresh / max(p.shape[-1] if p.dim() else 1, 1) ** 0.5)
    return module


def described(name: str, init: dict) -> str:
    """The exercise's name (never the class's own, which may differ) with its arguments."""
    return f"{name}({', '.join(f'{k}={v}' for k, v in init.items())})"


# ---- inputs ----

def _mask(shape, g, keep_first: bool = True) -> torch.Tensor:
    mask = torch.rand(shape, generator=g) < float(torch.empty(1).uniform_(0.3, 0.9, generator=g))
    if keep_first:
        mask[..., 0] = True
    return mask


def _sizes(g, low, high, n):
    return [int(v) for v in torch.randint(low, high, (n,), generator=g)]


def _on(tensor, device, dtype=None):
    """A copy on `device` (in `dtype`): a change in place by the code under test stays with this call."""
    if tensor is None:
        return None
    return tensor.to(device, dtype, copy=True) if dtype is not None else tensor.to(device, copy=True)


def _shape(tensor) -> str:
    return "None" if tensor is None else str(tuple(tensor.shape))


# ---- the hidden tests ----

def _attend(seen: Observations, module: nn.Module, what: str, x_q, x_kv, mask) -> None:
    """What `module` returns, weights and output, on every device and dtype."""
    what += f" on x_q {_shape(x_q)}, x_kv {_shape(x_kv)}, mask {_shape(mask)}"
    for device, dtype in grid():
        case = f"{what} ({device.type}, {dtype})"
        result = module.to(device, dtype)(_on(x_q, device, dtype), _on(x_kv, device, dtype), _on(mask, device))
        if not (isinstance(result, tuple) and len(result) == 2):
            raise HiddenTestFailed(f"{case}: expected a tuple (output, weights)")
        seen.close(f"weights for {case}", result[1], dtype)
        seen.close(f"output for {case}", result[0], dtype)


def observe_multi_head_attention(MultiHeadAttention, trials: int = 8, seed: int = 401) -> Observations:
    seen = Observations()
    g = generator(seed)
    seen.raises("MultiHeadAttention(12, 5)", lambda: MultiHeadAttention(12, 5))
    seen.raises("MultiHeadAttention(6, 4)", lambda: MultiHeadAttention(6, 4))
    for trial in range(trials):
        n_heads, d_head, B, T_q, T_k = _sizes(g, 1, 6, 5)
        d_model = n_heads * d_head
        cross = trial % 2 == 1
        if not cross:
            T_k = T_q
        kind = trial % 4 if trial < 4 else int(torch.randint(0, 5, (1,), generator=g))
        mask = [None,
                torch.ones(T_q, T_k, dtype=torch.bool).tril(T_k - T_q) | (torch.arange(T_k) == 0),
                _mask((B, T_q, T_k), g),
                _mask((B, n_heads, T_q, T_k), g),
                _mask((B, 1, T_k), g)][kind]
        weights_seed = case_seed(g)
        x_q = torch.randn(B, T_q, d_model, generator=g, dtype=torch.float64)
        x_kv = torch.randn(B, T_k, d_model, generator=g, dtype=torch.float64) if cross else None
        what = f"case {trial + 1}: " + described("MultiHeadAttention", {"d_model": d_model, "n_heads": n_heads})
        module = fresh_weights(seen, MultiHeadAttention(d_model, n_heads), what, weights_seed, spread=2.0)
        _attend(seen, module, what, x_q, x_kv, mask)
    # The edges: one query, one key, one sequence; a 4-d mask that broadcasts over the batch; a 2-d mask for
    # sequences of different lengths; dropout > 0 in eval mode (no dropout at all).
    edges = [  # (B, T_q, T_k, n_heads, d_head, mask kind, dropout)
        (1, 1, None, 2, 3, "causal", 0.0), (2, 1, 6, 3, 2, "per head", 0.0), (3, 5, 2, 2, 2, "padding", 0.0),
        (2, 4, 7, 4, 2, "(1, n_heads, T_q, T_k)", 0.0), (2, 3, 5, 1, 4, "(T_q, T_k)", 0.0),
        (3, 6, 4, 3, 3, "(B, T_q, T_k)", 0.4), (2, 5, None, 2, 4, "causal", 0.3)]
    for case, (B, T_q, T_k, n_heads, d_head, kind, dropout) in enumerate(edges, start=trials + 1):
        d_model, cross = n_heads * d_head, T_k is not None
        T_k = T_k or T_q
        mask = {"causal": torch.ones(T_q, T_k, dtype=torch.bool).tril(),
                "per head": _mask((B, n_heads, T_q, T_k), g),
                "padding": _mask((B, 1, T_k), g),
                "(1, n_heads, T_q, T_k)": _mask((1, n_heads, T_q, T_k), g),
                "(T_q, T_k)": _mask((T_q, T_k), g),
                "(B, T_q, T_k)": _mask((B, T_q, T_k), g)}[kind]
        weights_seed = case_seed(g)
        x_q = torch.randn(B, T_q, d_model, generator=g, dtype=torch.float64)
        x_kv = torch.randn(B, T_k, d_model, generator=g, dtype=torch.float64) if cross else None
        init = {"d_model": d_model, "n_heads": n_heads, **({"dropout": dropout} if dropout else {})}
        what = f"case {case}: " + described("MultiHeadAttention", init) + (" in eval mode" if dropout else "")
        module = fresh_weights(seen, MultiHeadAttention(**init), what, weights_seed, spread=2.0).eval()
        _attend(seen, module, what, x_q, x_kv, mask)
    return seen


def _everywhere(seen: Observations, module: nn.Module, x: torch.Tensor, what: str) -> None:
    """What `module` gives for `x` on every device and dtype."""
    for device, dtype in grid():
        seen.close(f"{what} on an input of shape {tuple(x.shape)} ({device.type}, {dtype})",
                   module.to(device, dtype)(_on(x, device, dtype)), dtype)


def observe_layer_norm(LayerNorm, trials: int = 8, seed: int = 402) -> Observations:
    seen = Observations()
    g = generator(seed)
    for trial in range(trials):
        d_model = _sizes(g, 1, 40, 1)[0]
        batch = tuple(_sizes(g, 1, 5, int(torch.randint(0, 4, (1,), generator=g))))
        init = {"d_model": d_model} if trial % 2 == 0 else \
            {"d_model": d_model, "eps": float(10 ** torch.empty(1).uniform_(-6, 0, generator=g))}
        weights_seed = case_seed(g)
        spread = float(10 ** torch.empty(1).uniform_(-2, 1, generator=g))
        x = spread * torch.randn(*batch, d_model, generator=g, dtype=torch.float64) + float(torch.randn(1, generator=g))
        if trial == 0:
            x[..., :] = 2.5  # constant vectors: variance 0
        what = f"case {trial + 1}: " + described("LayerNorm", init)
        _everywhere(seen, fresh_weights(seen, LayerNorm(**init), what, weights_seed), x, what)
    fresh = LayerNorm(7)
    seen.exact("LayerNorm(7) as created: its weight (ones)", getattr(fresh, "weight", None))
    seen.exact("LayerNorm(7) as created: its bias (zeros)", getattr(fresh, "bias", None))
    return seen


def observe_feed_forward(FeedForward, trials: int = 6, seed: int = 403) -> Observations:
    seen = Observations()
    g = generator(seed)
    for trial in range(trials):
        d_model, d_ff = _sizes(g, 1, 33, 2)
        batch = tuple(_sizes(g, 1, 5, int(torch.randint(0, 3, (1,), generator=g))))
        weights_seed = case_seed(g)
        x = torch.randn(*batch, d_model, generator=g, dtype=torch.float64)
        init = {"d_model": d_model, "d_ff": d_ff, **({"dropout": 0.5} if trial == trials - 1 else {})}
        what = f"case {trial + 1}: " + described("FeedForward", init) + (" in eval mode" if "dropout" in init else "")
        module = fresh_weights(seen, FeedForward(**init), what, weights_seed, spread=2.0).eval()
        _everywhere(seen, module, x, what)
    module, x = FeedForward(6, 10).train(), torch.randn(3, 6, generator=g)
    seen.claim("FeedForward(6, 10) in training mode gave different results on two identical calls: with the default "
               "dropout=0.0 it must be deterministic", torch.equal(module(x), module(x)))
    return seen


# ---- TransformerBlock: stand-in parts ----

class StandInAttention(nn.Module):
    """Stands where the block's `attn` is: torch's nn.MultiheadAttention behind the course's call
    (x_q, x_kv=None, mask=None) and mask convention (True = may attend; up to 3 dimensions broadcast to
    (B, T_q, T_k) for every head, 4 to (B, n_heads, T_q, T_k)). Not the exercise: torch's parameter layout
    (one in_proj_weight) and weights averaged over the heads, (B, T_q, T_k)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        self.n_heads = n_heads
        self.inner = nn.MultiheadAttention(d_model, n_heads, batch_first=True)

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        blocked = blocked_for_torch(mask, x_q.shape[0], self.n_heads, x_q.shape[1], x_kv.shape[1])
        return self.inner(x_q, x_kv, x_kv, attn_mask=blocked)


class StandInFeedForward(nn.Sequential):
    """Stands where the block's `ff` is: fc1, tanh, fc2 (torch's layers). Not the exercise's network, whose
    activation is a ReLU: a stand-in only has to be the same on both sides."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__(OrderedDict(fc1=nn.Linear(d_model, d_ff), act=nn.Tanh(), fc2=nn.Linear(d_ff, d_model)))


class StandInLayerNorm(nn.LayerNorm):
    """Stands where the block's norms are: torch's nn.LayerNorm behind the exercise's signature, so a block that
    builds its norms with keywords (`LayerNorm(d_model=d_model)`) builds them here too."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__(d_model, eps=eps)


STAND_IN_CLASSES = {"MultiHeadAttention": StandInAttention, "FeedForward": StandInFeedForward,
                    "LayerNorm": StandInLayerNorm}


def with_stand_ins(seen: Observations, what: str, cls, init: dict, attention=(), feed_forward=(),
                   norms=()) -> nn.Module:
    """`cls(**init)` with stand-ins for its parts named in `attention`, `feed_forward` and `norms` (torch's
    nn.LayerNorm for the norms): built with the stand-in classes in place of the notebook's own (so a part that
    cannot even be built costs nothing here), then put in those places in case the module made its parts another
    way (torch's nn.LayerNorm with another eps, say). Whether the parts were distinct modules is an observation: one
    module in two places shares its weights. The composite's test grades how it joins its parts; a mistake in a
    part costs points in that part's test only."""
    with earlier_pieces_replaced(cls.__init__, **STAND_IN_CLASSES):
        module = cls(**init)
    parts = [*attention, *feed_forward, *norms]
    held = [getattr(module, name, None) for name in parts]
    seen.claim(f"{what}: two of {', '.join(parts)} are one and the same module, so they share their weights; give "
               "each its own", len({id(part) for part in held if part is not None}) == len(held))
    d_model = init["d_model"]
    for name in attention:
        setattr(module, name, StandInAttention(d_model, init["n_heads"]))
    for name in feed_forward:
        setattr(module, name, StandInFeedForward(d_model, init["d_ff"]))
    for name in norms:
        setattr(module, name, StandInLayerNorm(d_model))
    return module


def block_with_stand_ins(seen: Observations, what: str, TransformerBlock, init: dict) -> nn.Module:
    """`TransformerBlock(**init)` with stand-ins for attn, ff, norm1 and norm2 (`with_stand_ins`)."""
    return with_stand_ins(seen, what, TransformerBlock, init, **BLOCK_PARTS)


STAND_INS = "with stand-ins for attn, ff, norm1 and norm2"


def _one_tensor(result, what: str):
    if not isinstance(result, torch.Tensor):
        raise HiddenTestFailed(f"{what}: TransformerBlock.forward should return one tensor, "
                               f"got {type(result).__name__}")
    return result


def observe_transformer_block(TransformerBlock, trials: int = 10, seed: int = 404) -> Observations:
    seen = Observations()
    g = generator(seed)
    # The default is post-norm: the same as norm_first=False.
    weights_seed = case_seed(g)
    x = torch.randn(2, 5, 8, generator=g)
    for init, shown in [({}, "TransformerBlock(8, 2, 16)"),
                        ({"norm_first": False}, "TransformerBlock(8, 2, 16, norm_first=False)")]:
        what = f"{shown} {STAND_INS}"
        block = fresh_weights(seen, block_with_stand_ins(seen, what, TransformerBlock,
                                                         {"d_model": 8, "n_heads": 2, "d_ff": 16, **init}),
                              what, weights_seed)
        seen.close(f"{what} on x {tuple(x.shape)} (cpu, torch.float32)", _one_tensor(block(x.clone()), what))
    # Both norm orders with every kind of mask: none, (T, T) causal, (B, 1, T), (B, T, T), (B, n_heads, T, T);
    # then the edges: one position, one sequence, dropout > 0 in eval mode (no dropout at all).
    cases = []
    for trial in range(trials):
        n_heads, d_head, B, T = _sizes(g, 1, 5, 4)
        cases.append((n_heads, d_head, B, T, _sizes(g, 1, 33, 1)[0], trial % 2 == 1, (trial // 2) % 5, 0.0))
    cases += [(2, 3, 1, 1, 7, False, 1, 0.0), (3, 2, 2, 1, 5, True, 4, 0.0), (1, 4, 1, 6, 9, True, 2, 0.0),
              (2, 2, 3, 5, 8, False, 3, 0.3), (2, 4, 2, 4, 12, True, 1, 0.5)]
    for case, (n_heads, d_head, B, T, d_ff, norm_first, kind, dropout) in enumerate(cases, start=1):
        init = {"d_model": n_heads * d_head, "n_heads": n_heads, "d_ff": d_ff, "norm_first": norm_first,
                **({"dropout": dropout} if dropout else {})}
        mask = [None, torch.ones(T, T, dtype=torch.bool).tril(), _mask((B, 1, T), g), _mask((B, T, T), g),
                _mask((B, n_heads, T, T), g)][kind]
        weights_seed = case_seed(g)
        x = 2 * torch.randn(B, T, init["d_model"], generator=g, dtype=torch.float64)
        what = f"case {case}: {described('TransformerBlock', init)} {STAND_INS}" + (" in eval mode" if dropout else "")
        block = fresh_weights(seen, block_with_stand_ins(seen, what, TransformerBlock, init), what, weights_seed,
                              spread=2.0).eval()
        what += f" on x {_shape(x)}, mask {_shape(mask)}"
        for device, dtype in grid():
            case_on = f"{what} ({device.type}, {dtype})"
            out = block.to(device, dtype)(_on(x, device, dtype), _on(mask, device))
            seen.close(case_on, _one_tensor(out, case_on), dtype)
    return seen


test_multi_head_attention = hidden_test(observe_multi_head_attention)
test_layer_norm = hidden_test(observe_layer_norm)
test_feed_forward = hidden_test(observe_feed_forward)
test_transformer_block = hidden_test(observe_transformer_block)
