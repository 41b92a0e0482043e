"""Mutants and variants for notebook 02."""
import math

import torch
from torch.nn import functional as F

from autograder.authoring.reference.attention import attention as reference


def computes_in_float32(Q, K, V):  # float64 inputs come back as float32
    output, weights = reference(Q.float(), K.float(), V.float())
    return output, weights


def naive_exp_softmax(Q, K, V):  # exp without subtracting the maximum: overflows for large scores
    scores = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]))
    weights = scores / scores.sum(-1, keepdim=True)
    return weights @ V, weights


def scales_query_in_place(Q, K, V):  # divides the caller's Q
    Q /= math.sqrt(Q.shape[-1])
    weights = torch.softmax(Q @ K.transpose(-2, -1), dim=-1)
    return weights @ V, weights


def uses_dot_T(Q, K, V):  # K.T reverses every axis: right for a matrix, wrong once there is a batch dimension
    K_T = K.permute(*reversed(range(K.dim())))  # what K.T does (without its deprecation warning)
    weights = torch.softmax(Q @ K_T / math.sqrt(Q.shape[-1]), dim=-1)
    return weights @ V, weights


def softmax_dim_1(Q, K, V):  # hard-codes the axis that is the key axis only for 3-dimensional inputs
    weights = torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1]), dim=1)
    return weights @ V, weights


def d_k_from_first_dimension(Q, K, V):  # the seed blog post's bug, as it wrote it: d_k = torch.tensor(Q.shape[0])
    d_k = torch.tensor(Q.shape[0])
    weights = F.softmax(Q @ K.transpose(-2, -1) / torch.sqrt(d_k), dim=-1)
    return weights @ V, weights


def unscaled_softmax_over_queries(Q, K, V):  # two mistakes at once: no fingerprint, the property step names it
    weights = torch.softmax(Q @ K.transpose(-2, -1), dim=-2)
    return weights @ V, weights


def only_output(Q, K, V):  # forgets to return the weights
    return reference(Q, K, V)[0]


def detached_weights(Q, K, V):  # cuts the graph: no gradient reaches Q and K
    output, weights = reference(Q.detach(), K.detach(), V)
    return output, weights


def float32_scale_tensor(Q, K, V):  # sqrt of an integer tensor is float32: float64 results lose precision
    d_k = torch.tensor(Q.shape[-1])
    weights = F.softmax(Q @ K.transpose(-2, -1) / torch.sqrt(d_k), dim=-1)
    return weights @ V, weights


def einsum_variant(Q, K, V):
    scores = torch.einsum("...qd,...kd->...qk", Q, K) / Q.shape[-1] ** 0.5
    weights = scores.softmax(dim=-1)
    return torch.einsum("...qk,...kv->...qv", weights, V), weights


def loops_variant(Q, K, V):
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    q = Q.expand(*batch, *Q.shape[-2:]).reshape(-1, *Q.shape[-2:])
    k = K.expand(*batch, *K.shape[-2:]).reshape(-1, *K.shape[-2:])
    v = V.expand(*batch, *V.shape[-2:]).reshape(-1, *V.shape[-2:])
    outputs, all_weights = [], []
    for b in range(q.shape[0]):
        rows_out, rows_w = [], []
        for i in range(q.shape[1]):
            scores = torch.stack([q[b, i] @ k[b, j] for j in range(k.shape[1])]) / math.sqrt(q.shape[-1])
            w = torch.exp(scores - scores.max())
            w = w / w.sum()
            rows_w.append(w)
            rows_out.append(w @ v[b])
        outputs.append(torch.stack(rows_out))
        all_weights.append(torch.stack(rows_w))
    output = torch.stack(outputs).reshape(*batch, Q.shape[-2], V.shape[-1])
    return output, torch.stack(all_weights).reshape(*batch, Q.shape[-2], K.shape[-2])


def rows_item_variant(Q, K, V):  # one query at a time; sizes read with int(), each row's maximum with .item()
    d_k = int(Q.shape[-1])
    batch = Q.shape[:-2]
    q, k, v = (t.reshape(-1, *t.shape[-2:]) for t in (Q, K, V))
    all_weights = []
    for b in range(int(q.shape[0])):
        rows = []
        for i in range(int(q.shape[1])):
            scores = (k[b] @ q[b, i]) / d_k ** 0.5
            e = torch.exp(scores - scores.max().item())
            rows.append(e / e.sum())
        all_weights.append(torch.stack(rows))
    weights = torch.stack(all_weights).reshape(*batch, Q.shape[-2], K.shape[-2])
    return weights @ V, weights


def float64_variant(Q, K, V):  # computes in float64, returns the inputs' dtype
    output, weights = reference(Q.double(), K.double(), V.double())
    return output.to(Q.dtype), weights.to(Q.dtype)


def scale_both_variant(Q, K, V):  # d_k^(-1/4) on each side gives the same scores
    s = Q.shape[-1] ** -0.25
    weights = torch.softmax((Q * s) @ (K * s).transpose(-2, -1), dim=-1)
    return weights @ V, weights


def stable_exp_variant(Q, K, V):  # exp / sum by hand, after subtracting each row's maximum
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ V, weights


def weights_to_cpu(Q, K, V):  # moves the weights to the CPU (to print them?): right only where the CPU is all there is
    output, weights = reference(Q, K, V)
    return output, weights.cpu()


MUTANTS = [
    ("attention", computes_in_float32),
    ("attention", naive_exp_softmax),
    ("attention", scales_query_in_place),
    ("attention", softmax_dim_1),
    ("attention", uses_dot_T),
    ("attention", d_k_from_first_dimension),
    ("attention", unscaled_softmax_over_queries),
    ("attention", only_output),
    ("attention", detached_weights),
    ("attention", float32_scale_tensor),
    ("attention", weights_to_cpu),
]

VARIANTS = [
    ("attention", einsum_variant),
    ("attention", loops_variant),
    ("attention", rows_item_variant),
    ("attention", float64_variant),
    ("attention", scale_both_variant),
    ("attention", stable_exp_variant),
]

# Mutants that differ from a correct implementation only on a second real device (tests/test_mutants.py skips them
# where the CPU is the only device, saying so).
NEEDS_SECOND_DEVICE = {weights_to_cpu}
