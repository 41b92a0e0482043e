"""Known mistakes in notebook 03."""
import math

import torch

from autograder.authoring.mistakes import mistake


def _positions(T_q, T_k, device):
    T_k = T_q if T_k is None else T_k
    i = torch.arange(T_q, device=device)[:, None]
    j = torch.arange(T_k, device=device)[None, :]
    return i, j, T_k - T_q


@mistake("causal_mask", "the diagonal is masked: a query may always attend to its own position, so the mask "
         "keeps j <= i + (T_k - T_q), equality included.")
def diagonal_excluded(T_q, T_k=None, device=None):
    i, j, offset = _positions(T_q, T_k, device)
    return j < i + offset


@mistake("causal_mask", "the mask is the upper triangle, the transpose of the causal one: query i may attend to the "
         "keys at or before its own position (j <= i + (T_k - T_q)), not those after it.")
def upper_triangle(T_q, T_k=None, device=None):
    i, j, offset = _positions(T_q, T_k, device)
    return j >= i + offset


@mistake("causal_mask", "True marks the hidden keys; in this course True means the query MAY attend (as in "
         "F.scaled_dot_product_attention), so the visible keys j <= i + (T_k - T_q) are True.")
def inverted(T_q, T_k=None, device=None):
    i, j, offset = _positions(T_q, T_k, device)
    return j > i + offset


@mistake("causal_mask", "the offset T_k - T_q is missing: the queries are the LAST T_q positions, so query i sits at "
         "position i + (T_k - T_q) and may attend to every key up to there.")
def ignores_offset(T_q, T_k=None, device=None):
    i, j, _ = _positions(T_q, T_k, device)
    return j <= i


@mistake("causal_mask", "the offset has the wrong sign: query i sits at position i + (T_k - T_q), so it may "
         "attend to key j when j <= i + (T_k - T_q).")
def offset_sign_flipped(T_q, T_k=None, device=None):
    i, j, offset = _positions(T_q, T_k, device)
    return j <= i - offset


@mistake("causal_mask", "a query that may see no key got keys from the end of its row: in a loop, `mask[i, :stop]` "
         "with a negative stop counts from the end. When T_k < T_q the first queries see nothing: use max(stop, 0).")
def loop_negative_stop(T_q, T_k=None, device=None):
    T_k = T_q if T_k is None else T_k
    mask = torch.zeros(T_q, T_k, dtype=torch.bool, device=device)
    for i in range(T_q):
        mask[i, : i + T_k - T_q + 1] = True
    return mask


def _real(lengths, T):
    return torch.arange(T, device=lengths.device) < lengths[:, None]  # (B, T)


@mistake("padding_mask", "the mask is inverted: True should mark the real tokens (they may be attended to) and "
         "False the padding.")
def padding_inverted(lengths, T):
    return ~_real(lengths, T)[:, None]


@mistake("padding_mask", "off by one: a sequence of length n has real tokens at positions 0, ..., n - 1, so the "
         "test is position < length, not <=.")
def padding_off_by_one(lengths, T):
    return (torch.arange(T, device=lengths.device) <= lengths[:, None])[:, None]


@mistake("padding_mask", "the query axis is missing: return shape (B, 1, T), so that the mask broadcasts over the "
         "queries of each sequence (mask[b, i, j] for query i and key j).")
def padding_missing_query_axis(lengths, T):
    return _real(lengths, T)


@mistake("padding_mask", "the axis of size 1 is in the wrong place: shape (B, T, 1) would hide queries, not keys; "
         "return (B, 1, T), one row of keys shared by every query.")
def padding_axis_last(lengths, T):
    return _real(lengths, T)[:, :, None]


@mistake("padding_mask", "the real tokens are at the end of each sequence in your mask; here they come first "
         "(positions 0 to length - 1) and the padding follows them.")
def padding_on_the_left(lengths, T):
    return (torch.arange(T, device=lengths.device) >= T - lengths[:, None])[:, None]


def _scores(Q, K, scale=True):
    return Q @ K.transpose(-2, -1) / (math.sqrt(Q.shape[-1]) if scale else 1.0)


def _finish(weights, V):
    return weights @ V, weights


@mistake("masked_attention", "the masked scores were set to 0 instead of -inf: exp(0) = 1, so masked keys still get "
         "weight. Fill them with float('-inf') before the softmax.")
def fill_with_zero(Q, K, V, mask=None):
    scores = _scores(Q, K)
    if mask is not None:
        scores = torch.where(mask, scores, 0.0)
    return _finish(torch.softmax(scores, dim=-1), V)


@mistake("masked_attention", "a query with no allowed key came out as NaN: the softmax of a row that is all -inf is "
         "0/0. Give such rows weights 0 (and so output 0), e.g. with torch.where after the softmax.")
def nan_on_fully_masked_row(Q, K, V, mask=None):
    scores = _scores(Q, K)
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    return _finish(torch.softmax(scores, dim=-1), V)


@mistake("masked_attention", "a query with no allowed key spread its weight evenly over all keys, the masked ones "
         "included: with a large negative fill value (like -1e9) every score of that row is the same. Give such rows "
         "weights 0 and output 0.")
def uniform_on_fully_masked_row(Q, K, V, mask=None):
    scores = _scores(Q, K)
    if mask is not None:
        scores = torch.where(mask, scores, -1e9)
    return _finish(torch.softmax(scores, dim=-1), V)


@mistake("masked_attention", "the mask is used the wrong way round: True means the query MAY attend to that key (as "
         "in F.scaled_dot_product_attention); you hid the allowed keys and kept the masked ones.")
def inverted_mask(Q, K, V, mask=None):
    scores = _scores(Q, K)
    if mask is None:
        return _finish(torch.softmax(scores, dim=-1), V)
    scores = torch.where(~mask, scores, float("-inf"))
    return _finish(torch.where(~mask, torch.softmax(scores, dim=-1), 0.0), V)


@mistake("masked_attention", "the masked weights were zeroed after the softmax: the others no longer sum to 1, and "
         "the hidden keys still shaped them through the softmax's sum. Mask the scores before the softmax.")
def zeroed_after_softmax(Q, K, V, mask=None):
    weights = torch.softmax(_scores(Q, K), dim=-1)
    if mask is not None:
        weights = torch.where(mask, weights, 0.0)
    return _finish(weights, V)


@mistake("masked_attention", "the mask had no effect: masked keys still get weight. Apply it to the scores before "
         "the softmax.")
def ignores_mask(Q, K, V, mask=None):
    return _finish(torch.softmax(_scores(Q, K), dim=-1), V)


@mistake("masked_attention", "the scores are not scaled: divide Q Kᵀ by sqrt(d_k) before masking and the softmax, "
         "as in notebook 02.")
def masked_not_scaled(Q, K, V, mask=None):
    scores = _scores(Q, K, scale=False)
    if mask is not None:
        scores = torch.where(mask, scores, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    return _finish(weights if mask is None else torch.where(mask, weights, 0.0), V)
