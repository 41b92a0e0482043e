"""Known mistakes in notebook 04. Each keeps the reference's submodules (so the fixtures' state dicts
load into it) and changes one detail of the computation."""
import math

import torch
from torch import nn

from autograder.authoring.mistakes import mistake
from autograder.authoring.reference.attention_block import FeedForward as ReferenceFeedForward
from autograder.authoring.reference.attention_block import LayerNorm as ReferenceLayerNorm
from autograder.authoring.reference.attention_block import MultiHeadAttention as ReferenceMHA
from autograder.authoring.reference.attention_block import TransformerBlock as ReferenceBlock
from autograder.authoring.reference.masking import masked_attention


# ---------------------------------------------------------------- MultiHeadAttention

def _split(x, n_heads):
    B, T, d = x.shape
    return x.view(B, T, n_heads, d // n_heads).transpose(1, 2)


def _merge(heads):
    B, H, T, d_head = heads.shape
    return heads.transpose(1, 2).reshape(B, T, H * d_head)


def _head_mask(mask):
    return mask.unsqueeze(1) if mask is not None and mask.dim() == 3 else mask


class _MHA(ReferenceMHA):
    """The reference's submodules; subclasses change forward."""

    def qkv(self, x_q, x_kv):
        x_kv = x_q if x_kv is None else x_kv
        return (_split(self.W_q(x_q), self.n_heads), _split(self.W_k(x_kv), self.n_heads),
                _split(self.W_v(x_kv), self.n_heads))

    def attend_with(self, split, merge, x_q, x_kv=None, mask=None):
        """The reference's computation with `split(t)` for the heads of each projection `t` (B, T, d_model) and
        `merge(out)` back to (B, T_q, d_model)."""
        x_kv = x_q if x_kv is None else x_kv
        out, weights = masked_attention(split(self.W_q(x_q)), split(self.W_k(x_kv)), split(self.W_v(x_kv)),
                                        _head_mask(mask))
        return self.W_o(merge(out)), weights


@mistake("MultiHeadAttention", "the heads were split with `view(B, n_heads, T, d_head)` directly: that cuts the "
         "tensor's memory into pieces that mix time steps and heads. Split the last axis first, "
         "`view(B, T, n_heads, d_head)`, then move the heads before time with `.transpose(1, 2)`.")
class heads_split_without_transpose(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        B, T_q, d = x_q.shape
        T_k = x_kv.shape[1]
        Q = self.W_q(x_q).view(B, self.n_heads, T_q, self.d_head)
        K = self.W_k(x_kv).view(B, self.n_heads, T_k, self.d_head)
        V = self.W_v(x_kv).view(B, self.n_heads, T_k, self.d_head)
        out, weights = masked_attention(Q, K, V, _head_mask(mask))
        return self.W_o(out.reshape(B, T_q, d)), weights


@mistake("MultiHeadAttention", "the heads were split with the wrong stride: `view(B, T, d_head, n_heads)` gives head h "
         "every n_heads-th feature (h, h + n_heads, ...), but a head is one contiguous slice of d_model, features "
         "h * d_head to (h + 1) * d_head - 1, as in nn.MultiheadAttention. Split with `view(B, T, n_heads, d_head)`, "
         "then `.transpose(1, 2)`.")
class heads_split_with_wrong_stride(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        return self.attend_with(lambda t: t.view(*t.shape[:2], self.d_head, self.n_heads).permute(0, 3, 1, 2),
                                _merge, x_q, x_kv, mask)


@mistake("MultiHeadAttention", "after `view(B, T, n_heads, d_head)` the axes swapped were the last two, "
         "`.transpose(-2, -1)`, which gives `(B, T, d_head, n_heads)`: attention then runs over the features of "
         "one position instead of over the positions. Swap time and heads, `.transpose(1, 2)`, to get "
         "`(B, n_heads, T, d_head)`.")
class heads_transposed_on_the_last_two_axes(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        return self.attend_with(lambda t: t.view(*t.shape[:2], self.n_heads, self.d_head).transpose(-2, -1),
                                lambda out: out.transpose(-2, -1).reshape(x_q.shape), x_q, x_kv, mask)


@mistake("MultiHeadAttention", "the heads were merged without moving them back: `(B, n_heads, T_q, d_head)` must "
         "become `(B, T_q, n_heads, d_head)` (`.transpose(1, 2)`) before `.reshape(B, T_q, d_model)`, or the "
         "output of one position is filled with numbers of other positions.")
class heads_merged_without_transpose(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q, K, V, _head_mask(mask))
        return self.W_o(out.reshape(x_q.shape)), weights


@mistake("MultiHeadAttention", "the scores are scaled by 1/sqrt(d_model); each head multiplies vectors of "
         "d_head = d_model / n_heads numbers, so the scale is 1/sqrt(d_head) (which masked_attention applies by "
         "itself when it gets the split Q and K).")
class scaled_by_d_model(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_kv)
        Q = Q * math.sqrt(self.d_head) / math.sqrt(self.n_heads * self.d_head)
        out, weights = masked_attention(Q, K, V, _head_mask(mask))
        return self.W_o(_merge(out)), weights


@mistake("MultiHeadAttention", "the merged heads are not projected by W_o: after putting the heads side by side, "
         "apply the last linear layer `self.W_o`, which mixes what the heads found.")
class output_not_projected(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q, K, V, _head_mask(mask))
        return _merge(out), weights


@mistake("MultiHeadAttention", "the mask had no effect: pass it to masked_attention (a 3-dimensional mask "
         "with a head axis added, `mask.unsqueeze(1)`).")
class ignores_mask(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q, K, V)
        return self.W_o(_merge(out)), weights


@mistake("MultiHeadAttention", "a mask (B, T_q, T_k) was used against the scores (B, n_heads, T_q, T_k) without a "
         "head axis: broadcasting then lines the batch axis up with the heads, so sequence b's mask went to head "
         "b. Give a 3-dimensional mask a head axis, `mask.unsqueeze(1)`, so that it applies to every head.")
class mask_not_broadcast_over_heads(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_kv)
        out, weights = masked_attention(Q, K, V, mask)
        return self.W_o(_merge(out)), weights


@mistake("MultiHeadAttention", "the keys and values came from x_q even though x_kv was given: queries come from "
         "x_q, keys and values from x_kv (x_kv=None only means x_kv = x_q).")
class keys_from_queries(_MHA):
    def forward(self, x_q, x_kv=None, mask=None):
        Q, K, V = self.qkv(x_q, x_q)
        out, weights = masked_attention(Q, K, V, _head_mask(mask))
        return self.W_o(_merge(out)), weights


# ---------------------------------------------------------------- LayerNorm

class _LN(ReferenceLayerNorm):
    def normalise(self, x, variance, dim=-1):
        return (x - x.mean(dim, keepdim=True)) / torch.sqrt(variance + self.eps) * self.weight + self.bias


@mistake("LayerNorm", "the variance divides by d_model - 1 (torch.var's default); layer norm uses the biased "
         "variance, the mean of the squared deviations: `x.var(-1, unbiased=False, keepdim=True)`.")
class unbiased_variance(_LN):
    def forward(self, x):
        return self.normalise(x, x.var(-1, keepdim=True))


@mistake("LayerNorm", "eps was added outside the square root, (x - mean) / (std + eps); it belongs inside: "
         "(x - mean) / sqrt(variance + eps).")
class eps_outside_sqrt(_LN):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.var(-1, unbiased=False, keepdim=True).sqrt()
        return (x - mean) / (std + self.eps) * self.weight + self.bias


@mistake("LayerNorm", "the mean and variance were taken over the wrong axis: layer norm normalises each vector "
         "over its own features, the last axis (dim=-1), never over positions or the batch.")
class normalised_over_positions(_LN):
    def forward(self, x):
        mean = x.mean(-2, keepdim=True)
        variance = x.var(-2, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps) * self.weight + self.bias


@mistake("LayerNorm", "the learned `weight` and `bias` are not used: after normalising, multiply by self.weight "
         "and add self.bias.")
class no_affine(_LN):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        variance = x.var(-1, unbiased=False, keepdim=True)
        return (x - mean) / torch.sqrt(variance + self.eps)


@mistake("LayerNorm", "the vectors were divided by the variance, not by the standard deviation: take the square "
         "root, (x - mean) / sqrt(variance + eps).")
class divided_by_variance(_LN):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        variance = x.var(-1, unbiased=False, keepdim=True)
        return (x - mean) / (variance + self.eps) * self.weight + self.bias


# ---------------------------------------------------------------- FeedForward

@mistake("FeedForward", "there is no nonlinearity between fc1 and fc2: two linear layers in a row are just one "
         "linear layer. Apply a ReLU to fc1's output.")
class no_relu(ReferenceFeedForward):
    def forward(self, x):
        return self.fc2(self.fc1(x))


@mistake("FeedForward", "the activation is a GELU; this block (like the paper and nn.TransformerEncoderLayer's "
         "default) uses a ReLU, torch.relu.")
class gelu_instead_of_relu(ReferenceFeedForward):
    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


@mistake("FeedForward", "a ReLU was applied to the output of fc2 as well: the result must be able to be negative. "
         "The ReLU sits only between fc1 and fc2.")
class relu_after_fc2(ReferenceFeedForward):
    def forward(self, x):
        return torch.relu(self.fc2(torch.relu(self.fc1(x))))


@mistake("FeedForward", "the ReLU comes before fc1; it belongs between the layers: fc2(relu(fc1(x))).")
class relu_before_fc1(ReferenceFeedForward):
    def forward(self, x):
        return self.fc2(self.fc1(torch.relu(x)))


# ---------------------------------------------------------------- TransformerBlock

def _attend(block, x, mask):
    return block.attn(x, x, mask)[0]


@mistake("TransformerBlock", "there is no skip connection around the attention: add the attention's output to its "
         "input (post-norm: norm1(x + attn(x)); pre-norm: x + attn(norm1(x))).")
class no_residual_around_attention(ReferenceBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = self.attn(self.norm1(x), self.norm1(x), mask)[0]
            return x + self.ff(self.norm2(x))
        x = self.norm1(_attend(self, x, mask))
        return self.norm2(x + self.ff(x))


@mistake("TransformerBlock", "there is no skip connection around the feed-forward network: add its output to its "
         "input (post-norm: norm2(x + ff(x)); pre-norm: x + ff(norm2(x))).")
class no_residual_around_feed_forward(ReferenceBlock):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.attn(h, h, mask)[0]
            return self.ff(self.norm2(x))
        x = self.norm1(x + _attend(self, x, mask))
        return self.norm2(self.ff(x))


@mistake("TransformerBlock", "with norm_first=False you wrote pre-norm: post-norm (the original order) normalises "
         "after each addition, x = norm1(x + attn(x)), then x = norm2(x + ff(x)).")
class always_pre_norm(ReferenceBlock):
    def forward(self, x, mask=None):
        h = self.norm1(x)
        x = x + self.attn(h, h, mask)[0]
        return x + self.ff(self.norm2(x))


@mistake("TransformerBlock", "with norm_first=True you wrote post-norm: pre-norm normalises what enters each "
         "sub-layer and adds its output to the unnormalised x: x = x + attn(norm1(x)), then x = x + ff(norm2(x)).")
class always_post_norm(ReferenceBlock):
    def forward(self, x, mask=None):
        x = self.norm1(x + _attend(self, x, mask))
        return self.norm2(x + self.ff(x))


@mistake("TransformerBlock", "the mask was not passed to the attention: forward(x, mask) must hand `mask` on to "
         "self.attn, or a causal model reads the future.")
class block_ignores_mask(ReferenceBlock):
    def forward(self, x, mask=None):
        return super().forward(x, None)


@mistake("TransformerBlock", "norm1 and norm2 are swapped: norm1 belongs to the attention step and norm2 to the "
         "feed-forward step (their weights are loaded by name).")
class norms_swapped(ReferenceBlock):
    def forward(self, x, mask=None):
        self.norm1, self.norm2 = self.norm2, self.norm1
        try:
            return super().forward(x, mask)
        finally:
            self.norm1, self.norm2 = self.norm2, self.norm1


@mistake("TransformerBlock", "pre-norm: the skip connection starts from the normalised x; it must carry the "
         "unnormalised x around the sub-layer: x = x + attn(norm1(x)), not h = norm1(x); x = h + attn(h).")
class pre_norm_residual_from_normalised(ReferenceBlock):
    def forward(self, x, mask=None):
        if not self.norm_first:
            return super().forward(x, mask)
        h = self.norm1(x)
        x = h + self.attn(h, h, mask)[0]
        h = self.norm2(x)
        return h + self.ff(h)
