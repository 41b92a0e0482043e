"""Known mistakes in notebook 02."""
import math

import torch

from autograder.authoring.mistakes import mistake


def _attention(Q, K, V, *, scale=None, dim=-1):
    """Attention with one detail changed: the number the scores are divided by, or the softmax axis."""
    scores = Q @ K.transpose(-2, -1) / (math.sqrt(Q.shape[-1]) if scale is None else scale)
    weights = torch.softmax(scores, dim=dim)
    return weights @ V, weights


@mistake("attention", "your weights sum to 1 over the query axis: the softmax should run over the keys, the last "
         "axis (dim=-1), so that each query's weights sum to 1.")
def softmax_over_queries(Q, K, V):
    return _attention(Q, K, V, dim=-2)


@mistake("attention", "the scores are not scaled: divide Q Kᵀ by sqrt(d_k) before the softmax, or large scores "
         "saturate it.")
def not_scaled(Q, K, V):
    return _attention(Q, K, V, scale=1.0)


@mistake("attention", "the scores are divided by d_k; the scale is the square root, sqrt(d_k), which brings the "
         "scores back to unit variance.")
def divided_by_d_k(Q, K, V):
    return _attention(Q, K, V, scale=Q.shape[-1])


@mistake("attention", "the scores are multiplied by sqrt(d_k); they should be divided by it.")
def multiplied_by_sqrt_d_k(Q, K, V):
    return _attention(Q, K, V, scale=1 / math.sqrt(Q.shape[-1]))


@mistake("attention", "the scores are divided by sqrt(d_v), the size of the values; d_k is the size of the queries "
         "and keys, Q.shape[-1].")
def scaled_by_sqrt_d_v(Q, K, V):
    return _attention(Q, K, V, scale=math.sqrt(V.shape[-1]))


@mistake("attention", "the scores are divided by the square root of the number of keys; d_k is the last dimension "
         "of Q and K (Q.shape[-1]), not a sequence length.")
def scaled_by_sqrt_of_key_count(Q, K, V):
    return _attention(Q, K, V, scale=math.sqrt(K.shape[-2]))


@mistake("attention", "the scores are divided by sqrt(Q.shape[0]), the first dimension of Q: that is the batch "
         "size (or, without a batch, the number of queries), not d_k. d_k is the length of each query and key "
         "vector, the last dimension: Q.shape[-1]. (A popular attention tutorial makes this very slip.)")
def scaled_by_first_dimension(Q, K, V):
    return _attention(Q, K, V, scale=math.sqrt(Q.shape[0]))


@mistake("attention", "the output mixes the values with the transposed weights; query i's output is row i of the "
         "weights times V: weights @ V.")
def weights_transposed_in_output(Q, K, V):
    _, weights = _attention(Q, K, V)
    return weights.transpose(-2, -1) @ V, weights


@mistake("attention", "the weights you return are the scaled scores before the softmax; return the softmax of "
         "them, the numbers that multiply V.")
def returns_scores(Q, K, V):
    output, _ = _attention(Q, K, V)
    return output, Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
