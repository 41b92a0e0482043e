"""Mutants and variants for notebook 04."""
import math

import torch
from einops import einsum, rearrange
from torch import nn
from torch.nn import functional as F

from autograder.authoring.mistakes import for_exercise
from autograder.authoring.mistakes.attention_block import _MHA, _head_mask, _merge, _split
from autograder.authoring.reference.attention_block import FeedForward as RefFeedForward
from autograder.authoring.reference.attention_block import LayerNorm as RefLayerNorm
from autograder.authoring.reference.attention_block import MultiHeadAttention as RefMHA
from autograder.authoring.reference.attention_block import TransformerBlock as RefBlock
from autograder.authoring.reference.masking import masked_attention


# ---------------------------------------------------------------- MultiHeadAttention mutants

class mha_values_not_projected(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        Q, K, _ = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q, K, _split(x_kv, self.n_heads), _head_mask(mask))
        return self.W_o(_merge(out)), weights


class mha_keys_use_w_q(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        Q, _, V = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q, _split(self.W_q(x_kv), self.n_heads), V, _head_mask(mask))
        return self.W_o(_merge(out)), weights


class mha_weights_averaged_over_heads(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        out, weights = super().forward(x_q, x_kv, mask)
        return out, weights.mean(1)


class mha_weights_to_cpu(_MHA):  # the weights moved to the CPU (to plot them?): right only where the CPU is all there is
    def forward(self, x_q, x_kv=None, mask=None):
        out, weights = super().forward(x_q, x_kv, mask)
        return out, weights.cpu()


class mha_without_bias(RefMHA):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__(d_model, n_heads, dropout)
        for name in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, name, nn.Linear(d_model, d_model, bias=False))


class mha_mask_inverted(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        return super().forward(x_q, x_kv, None if mask is None else ~mask)


class mha_no_divisibility_error(RefMHA):
    def __init__(self, d_model, n_heads, dropout=0.0):
        nn.Module.__init__(self)
        self.n_heads, self.d_head = n_heads, max(d_model // n_heads, 1)
        for name in ("W_q", "W_k", "W_v", "W_o"):
            setattr(self, name, nn.Linear(d_model, d_model))
        self.dropout = nn.Dropout(dropout)


class mha_dropout_by_default(RefMHA):
    def __init__(self, d_model, n_heads, dropout=0.1):
        super().__init__(d_model, n_heads, dropout)


class mha_in_float32(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        out, weights = super().forward(x_q, x_kv, mask)
        return out.float(), weights.float()


class mha_scaled_twice(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q / math.sqrt(self.d_head), K, V, _head_mask(mask))
        return self.W_o(_merge(out)), weights


class mha_every_mask_gets_head_axis(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q, K, V, None if mask is None else mask.unsqueeze(1))
        return self.W_o(_merge(out)), weights


class mha_weights_after_dropout_recomputed_wrong(_MHA):  # multiplies the values by the weights twice
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q, K, V, _head_mask(mask))
        return self.W_o(_merge(weights @ out if out.shape[-2] == weights.shape[-1] else out)), weights


# ---------------------------------------------------------------- MultiHeadAttention variants

class mha_fused_qkv_variant(RefMHA):
    """One matrix product for Q, K and V in self-attention: the three weights concatenated at forward time."""

    def forward(self, x_q, x_kv=None, mask=None):
        B, T_q, d = x_q.shape
        if x_kv is None:
            weight = torch.cat([self.W_q.weight, self.W_k.weight, self.W_v.weight])
            bias = torch.cat([self.W_q.bias, self.W_k.bias, self.W_v.bias])
            q, k, v = F.linear(x_q, weight, bias).chunk(3, dim=-1)
        else:
            q = self.W_q(x_q)
            k, v = F.linear(x_kv, torch.cat([self.W_k.weight, self.W_v.weight]),
                            torch.cat([self.W_k.bias, self.W_v.bias])).chunk(2, dim=-1)
        Q, K, V = (_split(t.contiguous(), self.n_heads) for t in (q, k, v))
        if mask is not None and mask.dim() == 3:
            mask = mask[:, None]
        out, weights = masked_attention(Q, K, V, mask)
        return self.W_o(out.permute(0, 2, 1, 3).contiguous().view(B, T_q, d)), weights


class mha_einsum_variant(RefMHA):
    """Heads via einsum on reshaped weight matrices, scores and average via einsum, -1e9 and a guard."""

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        h, dh = self.n_heads, self.d_head

        def project(layer, x):
            return torch.einsum("btd,hkd->bhtk", x, layer.weight.view(h, dh, -1)) + layer.bias.view(h, 1, dh)

        Q, K, V = project(self.W_q, x_q), project(self.W_k, x_kv), project(self.W_v, x_kv)
        scores = torch.einsum("bhqk,bhsk->bhqs", Q, K) / dh ** 0.5
        if mask is not None:
            mask = mask.unsqueeze(-3) if mask.dim() == 3 else mask
            scores = scores.masked_fill(~mask, -1e9)
        weights = torch.softmax(scores, dim=-1)
        if mask is not None:
            weights = weights * mask
        out = torch.einsum("bhqs,bhsk->bqhk", weights, V).flatten(2)
        return self.W_o(out), weights


class mha_loop_over_heads_variant(RefMHA):
    """One head at a time, with slices of the projection outputs, then concatenated."""

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        Q, K, V = self.W_q(x_q), self.W_k(x_kv), self.W_v(x_kv)
        outs, all_weights = [], []
        for head in range(self.n_heads):
            part = slice(head * self.d_head, (head + 1) * self.d_head)
            head_mask = mask
            if mask is not None and mask.dim() == 4:
                head_mask = mask[:, head] if mask.shape[1] > 1 else mask[:, 0]
            out, weights = masked_attention(Q[..., part], K[..., part], V[..., part], head_mask)
            outs.append(out)
            all_weights.append(weights.expand(x_q.shape[0], -1, -1))
        return self.W_o(torch.cat(outs, dim=-1)), torch.stack(all_weights, dim=1)


# ---------------------------------------------------------------- LayerNorm

class ln_without_eps(RefLayerNorm):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        return (x - mean) / x.var(-1, unbiased=False, keepdim=True).sqrt() * self.weight + self.bias


class ln_random_start(RefLayerNorm):
    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps)
        self.weight = nn.Parameter(torch.randn(d_model))


class ln_over_positions_and_features(RefLayerNorm):
    def forward(self, x):
        dims = (-2, -1) if x.dim() > 1 else (-1,)
        mean = x.mean(dims, keepdim=True)
        variance = x.var(dims, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.weight + self.bias


class ln_eps_default_1e_6(RefLayerNorm):
    def __init__(self, d_model, eps=1e-6):
        super().__init__(d_model, eps)


class ln_float32(RefLayerNorm):
    def forward(self, x):
        return super().forward(x.float()).float()


class ln_eps_squared(RefLayerNorm):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        variance = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps ** 2) * self.weight + self.bias


class ln_var_variant(RefLayerNorm):
    def forward(self, x):
        variance = torch.var(x, dim=-1, unbiased=False, keepdim=True)
        return (x - x.mean(-1, keepdim=True)) * torch.rsqrt(variance + self.eps) * self.weight + self.bias


class ln_manual_variant(RefLayerNorm):
    """No keepdim: statistics computed, then given their axis back with unsqueeze; E[x²] - E[x]² is avoided."""

    def forward(self, x):
        d = x.shape[-1]
        mean = x.sum(-1) / d
        centred = x - mean.unsqueeze(-1)
        std = (centred.pow(2).sum(-1) / d + self.eps).sqrt()
        return self.weight * (centred / std.unsqueeze(-1)) + self.bias


# ---------------------------------------------------------------- FeedForward

class ff_without_bias(RefFeedForward):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__(d_model, d_ff, dropout)
        self.fc1 = nn.Linear(d_model, d_ff, bias=False)


class ff_sigmoid(RefFeedForward):
    def forward(self, x):
        return self.fc2(torch.sigmoid(self.fc1(x)))


class ff_with_residual(RefFeedForward):
    def forward(self, x):
        return x + super().forward(x)


class ff_dropout_by_default(RefFeedForward):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__(d_model, d_ff, dropout)
        self.dropout = nn.Dropout(0.2)


class ff_leaky_relu(RefFeedForward):
    def forward(self, x):
        return self.fc2(F.leaky_relu(self.fc1(x), 0.1))


class ff_functional_variant(RefFeedForward):
    def forward(self, x):
        hidden = F.linear(x, self.fc1.weight, self.fc1.bias).clamp(min=0)
        return F.linear(self.dropout(hidden), self.fc2.weight, self.fc2.bias)


class ff_relu_module_variant(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.fc1, self.act, self.drop, self.fc2 = nn.Linear(d_model, d_ff), nn.ReLU(), nn.Dropout(dropout), \
            nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))


# ---------------------------------------------------------------- TransformerBlock

class block_pre_norm_by_default(RefBlock):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)


class block_ff_reads_block_input(RefBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            a = x + self.attn(h, h, mask)[0]
            return a + self.ff(self.norm2(x))
        a = self.norm1(x + self.attn(x, x, mask)[0])
        return self.norm2(a + self.ff(x))


class block_post_norm_without_norm2(RefBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask)
        x = self.norm1(x + self.attn(x, x, mask)[0])
        return x + self.ff(x)


class block_returns_weights_too(RefBlock):
    def forward(self, x, mask=None):
        return super().forward(x, mask), None


class block_one_norm_for_both(RefBlock):
    def forward(self, x, mask=None):
        self.norm2, saved = self.norm1, self.norm2
        try:
            return super().forward(x, mask)
        finally:
            self.norm2 = saved


class block_mask_inverted(RefBlock):
    def forward(self, x, mask=None):
        return super().forward(x, None if mask is None else ~mask)


class block_keyword_calls_variant(RefBlock):
    """Torch's layout: separate dropouts per sub-layer, keyword arguments, a helper per sub-layer."""

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
        self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

    def _sa(self, x, mask):
        output, _ = self.attn(x_q=x, mask=mask)
        return self.dropout1(output)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask)
            return x + self.dropout2(self.ff(self.norm2(x)))
        x = self.norm1(x + self._sa(x, mask))
        return self.norm2(x + self.dropout2(self.ff(x)))


class block_sublayer_list_variant(RefBlock):
    """Each step as (norm, sub-layer) pairs walked in a loop."""

    def forward(self, x, mask=None):
        steps = [(self.norm1, lambda h: self.attn(h, None, mask)[0]), (self.norm2, self.ff)]
        for norm, sublayer in steps:
            x = x + sublayer(norm(x)) if self.norm_first else norm(x + sublayer(x))
        return x



# ---------------------------------------------------------------- dropout that stays on in eval mode (mutants)

class mha_dropout_in_eval(RefMHA):  # F.dropout without training=self.training
    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        Q, K, V = (_split(layer(x), self.n_heads) for layer, x in ((self.W_q, x_q), (self.W_k, x_kv), (self.W_v, x_kv)))
        _, weights = masked_attention(Q, K, V, _head_mask(mask))
        return self.W_o(_merge(F.dropout(weights, self.dropout.p) @ V)), weights


class ff_dropout_in_eval(RefFeedForward):
    def forward(self, x):
        return self.fc2(F.dropout(torch.relu(self.fc1(x)), self.dropout.p))


class block_dropout_in_eval(RefBlock):
    def forward(self, x, mask=None):
        def drop(t):
            return F.dropout(t, self.dropout.p)
        if self.norm_first:
            h = self.norm1(x)
            x = x + drop(self.attn(h, h, mask)[0])
            return x + drop(self.ff(self.norm2(x)))
        x = self.norm1(x + drop(self.attn(x, x, mask)[0]))
        return self.norm2(x + drop(self.ff(x)))


class mha_weights_squeezed(RefMHA):  # .squeeze() drops the batch or head axis of size 1
    def forward(self, x_q, x_kv=None, mask=None):
        output, weights = super().forward(x_q, x_kv, mask)
        return output, weights.squeeze()


class mha_key_length_from_queries(RefMHA):  # K and V reshaped with T_q: cross-attention of another length breaks
    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        B, T, d = x_q.shape
        Q, K, V = (layer(x).reshape(B, T, self.n_heads, self.d_head).transpose(1, 2)
                   for layer, x in ((self.W_q, x_q), (self.W_k, x_kv), (self.W_v, x_kv)))
        out, weights = masked_attention(Q, K, V, _head_mask(mask))
        return self.W_o(_merge(out)), weights


# ---------------------------------------------------------------- MultiHeadAttention: more correct variants

class mha_python_loops_variant(nn.Module):
    """Plain Python: a loop over heads and over query positions, sizes read with int(), the softmax by hand, a guard
    for a query that may attend to nothing."""

    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        self.n_heads = n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        B, T_q, T_k = int(x_q.shape[0]), int(x_q.shape[1]), int(x_kv.shape[1])
        d_head = int(x_q.shape[2]) // self.n_heads
        if mask is not None:
            mask = (mask.unsqueeze(1) if mask.dim() == 3 else mask).expand(B, self.n_heads, T_q, T_k)
        Q, K, V = self.W_q(x_q), self.W_k(x_kv), self.W_v(x_kv)
        heads, all_weights = [], []
        for h in range(self.n_heads):
            cols = slice(h * d_head, (h + 1) * d_head)
            rows_out, rows_weights = [], []
            for i in range(T_q):
                scores = (K[:, :, cols] @ Q[:, i, cols].unsqueeze(-1)).squeeze(-1) / math.sqrt(d_head)  # (B, T_k)
                if mask is not None:
                    allowed = mask[:, h, i]
                    scores = scores.masked_fill(~allowed, float("-inf"))
                    scores = scores.masked_fill(~allowed.any(-1, keepdim=True), 0.0)
                e = torch.exp(scores - scores.max(-1, keepdim=True).values)
                w = e / e.sum(-1, keepdim=True)
                if mask is not None:
                    w = w * allowed.any(-1, keepdim=True)
                rows_weights.append(w)
                rows_out.append((w.unsqueeze(1) @ V[:, :, cols]).squeeze(1))
            heads.append(torch.stack(rows_out, dim=1))
            all_weights.append(torch.stack(rows_weights, dim=1))
        return self.W_o(torch.cat(heads, dim=-1)), torch.stack(all_weights, dim=1)


class mha_einops_variant(RefMHA):
    """einops.rearrange to split and merge the heads, einsum for the scores and the mixing."""

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        h = self.n_heads
        Q = rearrange(self.W_q(x_q), "b t (h d) -> b h t d", h=h)
        K = rearrange(self.W_k(x_kv), "b t (h d) -> b h t d", h=h)
        V = rearrange(self.W_v(x_kv), "b t (h d) -> b h t d", h=h)
        scores = einsum(Q, K, "b h q d, b h k d -> b h q k") / Q.shape[-1] ** 0.5
        if mask is not None:
            mask = rearrange(mask, "b q k -> b 1 q k") if mask.dim() == 3 else mask
            scores = scores.masked_fill(~mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
        out = einsum(self.dropout(weights), V, "b h q k, b h k d -> b h q d")
        return self.W_o(rearrange(out, "b h t d -> b t (h d)")), weights


class mha_arena_style_variant(nn.Module):
    """ARENA's layout: a persistent buffer IGNORE = -1e5 for masked scores, a non-persistent buffer, a parameter-free
    nn.Softmax submodule and a plain attribute; the heads split with chunk and merged with cat."""

    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"{d_model} features cannot be split into {n_heads} heads")
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d_model, d_model) for _ in range(4))
        self.register_buffer("IGNORE", torch.tensor(-1e5))
        self.register_buffer("key_counts", torch.zeros(0, dtype=torch.long), persistent=False)
        self.scale = 1 / math.sqrt(self.d_head)
        self.softmax = nn.Softmax(dim=-1)
        self.drop = nn.Dropout(dropout)

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        Q, K, V = (torch.stack(layer(x).chunk(self.n_heads, dim=-1), dim=1)
                   for layer, x in ((self.W_q, x_q), (self.W_k, x_kv), (self.W_v, x_kv)))
        scores = Q @ K.transpose(-1, -2) * self.scale
        if mask is not None:
            scores = torch.where(_head_mask(mask), scores, self.IGNORE)
        weights = self.softmax(scores)
        out = self.drop(weights) @ V
        return self.W_o(torch.cat(out.unbind(dim=1), dim=-1)), weights


# ---------------------------------------------------------------- LayerNorm and FeedForward: more correct variants

class ln_loop_over_vectors_variant(RefLayerNorm):
    """One vector at a time, its size read with int()."""

    def forward(self, x):
        d = int(x.shape[-1])
        rows = x.reshape(-1, d)
        out = []
        for i in range(int(rows.shape[0])):
            v = rows[i]
            mean = v.sum() / d
            variance = ((v - mean) ** 2).sum() / d
            out.append((v - mean) / torch.sqrt(variance + self.eps) * self.weight + self.bias)
        return torch.stack(out).reshape(x.shape) if out else x.clone()


class ff_sequential_alias_variant(nn.Module):
    """fc1 and fc2, run through an nn.Sequential that holds the same layers (their parameters are named once)."""

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
        self.net = nn.Sequential(self.fc1, nn.ReLU(), nn.Dropout(dropout), self.fc2)

    def forward(self, x):
        return self.net(x)


# ---------------------------------------------------------------- TransformerBlock: more correct variants

class block_arena_style_variant(nn.Module):
    """Its own names for the order (a string), a registered buffer, parts called with keywords and a loop over the
    two sub-layers."""

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.order = "pre" if norm_first else "post"
        self.attn = RefMHA(d_model, n_heads, dropout)
        self.ff = RefFeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2 = RefLayerNorm(d_model), RefLayerNorm(d_model)
        self.register_buffer("IGNORE", torch.tensor(-1e5))

    def forward(self, x, mask=None):
        for norm, layer in ((self.norm1, lambda h: self.attn(x_q=h, mask=mask)[0]), (self.norm2, self.ff)):
            x = x + layer(norm(x)) if self.order == "pre" else norm(x + layer(x))
        return x


# As in a notebook, where the block finds its parts under the exercises' own names (the hidden test swaps them).
MultiHeadAttention, FeedForward, LayerNorm = RefMHA, RefFeedForward, RefLayerNorm


class block_parts_built_by_keyword_variant(RefBlock):  # hyunwoongko/transformer: LayerNorm(d_model=d_model)
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        nn.Module.__init__(self)
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model=d_model, n_heads=n_heads, dropout=dropout)
        self.ff = FeedForward(d_model=d_model, d_ff=d_ff, dropout=dropout)
        self.norm1, self.norm2 = LayerNorm(d_model=d_model, eps=1e-5), LayerNorm(d_model=d_model)
        self.dropout = nn.Dropout(dropout)


def _block_with_wrong_part(kind: str, wrong) -> type:
    """A correct block whose `kind` part (attn, ff or both norms) is a known mistake of that exercise: the block's
    check and hidden test put stand-ins there, so the block keeps its points."""
    places = {"MultiHeadAttention": ("attn",), "FeedForward": ("ff",), "LayerNorm": ("norm1", "norm2")}[kind]

    class block(RefBlock):
        def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
            super().__init__(d_model, n_heads, d_ff, dropout, norm_first)
            arguments = {"MultiHeadAttention": (d_model, n_heads, dropout), "FeedForward": (d_model, d_ff, dropout),
                         "LayerNorm": (d_model,)}[kind]
            for place in places:
                setattr(self, place, wrong(*arguments))

    block.__name__ = block.__qualname__ = f"block_with_{wrong.__name__}"
    return block


BLOCKS_WITH_WRONG_PARTS = [_block_with_wrong_part(m.exercise, m.impl)
                           for kind in ("MultiHeadAttention", "FeedForward", "LayerNorm") for m in for_exercise(kind)]

MUTANTS = [
    ("MultiHeadAttention", mha_values_not_projected),
    ("MultiHeadAttention", mha_keys_use_w_q),
    ("MultiHeadAttention", mha_weights_averaged_over_heads),
    ("MultiHeadAttention", mha_without_bias),
    ("MultiHeadAttention", mha_mask_inverted),
    ("MultiHeadAttention", mha_no_divisibility_error),
    ("MultiHeadAttention", mha_dropout_by_default),
    ("MultiHeadAttention", mha_in_float32),
    ("MultiHeadAttention", mha_scaled_twice),
    ("MultiHeadAttention", mha_every_mask_gets_head_axis),
    ("MultiHeadAttention", mha_weights_after_dropout_recomputed_wrong),
    ("LayerNorm", ln_without_eps),
    ("LayerNorm", ln_random_start),
    ("LayerNorm", ln_over_positions_and_features),
    ("LayerNorm", ln_eps_default_1e_6),
    ("LayerNorm", ln_float32),
    ("LayerNorm", ln_eps_squared),
    ("FeedForward", ff_without_bias),
    ("FeedForward", ff_sigmoid),
    ("FeedForward", ff_with_residual),
    ("FeedForward", ff_dropout_by_default),
    ("FeedForward", ff_leaky_relu),
    ("TransformerBlock", block_pre_norm_by_default),
    ("TransformerBlock", block_ff_reads_block_input),
    ("TransformerBlock", block_post_norm_without_norm2),
    ("TransformerBlock", block_returns_weights_too),
    ("TransformerBlock", block_one_norm_for_both),
    ("TransformerBlock", block_mask_inverted),
    ("MultiHeadAttention", mha_dropout_in_eval),
    ("MultiHeadAttention", mha_weights_squeezed),
    ("MultiHeadAttention", mha_key_length_from_queries),
    ("FeedForward", ff_dropout_in_eval),
    ("TransformerBlock", block_dropout_in_eval),
    ("MultiHeadAttention", mha_weights_to_cpu),
]

VARIANTS = [
    ("MultiHeadAttention", mha_fused_qkv_variant),
    ("MultiHeadAttention", mha_einsum_variant),
    ("MultiHeadAttention", mha_loop_over_heads_variant),
    ("LayerNorm", ln_var_variant),
    ("LayerNorm", ln_manual_variant),
    ("FeedForward", ff_functional_variant),
    ("FeedForward", ff_relu_module_variant),
    ("TransformerBlock", block_keyword_calls_variant),
    ("TransformerBlock", block_sublayer_list_variant),
    ("MultiHeadAttention", mha_python_loops_variant),
    ("MultiHeadAttention", mha_einops_variant),
    ("MultiHeadAttention", mha_arena_style_variant),
    ("LayerNorm", ln_loop_over_vectors_variant),
    ("FeedForward", ff_sequential_alias_variant),
    ("TransformerBlock", block_arena_style_variant),
    ("TransformerBlock", block_parts_built_by_keyword_variant),
] + [("TransformerBlock", block) for block in BLOCKS_WITH_WRONG_PARTS]

# Mutants that differ from a correct implementation only on a second real device (tests/test_mutants.py skips them
# where the CPU is the only device, saying so).
NEEDS_SECOND_DEVICE = {mha_weights_to_cpu}
