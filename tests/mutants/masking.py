"""Mutants and variants for notebook 03.

`NAMED` says, for each mutant of `masked_attention`, what the visible check's feedback says of it.
`NEEDS_SECOND_DEVICE` lists the mutants only a second real device (CUDA or MPS) can catch: they put their result on
the CPU whatever device was asked for, which on a CPU-only machine is right. tests/test_mutants.py skips them there."""
import math

import torch
from torch.nn import functional as F

from autograder.authoring.reference.masking import causal_mask as reference_causal
from autograder.authoring.reference.masking import masked_attention as reference_attention
from autograder.authoring.reference.masking import padding_mask as reference_padding


# ---------------------------------------------------------------- causal_mask

def causal_built_on_cpu(T_q, T_k=None, device=None):  # ignores device: the mask stays on the default device
    return reference_causal(T_q, T_k)


def causal_as_float(T_q, T_k=None, device=None):  # 0/1 floats instead of booleans
    return reference_causal(T_q, T_k, device).float()


def causal_needs_t_k(T_q, T_k, device=None):  # no default for T_k
    return reference_causal(T_q, T_k, device)


def causal_square_only(T_q, T_k=None, device=None):  # ignores T_k altogether
    return torch.ones(T_q, T_q, dtype=torch.bool, device=device).tril()


def causal_tril_variant(T_q, T_k=None, device=None):
    T_k = T_q if T_k is None else T_k
    return torch.tril(torch.ones(T_q, T_k, dtype=torch.bool, device=device), diagonal=T_k - T_q)


def causal_triu_variant(T_q, T_k=None, device=None):  # the complement of the strict upper triangle
    T_k = T_k or T_q
    return ~torch.ones(T_q, T_k, device=device).triu(diagonal=T_k - T_q + 1).bool()


def causal_loops_variant(T_q, T_k=None, device=None):  # a Python loop over the queries, sizes read with int()
    T_k = int(T_q if T_k is None else T_k)
    mask = torch.zeros(int(T_q), T_k, dtype=torch.bool, device=device)
    for i in range(int(T_q)):
        mask[i, : max(i + T_k - T_q + 1, 0)] = True
    return mask


def causal_moved_variant(T_q, T_k=None, device=None):  # built on the CPU, then moved: slower, but the same mask
    mask = reference_causal(T_q, T_k)
    return mask if device is None else mask.to(device)


# ---------------------------------------------------------------- padding_mask

def padding_built_on_cpu(lengths, T):  # ignores lengths.device
    return reference_padding(lengths.cpu(), T)


def padding_as_long(lengths, T):
    return reference_padding(lengths, T).long()


def padding_uses_max_length(lengths, T):  # ignores T: the mask is only as long as the longest sequence
    return reference_padding(lengths, int(lengths.max()))


def padding_changes_lengths(lengths, T):  # unsqueeze_ reshapes the caller's tensor
    return (torch.arange(T, device=lengths.device) < lengths.unsqueeze_(-1)).unsqueeze(1)


def padding_loop_over_positions_variant(lengths, T):  # a loop over positions needs no numbers from lengths
    columns = [lengths > t for t in range(T)]
    mask = torch.stack(columns, dim=-1) if columns else torch.zeros(lengths.shape[0], 0, dtype=torch.bool,
                                                                    device=lengths.device)
    return mask.unsqueeze(1)


def padding_tolist_variant(lengths, T):  # the loop a student writes first: lengths read on the host
    mask = torch.zeros(len(lengths), 1, T, dtype=torch.bool, device=lengths.device)
    for b, n in enumerate(lengths.tolist()):
        mask[b, 0, :n] = True
    return mask


def padding_int_variant(lengths, T):  # one row at a time, each length read with int()
    rows = [torch.arange(T, device=lengths.device) < int(lengths[b]) for b in range(lengths.shape[0])]
    return torch.stack(rows).unsqueeze(1)


def padding_item_variant(lengths, T):  # .item() and a list of Python booleans
    rows = [[t < lengths[b].item() for t in range(T)] for b in range(len(lengths))]
    return torch.tensor(rows, dtype=torch.bool, device=lengths.device).reshape(len(lengths), 1, T)


def padding_view_variant(lengths, T):
    return torch.arange(T, device=lengths.device).expand(len(lengths), T).lt(lengths.view(-1, 1)).view(-1, 1, T)


# ---------------------------------------------------------------- masked_attention

def attention_mutates_q(Q, K, V, mask=None):  # scales the caller's Q in place
    Q /= math.sqrt(Q.shape[-1])
    scores = Q @ K.transpose(-2, -1)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ V, weights


def attention_unnormalised(Q, K, V, mask=None):  # exp(scores) on allowed keys, never divided by the sum
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    weights = torch.exp(scores - scores.amax(-1, keepdim=True))
    if mask is not None:
        weights = weights * mask
    return weights @ V, weights


def attention_float32(Q, K, V, mask=None):  # float64 inputs come back as float32
    return reference_attention(Q.float(), K.float(), V.float(), mask)


def attention_renormalised_without_guard(Q, K, V, mask=None):  # mask after the softmax, renormalised: 0/0 on empty rows
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=-1)
    if mask is not None:
        weights = weights * mask
        weights = weights / weights.sum(-1, keepdim=True)
    return weights @ V, weights


def attention_additive_float_mask(Q, K, V, mask=None):  # -100 is not -inf: masked keys keep a sliver of weight
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + (~mask) * -100.0
        weights = torch.softmax(scores, dim=-1) * mask.any(-1, keepdim=True)
    else:
        weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def attention_inverts_mask_in_place(Q, K, V, mask=None):  # logical_not_ flips the caller's mask
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is None:
        weights = torch.softmax(scores, dim=-1)
        return weights @ V, weights
    hidden = mask.logical_not_()
    weights = torch.softmax(scores.masked_fill(hidden, float("-inf")), dim=-1).masked_fill(hidden, 0.0)
    return weights @ V, weights


def attention_softmax_by_hand_overflows(Q, K, V, mask=None):  # exp(scores) without the row maximum subtracted
    e = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]))
    if mask is not None:
        e = e * mask
    weights = e / e.sum(-1, keepdim=True).clamp_min(1e-30)  # guarded against empty rows, not against overflow
    return weights @ V, weights


def attention_true_means_hidden(Q, K, V, mask=None):  # nn.MultiheadAttention's meaning (True = hide), no NaN guard
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def attention_zeroed_after_unscaled_softmax(Q, K, V, mask=None):  # two mistakes: no scale, weights zeroed after
    weights = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)
    if mask is not None:
        weights = weights.masked_fill(~mask, 0.0)
    return weights @ V, weights


def attention_multiplies_unscaled_scores_by_mask(Q, K, V, mask=None):  # two mistakes: no scale, masked scores 0
    scores = Q @ K.transpose(-2, -1)
    if mask is not None:
        scores = scores * mask
    weights = torch.softmax(scores, dim=-1)
    return weights @ V, weights


def attention_softmax_dim_1(Q, K, V, mask=None):  # dim=1 is the key axis only for 2-D scores
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=1).nan_to_num(0.0)
    return weights @ V, weights


def attention_d_k_from_queries(Q, K, V, mask=None):  # 02's blog bug carried over: Q.shape[-2] is T_q, not d_k
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-2])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ V, weights


def attention_divides_by_d_k(Q, K, V, mask=None):  # the square root forgotten: scores / d_k
    scores = Q @ K.transpose(-2, -1) / Q.shape[-1]
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    weights = torch.softmax(scores, dim=-1).nan_to_num(0.0)
    return weights @ V, weights


def attention_minus_1e9_variant(Q, K, V, mask=None):  # a large negative fill, then empty rows zeroed explicitly
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is None:
        weights = F.softmax(scores, dim=-1)
        return weights @ V, weights
    mask = mask.expand(scores.shape) if mask.dim() <= scores.dim() else mask
    scores = scores.masked_fill(~mask, -1e9)
    weights = F.softmax(scores, dim=-1)
    weights = weights * mask.any(dim=-1, keepdim=True)  # rows with no allowed key: all zeros
    return weights @ V, weights


def attention_finfo_min_variant(Q, K, V, mask=None):  # the dtype's most negative number instead of -inf
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        scores = torch.where(mask, scores, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)
    if mask is not None:
        weights = torch.where(mask.any(-1, keepdim=True), weights, torch.zeros((), dtype=weights.dtype, device=weights.device))
    return weights @ V, weights


def attention_float64_variant(Q, K, V, mask=None):
    output, weights = reference_attention(Q.double(), K.double(), V.double(), mask)
    return output.to(Q.dtype), weights.to(Q.dtype)


def attention_einsum_exp_variant(Q, K, V, mask=None):  # einsum, exp/sum by hand, nan_to_num for empty rows
    scores = torch.einsum("...qd,...kd->...qk", Q, K) * Q.shape[-1] ** -0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf")) if mask.dim() <= scores.dim() else \
            torch.where(mask, scores, float("-inf"))
    e = torch.exp(scores - scores.amax(-1, keepdim=True).clamp_min(torch.finfo(scores.dtype).min))
    weights = e / e.sum(-1, keepdim=True).clamp_min(torch.finfo(scores.dtype).tiny)
    return torch.einsum("...qk,...kv->...qv", weights, V), weights


def attention_loops_variant(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is None:
        mask = torch.ones((), dtype=torch.bool, device=Q.device)
    mask = mask.expand(torch.broadcast_shapes(mask.shape, scores.shape))
    scores = scores.expand(mask.shape)
    flat_scores, flat_mask = scores.reshape(-1, scores.shape[-1]), mask.reshape(-1, mask.shape[-1])
    rows = []
    for s, m in zip(flat_scores, flat_mask):
        row = torch.zeros_like(s)
        if m.any():
            row = row.masked_scatter(m, torch.softmax(s[m], dim=0))
        rows.append(row)
    weights = torch.stack(rows).reshape(mask.shape)
    return weights @ V, weights


def attention_rows_item_variant(Q, K, V, mask=None):  # one query row at a time; .item(), .tolist() and int()
    scores = Q @ K.transpose(-2, -1) / math.sqrt(int(Q.shape[-1]))
    allowed = torch.ones_like(scores, dtype=torch.bool) if mask is None else mask.expand(scores.shape)
    rows = []
    for s, m in zip(scores.reshape(-1, scores.shape[-1]), allowed.reshape(-1, scores.shape[-1])):
        if m.sum().item() == 0:
            rows.append(torch.zeros_like(s))
            continue
        keep = [j for j, ok in enumerate(m.tolist()) if ok]
        e = torch.exp(s[keep] - s[keep].max().item())
        rows.append(torch.zeros_like(s).index_put((torch.tensor(keep, device=s.device),), e / e.sum()))
    weights = torch.stack(rows).reshape(scores.shape)
    return weights @ V, weights


MUTANTS = [
    ("causal_mask", causal_built_on_cpu),
    ("causal_mask", causal_as_float),
    ("causal_mask", causal_needs_t_k),
    ("causal_mask", causal_square_only),
    ("padding_mask", padding_built_on_cpu),
    ("padding_mask", padding_as_long),
    ("padding_mask", padding_uses_max_length),
    ("padding_mask", padding_changes_lengths),
    ("masked_attention", attention_mutates_q),
    ("masked_attention", attention_unnormalised),
    ("masked_attention", attention_float32),
    ("masked_attention", attention_renormalised_without_guard),
    ("masked_attention", attention_additive_float_mask),
    ("masked_attention", attention_inverts_mask_in_place),
    ("masked_attention", attention_softmax_by_hand_overflows),
    ("masked_attention", attention_true_means_hidden),
    ("masked_attention", attention_zeroed_after_unscaled_softmax),
    ("masked_attention", attention_multiplies_unscaled_scores_by_mask),
    ("masked_attention", attention_softmax_dim_1),
    ("masked_attention", attention_d_k_from_queries),
    ("masked_attention", attention_divides_by_d_k),
]

NEEDS_SECOND_DEVICE = {causal_built_on_cpu, padding_built_on_cpu}

# What the visible check's feedback says of each masked_attention mutant (tests/test_masking_feedback.py): wrong numbers
# that match no stored mistake are followed by the first property step that fails, and that step names the mistake.
NAMED = {
    attention_mutates_q: "changed its input Q in place",
    attention_unnormalised: "never divided by its sum",
    attention_float32: "should have dtype torch.float64",
    attention_renormalised_without_guard: "known mistake: a query with no allowed key came out as NaN",
    attention_additive_float_mask: "it must be exactly 0",
    attention_inverts_mask_in_place: "changed its input mask in place",
    attention_softmax_by_hand_overflows: "exp() of a large number overflows",
    attention_true_means_hidden: "the mask is used the wrong way round",
    attention_zeroed_after_unscaled_softmax: "Mask the scores before the softmax, not the weights after it",
    attention_multiplies_unscaled_scores_by_mask: "0 itself is far from enough",
    attention_softmax_dim_1: "the softmax should run over the keys",
    attention_d_k_from_queries: "divided by sqrt(4), from the number of queries Q.shape[-2]",
    attention_divides_by_d_k: "divided by d_k = 9 itself, not its square root",
}

VARIANTS = [
    ("causal_mask", causal_tril_variant),
    ("causal_mask", causal_triu_variant),
    ("causal_mask", causal_loops_variant),
    ("causal_mask", causal_moved_variant),
    ("padding_mask", padding_loop_over_positions_variant),
    ("padding_mask", padding_view_variant),
    ("padding_mask", padding_tolist_variant),
    ("padding_mask", padding_int_variant),
    ("padding_mask", padding_item_variant),
    ("masked_attention", attention_minus_1e9_variant),
    ("masked_attention", attention_finfo_min_variant),
    ("masked_attention", attention_float64_variant),
    ("masked_attention", attention_einsum_exp_variant),
    ("masked_attention", attention_loops_variant),
    ("masked_attention", attention_rows_item_variant),
]
