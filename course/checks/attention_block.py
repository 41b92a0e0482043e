"""Visible checks for notebook 04: `MultiHeadAttention`, `LayerNorm`, `FeedForward`, `TransformerBlock`.

Besides the stored values, each check copies the student's weights into PyTorch's own module
(`nn.MultiheadAttention`, `nn.LayerNorm`, `nn.TransformerEncoderLayer`) and compares the outputs:
what the student built is what the library runs. Torch's boolean masks mean the opposite of the
course's (True = blocked there), so the checks hand them `~mask`.

A check that runs a piece with a check of its own puts PyTorch's module in that piece's place,
holding the student's weights (`with_torch_parts`): the block's check grades how the block joins
its parts, and a mistake inside a part costs points in that part's check only.
"""
from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn

from course.checks.attention import expect_stored_result
from course.checks.compare import expect_tensor, expect_values
from course.checks.report import CheckFailed, assert_written, fail, run_steps
from course.checks.stand_ins import earlier_pieces_replaced
from course.device import available_devices, supported_dtypes
from course.fixtures import load

CPU = torch.device("cpu")


def _grid():
    return [(d, t) for d in available_devices() for t in supported_dtypes(d)]


def _on(device: torch.device, dtype: torch.dtype) -> str:
    return f"{device.type} in {str(dtype).removeprefix('torch.')}"


def _random_state(module: nn.Module, seed: int, spread: float = 1.0) -> dict:
    """Random values for every parameter of `module`, by name (float64, on the CPU)."""
    g = torch.Generator().manual_seed(seed)
    return {name: spread * torch.randn(p.shape, generator=g, dtype=torch.float64) / max(p.shape[-1], 1) ** 0.5
            for name, p in module.named_parameters()}


def _listed(names: list[str]) -> str:
    return ", ".join(names[:6]) + (f" (and {len(names) - 6} more)" if len(names) > 6 else "")


def load_weights(module: nn.Module, state: dict, where: str = "the stored weights", hint: str = "") -> nn.Module:
    """Copy the tensors of `state` into the parameters of `module` of the same names, failing with the names that
    differ. Only parameters count: a module may hold buffers (persistent or not), submodules without parameters
    and other attributes of its own; a buffer named in `state` is left alone. `hint` ends a failure message."""
    own = dict(module.named_parameters())
    buffers = {name for name, _ in module.named_buffers()}
    absent = [name for name in state if name not in own and name not in buffers]
    extra = [name for name in own if name not in state]
    where = where[:1].upper() + where[1:]
    if absent or extra:
        lines = [f"{where} are loaded by parameter name, and the names differ from your module's."]
        if absent:
            lines.append(f"Expected but not in your module: {_listed(absent)}.")
        if extra:
            lines.append(f"In your module but not expected: {_listed(extra)}.")
        lines.append(hint or "Use exactly the submodule and parameter names of the exercise (self.<name> = ...), "
                             "create no other parameters, and share no weights between submodules.")
        fail("\n  ".join(lines))
    wrong = [name for name in state if name in own and tuple(own[name].shape) != tuple(state[name].shape)]
    if wrong:
        name = wrong[0]
        fail(f"{where} do not fit your module: {name} has shape {tuple(own[name].shape)}, "
             f"but {tuple(state[name].shape)} was expected. Create each layer with the sizes the exercise gives.")
    with torch.no_grad():
        for name, tensor in state.items():
            if name in own:
                own[name].copy_(tensor)
    return module


def _build(cls, init: dict, device=CPU, dtype=torch.float64, state: dict | None = None) -> nn.Module:
    module = cls(**init)
    if not isinstance(module, nn.Module):
        fail(f"{cls.__name__}(...) should create an nn.Module (subclass nn.Module and call super().__init__()).")
    module = module.to(device=device, dtype=dtype)
    if state is not None:
        load_weights(module, state)
    return module


def _expect_linear(module: nn.Module, name: str, n_in: int, n_out: int) -> None:
    layer = getattr(module, name, None)
    if not isinstance(layer, nn.Linear):
        fail(f"The module needs a submodule `self.{name} = nn.Linear({n_in}, {n_out})`"
             + (f"; `{name}` is a {type(layer).__name__}." if layer is not None else "."))
    if (layer.in_features, layer.out_features) != (n_in, n_out) or layer.bias is None:
        fail(f"`{name}` should be nn.Linear({n_in}, {n_out}) with a bias, but it is {layer}.")


def _same(what: str, actual, expected: torch.Tensor, dtype: torch.dtype) -> None:
    expect_values(what, actual, expected.detach().to(CPU), dtype)


def _same_tensors(a: torch.Tensor, b: torch.Tensor, atol: float = 1e-10) -> bool:
    return tuple(a.shape) == tuple(b.shape) and bool(torch.allclose(a.detach(), b.detach(), atol=atol, rtol=0))


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def _expect_deterministic(what: str, call) -> None:
    first, second = call(), call()
    if not torch.equal(first, second):
        fail(f"{what} gave different results on two identical calls in training mode. With the default "
             "dropout=0.0 the module must be deterministic: create the dropout as nn.Dropout(dropout).")


def expect_no_dropout_in_eval(name: str, plain: nn.Module, dropping: nn.Module, call) -> None:
    """`call(dropping)` with `dropping` (built with dropout=0.5) in eval mode gives what `call(plain)` gives (built
    with dropout=0.0 and the same weights): dropout switches off in eval mode."""
    if not _same_tensors(call(dropping.eval()), call(plain), atol=1e-9):
        fail(f"{name}(..., dropout=0.5) in eval mode gives another output than with dropout=0.0 and the same weights: "
             "dropout must switch off in eval mode. Use nn.Dropout modules, or F.dropout(..., "
             "training=self.training).")


# ---------------------------------------------------------------- MultiHeadAttention

def call_mha(module, x_q, x_kv=None, mask=None):
    """`module(x_q, x_kv, mask)`, failing clearly unless it returns two tensors."""
    result = module(x_q, x_kv, mask)
    if not (isinstance(result, tuple) and len(result) == 2):
        fail("`forward` should return a tuple `(output, weights)`, but it returned a " + type(result).__name__
             + (f" of length {len(result)}." if isinstance(result, (tuple, list)) else "."))
    output, weights = result
    expect_tensor("The output", output)
    expect_tensor("The weights", weights)
    return output, weights


def torch_attention(module: nn.Module, n_heads: int) -> nn.MultiheadAttention:
    """PyTorch's nn.MultiheadAttention holding the weights of `module` (W_q, W_k, W_v stacked in in_proj)."""
    d_model = module.W_q.in_features
    weight = module.W_q.weight
    theirs = nn.MultiheadAttention(d_model, n_heads, batch_first=True, device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([module.W_q.weight, module.W_k.weight, module.W_v.weight]))
        theirs.in_proj_bias.copy_(torch.cat([module.W_q.bias, module.W_k.bias, module.W_v.bias]))
        theirs.out_proj.weight.copy_(module.W_o.weight)
        theirs.out_proj.bias.copy_(module.W_o.bias)
    return theirs


def torch_mask(mask: torch.Tensor | None, batch: int, n_heads: int, T_q: int, T_k: int) -> torch.Tensor | None:
    """The course's mask (True = may attend; up to 3 dimensions for every head, 4 per head) as torch's attn_mask
    (True = blocked), (batch * n_heads, T_q, T_k)."""
    if mask is None:
        return None
    allowed = mask.unsqueeze(-3) if mask.dim() == 3 else mask  # (B, T_q, T_k) -> (B, 1, T_q, T_k)
    return ~allowed.expand(batch, n_heads, T_q, T_k).reshape(batch * n_heads, T_q, T_k)


# ---------------------------------------------------------------- stand-ins: PyTorch's modules in a part's place

class TorchAttention(nn.Module):
    """Stands in for a MultiHeadAttention: PyTorch's nn.MultiheadAttention holding its weights, called as the
    exercise is, forward(x_q, x_kv=None, mask=None) -> (output (B, T_q, d_model), weights (B, n_heads, T_q, T_k)),
    with the course's masks. Every query needs a key it may attend to (torch gives NaN otherwise)."""

    def __init__(self, attention: nn.Module, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.inner = torch_attention(attention, n_heads)

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        blocked = torch_mask(mask, x_q.shape[0], self.n_heads, x_q.shape[1], x_kv.shape[1])
        return self.inner(x_q, x_kv, x_kv, attn_mask=blocked, need_weights=True, average_attn_weights=False)


def torch_feed_forward(ff: nn.Module) -> nn.Sequential:
    """Stands in for a FeedForward: nn.Sequential(fc1, ReLU, fc2) on the same fc1 and fc2."""
    return nn.Sequential(OrderedDict(fc1=ff.fc1, relu=nn.ReLU(), fc2=ff.fc2))


def torch_norm(norm: nn.Module) -> nn.LayerNorm:
    """Stands in for a LayerNorm: nn.LayerNorm (eps 1e-5) holding a copy of its weight and bias."""
    weight = norm.weight
    theirs = nn.LayerNorm(weight.shape[0], device=weight.device, dtype=weight.dtype)
    with torch.no_grad():
        theirs.weight.copy_(weight)
        theirs.bias.copy_(norm.bias)
    return theirs


def with_torch_parts(module: nn.Module, n_heads: int, attention=(), feed_forward=(), norms=()) -> nn.Module:
    """`module` with PyTorch's modules, holding the same weights, in place of its submodules named in `attention`
    (MultiHeadAttention), `feed_forward` (FeedForward) and `norms` (LayerNorm). Call it after the weights are
    loaded: from then on the module's own code joins PyTorch's parts."""
    for name in attention:
        setattr(module, name, TorchAttention(getattr(module, name), n_heads))
    for name in feed_forward:
        setattr(module, name, torch_feed_forward(getattr(module, name)))
    for name in norms:
        setattr(module, name, torch_norm(getattr(module, name)))
    return module


class AttentionStandIn(nn.Module):
    """Takes the place of the notebook's MultiHeadAttention while a block is checked: the exercise's W_q, W_k, W_v,
    W_o, run by PyTorch's nn.MultiheadAttention (`TorchAttention`)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} cannot be split into {n_heads} heads")
        self.n_heads = n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x_q, x_kv=None, mask=None):
        return TorchAttention(self, self.n_heads)(x_q, x_kv, mask)


class FeedForwardStandIn(nn.Module):
    """Takes the place of the notebook's FeedForward while a block is checked: fc1, ReLU, fc2."""

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class NormStandIn(nn.LayerNorm):
    """Takes the place of the notebook's LayerNorm while a block is checked: PyTorch's, with the exercise's signature."""

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__(d_model, eps=eps)


def parts_stood_in(block_class):
    """While inside, a block built from `block_class` gets the stand-ins above for the notebook's MultiHeadAttention,
    FeedForward and LayerNorm: its check judges how it joins its parts, never the parts themselves (which cost points
    in their own checks), as its hidden test does."""
    return earlier_pieces_replaced(block_class, MultiHeadAttention=AttentionStandIn, FeedForward=FeedForwardStandIn,
                                   LayerNorm=NormStandIn)


def check_multi_head_attention(MultiHeadAttention) -> None:
    """Submodules and state dict, stored values on every device and dtype (naming known mistakes),
    equality with nn.MultiheadAttention, and the properties of attention in every head."""
    fixture = load("attention_block")["MultiHeadAttention"]
    init, state = fixture["init"], fixture["state"]
    d_model, n_heads = init["d_model"], init["n_heads"]

    def structure():
        module = _build(MultiHeadAttention, init)
        for name in ("W_q", "W_k", "W_v", "W_o"):
            _expect_linear(module, name, d_model, d_model)
        load_weights(module, state)

    def not_divisible():
        try:
            MultiHeadAttention(10, 4)
        except ValueError:
            return
        fail("MultiHeadAttention(10, 4) should raise a ValueError: 10 features cannot be split into 4 equal heads.")

    def values_on(device, dtype):
        def step():
            module = _build(MultiHeadAttention, init, device, dtype, state)
            for c in fixture["cases"]:
                x_q = c["x_q"].to(device, dtype, copy=True)
                x_kv = None if c["x_kv"] is None else c["x_kv"].to(device, dtype, copy=True)
                mask = None if c["mask"] is None else c["mask"].to(device, copy=True)
                try:
                    output, weights = call_mha(module, x_q, x_kv, mask)
                    expect_stored_result(output, weights, c, device, dtype)
                except CheckFailed as exc:
                    fail(f"{c['label']}: {exc.args[0]}")
        return step

    def like_torch(device, dtype):
        def step():
            g = torch.Generator().manual_seed(41)
            B, T, T_k, d, h = 3, 5, 7, 12, 3
            module = _build(MultiHeadAttention, {"d_model": d, "n_heads": h}, device, dtype)
            load_weights(module, _random_state(module, 42, spread=2.0), "Random weights")
            theirs = torch_attention(module, h)
            x = torch.randn(B, T, d, generator=g, dtype=torch.float64)
            memory = torch.randn(B, T_k, d, generator=g, dtype=torch.float64)
            causal = torch.ones(T, T, dtype=torch.bool).tril()
            per_sequence = torch.rand(B, T, T_k, generator=g) < 0.6
            per_sequence[..., 0] = True
            per_head = torch.rand(B, h, T, T_k, generator=g) < 0.5
            per_head[..., -1] = True
            for label, x_kv, mask in [("self-attention without a mask", None, None),
                                      ("self-attention with a causal (T, T) mask", None, causal),
                                      ("cross-attention (T_q != T_k) with a (B, T_q, T_k) mask", memory, per_sequence),
                                      ("cross-attention with a (B, n_heads, T_q, T_k) mask", memory, per_head)]:
                q = x.to(device, dtype)
                kv = q if x_kv is None else x_kv.to(device, dtype)
                m = None if mask is None else mask.to(device)
                try:
                    output, weights = call_mha(module, q, None if x_kv is None else kv, m)
                    with torch.no_grad():
                        their_output, their_weights = theirs(q, kv, kv, attn_mask=torch_mask(m, B, h, T, kv.shape[1]),
                                                             need_weights=True, average_attn_weights=False)
                    expect_tensor("The weights", weights, shape=their_weights.shape, dtype=dtype, device=device)
                    _same("The weights", weights, their_weights, dtype)
                    _same("The output", output, their_output, dtype)
                except CheckFailed as exc:
                    fail(f"{label}, compared with nn.MultiheadAttention holding your weights: {exc.args[0]}")
        return step

    g = torch.Generator().manual_seed(43)

    def rows_sum_to_one():
        module = _build(MultiHeadAttention, {"d_model": 12, "n_heads": 4})
        x_q, x_kv = torch.randn(2, 3, 12, generator=g, dtype=torch.float64), torch.randn(2, 5, 12, generator=g,
                                                                                          dtype=torch.float64)
        _, weights = call_mha(module, x_q, x_kv)
        expect_tensor("With B=2, n_heads=4, T_q=3, T_k=5 the weights", weights, shape=(2, 4, 3, 5))
        sums = weights.detach().sum(-1)
        if not torch.allclose(sums, torch.ones_like(sums), atol=1e-9):
            fail(f"Each query's weights in each head should sum to 1 over the keys; row sums range from "
                 f"{sums.min().item():.4g} to {sums.max().item():.4g}.")

    def self_by_default():
        module = _build(MultiHeadAttention, {"d_model": 8, "n_heads": 2})
        x = torch.randn(2, 4, 8, generator=g, dtype=torch.float64)
        alone, alone_weights = call_mha(module, x)
        given, given_weights = call_mha(module, x, x)
        if not (_same_tensors(alone, given) and _same_tensors(alone_weights, given_weights)):
            fail("forward(x) and forward(x, x) should be the same: x_kv=None means self-attention (x_kv = x_q).")

    def mask_in_every_head():
        module = _build(MultiHeadAttention, {"d_model": 12, "n_heads": 3})
        x = torch.randn(2, 5, 12, generator=g, dtype=torch.float64)
        mask = torch.rand(5, 5, generator=g) < 0.5
        mask[:, 0] = True
        padding = torch.tensor([[True] * 5, [True] * 2 + [False] * 3]).unsqueeze(1)
        for described, m in [("a (T_q, T_k) mask", mask), ("a (B, 1, T_k) padding mask", padding)]:
            _, weights = call_mha(module, x, None, m)
            expect_tensor(f"With {described} the weights", weights, shape=(2, 3, 5, 5))
            hidden = ~m.expand(2, 5, 5)  # (B, T_q, T_k)
            for head in range(3):
                leaked = weights.detach()[:, head][hidden]
                if (leaked != 0).any():
                    fail(f"With {described}, head {head} gives weight {leaked.abs().max().item():.3g} to a key the "
                         "mask hides. A mask of up to 3 dimensions applies to every head: give a (B, T_q, T_k) "
                         "mask a head axis (mask.unsqueeze(1)) and pass it to masked_attention.")

    def causality():
        module = _build(MultiHeadAttention, {"d_model": 8, "n_heads": 2})
        T, changed = 7, 4
        x = torch.randn(2, T, 8, generator=g, dtype=torch.float64)
        y = x.clone()
        y[:, changed] = torch.randn(2, 8, generator=g, dtype=torch.float64)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        before, _ = call_mha(module, x, None, causal)
        after, _ = call_mha(module, y, None, causal)
        moved = (after - before).detach().abs().amax(dim=(0, 2))
        if moved[:changed].max() > 1e-9:
            first = int(torch.nonzero(moved[:changed] > 1e-9)[0])
            fail(f"With a causal mask, changing token {changed} changed the output at position {first}: "
                 "information leaks from the future. Is the mask passed on to every head?")

    def deterministic():
        module = _build(MultiHeadAttention, {"d_model": 8, "n_heads": 2}).train()
        x = torch.randn(2, 4, 8, generator=g, dtype=torch.float64)
        _expect_deterministic("MultiHeadAttention(8, 2)", lambda: call_mha(module, x)[0])

    def no_dropout_in_eval():
        c = fixture["cases"][0]
        x_kv = None if c["x_kv"] is None else c["x_kv"].clone()
        expect_no_dropout_in_eval("MultiHeadAttention", _build(MultiHeadAttention, init, state=state),
                                  _build(MultiHeadAttention, {**init, "dropout": 0.5}, state=state),
                                  lambda module: call_mha(module, c["x_q"].clone(), x_kv)[0])

    def one_sequence_one_head():
        module = _build(MultiHeadAttention, {"d_model": 4, "n_heads": 1})
        output, weights = call_mha(module, torch.randn(1, 3, 4, generator=g, dtype=torch.float64))
        expect_tensor("With B=1, n_heads=1, T=3 the output", output, shape=(1, 3, 4))
        expect_tensor("With B=1, n_heads=1, T=3 the weights", weights, shape=(1, 1, 3, 3))

    def parameter_count():
        ours = _count(_build(MultiHeadAttention, {"d_model": 12, "n_heads": 3}))
        theirs = _count(nn.MultiheadAttention(12, 3, batch_first=True))
        if ours != theirs:
            fail(f"MultiHeadAttention(12, 3) has {ours} parameters; nn.MultiheadAttention(12, 3) has {theirs}: "
                 "4 * (d_model * d_model + d_model), the four projections with their biases and nothing else.")

    steps = [("has W_q, W_k, W_v, W_o, each nn.Linear(d_model, d_model), and loads weights by name", structure),
             ("raises ValueError when d_model is not divisible by n_heads", not_divisible)]
    steps += [(f"matches the stored values on {_on(d, t)}", values_on(d, t)) for d, t in _grid()]
    steps += [(f"equals nn.MultiheadAttention with the same weights on {_on(d, t)} (masks of 2, 3 and 4 dims)",
               like_torch(d, t)) for d, t in _grid()]
    steps += [("weights have shape (B, n_heads, T_q, T_k); each row sums to 1", rows_sum_to_one),
              ("x_kv=None means self-attention", self_by_default),
              ("a mask hides the same keys in every head", mask_in_every_head),
              ("changing a later token changes no earlier output (causal mask)", causality),
              ("is deterministic with the default dropout=0.0", deterministic),
              ("drops nothing in eval mode (dropout=0.5)", no_dropout_in_eval),
              ("keeps the axes of size 1 (one sequence, one head)", one_sequence_one_head),
              ("has as many parameters as nn.MultiheadAttention", parameter_count)]
    run_steps("MultiHeadAttention", steps)


# ---------------------------------------------------------------- LayerNorm

def check_layer_norm(LayerNorm) -> None:
    """Parameters and their start values, stored values on every device and dtype (naming known mistakes),
    equality with nn.LayerNorm, and a constant vector."""
    fixture = load("attention_block")["LayerNorm"]

    def parameters():
        module = _build(LayerNorm, {"d_model": 6}, dtype=torch.float32)
        for name, start, value in [("weight", "ones", 1.0), ("bias", "zeros", 0.0)]:
            p = getattr(module, name, None)
            if not isinstance(p, nn.Parameter):
                fail(f"The module needs a parameter `self.{name} = nn.Parameter(...)` of shape (d_model,)"
                     + (f"; `{name}` is a {type(p).__name__}." if p is not None else "."))
            expect_tensor(f"`{name}`", p, shape=(6,))
            if not torch.equal(p.detach(), torch.full((6,), value)):
                fail(f"`{name}` should start as {start}, so that a fresh LayerNorm only normalises.")
        load_weights(module, nn.LayerNorm(6).state_dict(), "The weights of nn.LayerNorm(6)")

    def values_on(device, dtype):
        def step():
            for c in fixture["cases"]:
                module = _build(LayerNorm, c["init"], device, dtype, c["state"])
                out = module(c["x"].to(device, dtype, copy=True))
                args = ", ".join(f"{k}={v}" for k, v in c["init"].items())
                try:
                    expect_tensor("The output", out, shape=c["expected"].shape, dtype=dtype, device=device)
                    expect_values("The output", out, c["expected"], dtype, c["mistakes"])
                except CheckFailed as exc:
                    fail(f"LayerNorm({args}): {exc.args[0]}")
        return step

    def like_torch(device, dtype):
        def step():
            g = torch.Generator().manual_seed(51)
            for d_model, eps, shape, spread in [(16, 1e-5, (3, 4), 3.0), (7, 1e-5, (5,), 1.0),
                                                (9, 0.5, (2, 2, 3), 0.5), (4, 1e-3, (), 0.05)]:
                theirs = nn.LayerNorm(d_model, eps=eps, device=device, dtype=dtype)
                with torch.no_grad():
                    theirs.weight.copy_(1 + torch.randn(d_model, generator=g))
                    theirs.bias.copy_(torch.randn(d_model, generator=g))
                ours = _build(LayerNorm, {"d_model": d_model, "eps": eps}, device, dtype)
                load_weights(ours, theirs.state_dict(), f"The weights of nn.LayerNorm({d_model})")
                x = (spread * torch.randn(*shape, d_model, generator=g) + 2).to(device, dtype)
                try:
                    _same("The output", ours(x), theirs(x), dtype)
                except CheckFailed as exc:
                    fail(f"LayerNorm({d_model}, eps={eps}) on an input of shape {tuple(x.shape)}, compared with "
                         f"nn.LayerNorm: {exc.args[0]}")
        return step

    def constant_vector():
        module = _build(LayerNorm, {"d_model": 5})
        with torch.no_grad():
            module.bias.copy_(torch.arange(5.0))
        out = module(torch.full((2, 5), 3.0, dtype=torch.float64))
        if torch.isnan(out).any() or torch.isinf(out).any():
            fail("A vector whose features are all equal (variance 0) gave NaN or inf: eps belongs inside the "
                 "square root, sqrt(variance + eps).")
        if not torch.allclose(out, torch.arange(5.0, dtype=torch.float64).expand(2, 5), atol=1e-9):
            fail("A vector whose features are all equal should come out as `bias` (its deviations are all 0).")

    def each_vector_alone():
        module = _build(LayerNorm, {"d_model": 6})
        g = torch.Generator().manual_seed(52)
        x = torch.randn(2, 5, 6, generator=g, dtype=torch.float64)
        y = x.clone()
        y[1, 3] = 10 * torch.randn(6, generator=g, dtype=torch.float64)
        moved = (module(y) - module(x)).detach().abs().amax(-1)
        moved[1, 3] = 0
        if moved.max() > 1e-12:
            fail("Changing one vector changed the output of other vectors: normalise each vector over its own "
                 "features (the last axis), never across positions or the batch.")

    steps = [("has parameters weight (ones) and bias (zeros) of shape (d_model,)", parameters)]
    steps += [(f"matches the stored values on {_on(d, t)}", values_on(d, t)) for d, t in _grid()]
    steps += [(f"equals nn.LayerNorm with the same weight, bias and eps on {_on(d, t)}", like_torch(d, t))
              for d, t in _grid()]
    steps += [("a vector of equal features gives `bias`, not NaN", constant_vector),
              ("normalises each vector on its own", each_vector_alone)]
    run_steps("LayerNorm", steps)


# ---------------------------------------------------------------- FeedForward

def check_feed_forward(FeedForward) -> None:
    """Submodules, stored values on every device and dtype (naming known mistakes), equality with
    nn.Sequential(Linear, ReLU, Linear), position by position."""
    fixture = load("attention_block")["FeedForward"]
    c = fixture["cases"][0]

    def structure():
        module = _build(FeedForward, c["init"])
        _expect_linear(module, "fc1", c["init"]["d_model"], c["init"]["d_ff"])
        _expect_linear(module, "fc2", c["init"]["d_ff"], c["init"]["d_model"])
        load_weights(module, c["state"])

    def values_on(device, dtype):
        def step():
            module = _build(FeedForward, c["init"], device, dtype, c["state"])
            out = module(c["x"].to(device, dtype, copy=True))
            expect_tensor("The output", out, shape=c["expected"].shape, dtype=dtype, device=device)
            expect_values("The output", out, c["expected"], dtype, c["mistakes"])
        return step

    def like_torch(device, dtype):
        def step():
            g = torch.Generator().manual_seed(61)
            theirs = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 8)).to(device, dtype)
            ours = _build(FeedForward, {"d_model": 8, "d_ff": 32}, device, dtype)
            with torch.no_grad():
                for mine, their in [(ours.fc1, theirs[0]), (ours.fc2, theirs[2])]:
                    mine.weight.copy_(their.weight)
                    mine.bias.copy_(their.bias)
            for shape in [(3, 5), (4,), (2, 2, 3)]:
                x = (2 * torch.randn(*shape, 8, generator=g)).to(device, dtype)
                try:
                    _same("The output", ours(x), theirs(x), dtype)
                except CheckFailed as exc:
                    fail(f"On an input of shape {tuple(x.shape)}, compared with nn.Sequential(nn.Linear(8, 32), "
                         f"nn.ReLU(), nn.Linear(32, 8)) holding your weights: {exc.args[0]}")
        return step

    def position_wise():
        module = _build(FeedForward, {"d_model": 6, "d_ff": 12})
        g = torch.Generator().manual_seed(62)
        x = torch.randn(2, 5, 6, generator=g, dtype=torch.float64)
        whole = module(x)
        alone = module(x[1, 3])
        if not _same_tensors(whole[1, 3], alone):
            fail("Position (1, 3) gives a different result inside the batch than on its own: the network must "
                 "transform every position separately, with the same weights.")

    def deterministic():
        module = _build(FeedForward, {"d_model": 6, "d_ff": 12}).train()
        x = torch.randn(2, 5, 6, dtype=torch.float64)
        _expect_deterministic("FeedForward(6, 12)", lambda: module(x))

    def no_dropout_in_eval():
        expect_no_dropout_in_eval("FeedForward", _build(FeedForward, c["init"], state=c["state"]),
                                  _build(FeedForward, {**c["init"], "dropout": 0.5}, state=c["state"]),
                                  lambda module: module(c["x"].clone()))

    steps = [("has fc1 = nn.Linear(d_model, d_ff) and fc2 = nn.Linear(d_ff, d_model)", structure)]
    steps += [(f"matches the stored values on {_on(d, t)}", values_on(d, t)) for d, t in _grid()]
    steps += [(f"equals nn.Sequential(Linear, ReLU, Linear) with the same weights on {_on(d, t)}", like_torch(d, t))
              for d, t in _grid()]
    steps += [("transforms each position on its own", position_wise),
              ("is deterministic with the default dropout=0.0", deterministic),
              ("drops nothing in eval mode (dropout=0.5)", no_dropout_in_eval)]
    run_steps("FeedForward", steps)


# ---------------------------------------------------------------- TransformerBlock

def torch_block(block: nn.Module, n_heads: int, d_ff: int, norm_first: bool) -> nn.TransformerEncoderLayer:
    """nn.TransformerEncoderLayer holding the weights of `block` (attn, ff, norm1, norm2)."""
    weight = block.attn.W_q.weight
    d_model = weight.shape[1]
    theirs = nn.TransformerEncoderLayer(d_model, n_heads, d_ff, dropout=0.0, activation="relu", batch_first=True,
                                        norm_first=norm_first, device=weight.device, dtype=weight.dtype)
    attention = torch_attention(block.attn, n_heads)
    with torch.no_grad():
        theirs.self_attn.load_state_dict(attention.state_dict())
        for mine, their in [(block.ff.fc1, theirs.linear1), (block.ff.fc2, theirs.linear2),
                            (block.norm1, theirs.norm1), (block.norm2, theirs.norm2)]:
            their.weight.copy_(mine.weight)
            their.bias.copy_(mine.bias)
    return theirs


BLOCK_PARTS = {"attention": ("attn",), "feed_forward": ("ff",), "norms": ("norm1", "norm2")}


def block_with_torch_parts(block: nn.Module, n_heads: int) -> nn.Module:
    """`block` with PyTorch's attention, feed-forward network and layer norms in attn, ff, norm1 and norm2."""
    return with_torch_parts(block, n_heads, **BLOCK_PARTS)


def check_transformer_block(TransformerBlock) -> None:
    """Submodules and parameters, then, with PyTorch's own parts in attn, ff, norm1 and norm2 (holding the student's
    weights): stored values for both norm orders on every device and dtype (naming known mistakes), equality with
    nn.TransformerEncoderLayer, causality, the default norm order and dropout."""
    fixture = load("attention_block")["TransformerBlock"]

    def build(init, device=CPU, dtype=torch.float64, state=None):
        """The student's block, its weights loaded, with PyTorch's parts inside."""
        module = _build(TransformerBlock, init, device, dtype, state)
        return block_with_torch_parts(module, init["n_heads"])

    def structure():
        c = fixture["cases"][0]
        module = _build(TransformerBlock, c["init"])
        for name in ("attn", "ff", "norm1", "norm2"):
            if not isinstance(getattr(module, name, None), nn.Module):
                fail(f"The block needs a submodule `self.{name}` (attn: MultiHeadAttention, ff: FeedForward, "
                     "norm1 and norm2: LayerNorm).")
        load_weights(module, c["state"],
                     hint="Use the submodule names attn, ff, norm1, norm2, and inside them the names of "
                          "MultiHeadAttention, FeedForward and LayerNorm: when their checks above fail, fix those "
                          "first.")

    def values_on(device, dtype):
        def step():
            for c in fixture["cases"]:
                module = build(c["init"], device, dtype, c["state"])
                out = module(c["x"].to(device, dtype, copy=True), c["mask"].to(device, copy=True))
                try:
                    expect_tensor("The output", out, shape=c["expected"].shape, dtype=dtype, device=device)
                    expect_values("The output", out, c["expected"], dtype, c["mistakes"])
                except CheckFailed as exc:
                    fail(f"norm_first={c['init']['norm_first']}, with a causal mask: {exc.args[0]}\n  {PARTS_NOTE}")
        return step

    def like_torch(device, dtype):
        def step():
            g = torch.Generator().manual_seed(71)
            B, T, d, h, d_ff = 2, 6, 12, 3, 24
            causal = torch.ones(T, T, dtype=torch.bool).tril().to(device)
            padding = torch.tensor([[True] * T, [True] * 4 + [False] * 2], device=device)  # (B, T)
            for norm_first in (False, True):
                init = {"d_model": d, "n_heads": h, "d_ff": d_ff, "norm_first": norm_first}
                module = _build(TransformerBlock, init, device, dtype)
                load_weights(module, _random_state(module, 72 + norm_first, spread=2.0), "Random weights")
                with torch.no_grad():  # LayerNorm weights around 1
                    for norm in (module.norm1, module.norm2):
                        norm.weight.add_(1.0)
                theirs = torch_block(module, h, d_ff, norm_first)
                block_with_torch_parts(module, h)
                x = (2 * torch.randn(B, T, d, generator=g)).to(device, dtype)
                for label, ours_mask, their_masks in [
                        ("without a mask", None, {}),
                        ("with a causal mask", causal, {"src_mask": ~causal}),
                        ("with a (B, 1, T) padding mask", padding[:, None, :], {"src_key_padding_mask": ~padding})]:
                    try:
                        with torch.no_grad():
                            expected = theirs(x, **their_masks)
                        _same("The output", module(x, ours_mask), expected, dtype)
                    except CheckFailed as exc:
                        fail(f"norm_first={norm_first}, {label}, compared with nn.TransformerEncoderLayer holding "
                             f"your weights: {exc.args[0]}\n  {PARTS_NOTE}")
        return step

    def causality():
        g = torch.Generator().manual_seed(73)
        T, changed = 7, 4
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        for norm_first in (False, True):
            module = build({"d_model": 8, "n_heads": 2, "d_ff": 16, "norm_first": norm_first})
            x = torch.randn(2, T, 8, generator=g, dtype=torch.float64)
            y = x.clone()
            y[:, changed] = torch.randn(2, 8, generator=g, dtype=torch.float64)
            moved = (module(y, causal) - module(x, causal)).detach().abs().amax(dim=(0, 2))
            if moved[:changed].max() > 1e-9:
                first = int(torch.nonzero(moved[:changed] > 1e-9)[0])
                fail(f"norm_first={norm_first}: with a causal mask, changing token {changed} changed the output at "
                     f"position {first}. Pass the mask on to the attention; nothing else in the block may mix "
                     f"positions.\n  {PARTS_NOTE}")

    def parameter_count():
        for norm_first in (False, True):
            ours = _count(_build(TransformerBlock, {"d_model": 12, "n_heads": 3, "d_ff": 20,
                                                    "norm_first": norm_first}))
            theirs = _count(nn.TransformerEncoderLayer(12, 3, 20, batch_first=True, norm_first=norm_first))
            if ours != theirs:
                fail(f"TransformerBlock(12, 3, 20) has {ours} parameters; nn.TransformerEncoderLayer(12, 3, 20) has "
                     f"{theirs}: one attention, one feed-forward network and two layer norms.")

    def post_norm_by_default():
        init = {"d_model": 8, "n_heads": 2, "d_ff": 16}
        default = _build(TransformerBlock, init)
        explicit = _build(TransformerBlock, {**init, "norm_first": False},
                          state=dict(default.named_parameters()))
        default, explicit = (block_with_torch_parts(b, 2) for b in (default, explicit))
        x = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(74), dtype=torch.float64)
        if not _same_tensors(default(x), explicit(x)):
            fail("TransformerBlock(8, 2, 16) differs from TransformerBlock(8, 2, 16, norm_first=False) with the same "
                 "weights: norm_first defaults to False, the paper's post-norm.")

    def deterministic():
        module = build({"d_model": 8, "n_heads": 2, "d_ff": 16}).train()
        x = torch.randn(2, 4, 8, dtype=torch.float64)
        _expect_deterministic("TransformerBlock(8, 2, 16)", lambda: module(x))

    def no_dropout_in_eval():
        c = fixture["cases"][0]
        expect_no_dropout_in_eval("TransformerBlock", build(c["init"], state=c["state"]),
                                  build({**c["init"], "dropout": 0.5}, state=c["state"]),
                                  lambda module: module(c["x"].clone(), c["mask"].clone()))

    steps = [("has attn, ff, norm1, norm2 and loads weights by name", structure),
             ("has as many parameters as nn.TransformerEncoderLayer", parameter_count)]
    steps += [(f"matches the stored values (post-norm and pre-norm) on {_on(d, t)}", values_on(d, t))
              for d, t in _grid()]
    steps += [(f"equals nn.TransformerEncoderLayer with the same weights (both norm_first) on {_on(d, t)}",
               like_torch(d, t)) for d, t in _grid()]
    steps += [("changing a later token changes no earlier output (causal mask)", causality),
              ("norm_first defaults to False (post-norm)", post_norm_by_default),
              ("is deterministic with the default dropout=0.0", deterministic),
              ("drops nothing in eval mode (dropout=0.5)", no_dropout_in_eval)]
    with parts_stood_in(TransformerBlock):
        run_steps("TransformerBlock", steps)


PARTS_NOTE = ("(PyTorch's own attention, feed-forward network and layer norms, holding your weights, ran in attn, ff, "
              "norm1 and norm2: the difference comes from how your block joins them.)")


# ---------------------------------------------------------------- written_*

def written_multi_head_attention(MultiHeadAttention) -> None:
    assert_written("MultiHeadAttention", lambda: MultiHeadAttention(4, 2)(torch.zeros(1, 3, 4)))


def written_layer_norm(LayerNorm) -> None:
    assert_written("LayerNorm", lambda: LayerNorm(4)(torch.zeros(1, 4)))


def written_feed_forward(FeedForward) -> None:
    assert_written("FeedForward", lambda: FeedForward(4, 8)(torch.zeros(1, 4)))


def written_transformer_block(TransformerBlock) -> None:
    assert_written("TransformerBlock", lambda: TransformerBlock(4, 2, 8)(torch.zeros(1, 3, 4)))
