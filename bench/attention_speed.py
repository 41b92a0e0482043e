"""Benchmark: training throughput of the reference model with the course's attention against the same model with
torch.nn.functional.scaled_dot_product_attention (SDPA), as a ratio measured side by side in one run.

Usage: python bench/attention_speed.py [--threads 2] [--device cpu] [--repeats 5] [--steps 10]
For each configuration, two copies of the reference DecoderOnlyTransformer with the same weights train on the same
random batches: one as written in the course (masked_attention from notebook 03 returns the weights too), one whose
multi-head attention calls SDPA (is_causal=True) on the same projections. Their timed blocks of `--steps` training
steps alternate, `--repeats` times each, so that both see the same machine load; reported are the median tokens per
second of each and their ratio.
Configurations: the Shakespeare defaults of notebook 07 (vocabulary 30,607: the output layer dominates) and an
attention-heavy one (vocabulary 64, 512-token windows).
"""
from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
import types
from pathlib import Path

import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from autograder.authoring.reference import attention_block  # noqa: E402
from autograder.authoring.reference import transformer as ref  # noqa: E402

CONFIGS = {
    "Shakespeare defaults (V 30,607, T 127, batch 16)": dict(vocab_size=30607, seq_len=127, batch=16, d_model=128,
                                                            n_heads=4, d_ff=512, n_layers=2),
    "attention-heavy (V 64, T 512, batch 8)": dict(vocab_size=64, seq_len=512, batch=8, d_model=128, n_heads=4,
                                                   d_ff=512, n_layers=2),
}


def sdpa_forward(self, x_q, x_kv=None, mask=None):
    """MultiHeadAttention.forward with the same projections, the attention itself computed by SDPA (no weights)."""
    if x_kv is None:
        x_kv = x_q
    B, T_q, d_model = x_q.shape
    T_k = x_kv.shape[1]
    Q = self.W_q(x_q).view(B, T_q, self.n_heads, self.d_head).transpose(1, 2)
    K = self.W_k(x_kv).view(B, T_k, self.n_heads, self.d_head).transpose(1, 2)
    V = self.W_v(x_kv).view(B, T_k, self.n_heads, self.d_head).transpose(1, 2)
    causal = mask is not None and mask.dim() == 2 and T_q == T_k and bool(torch.equal(mask, torch.ones_like(mask).tril()))
    if causal:
        heads = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    else:
        heads = F.scaled_dot_product_attention(Q, K, V, attn_mask=None if mask is None else
                                               (mask.unsqueeze(1) if mask.dim() == 3 else mask))
    return self.W_o(heads.transpose(1, 2).reshape(B, T_q, d_model)), None


def with_sdpa(model: torch.nn.Module) -> torch.nn.Module:
    """Make every MultiHeadAttention of `model` compute its attention with SDPA."""
    for module in model.modules():
        if isinstance(module, attention_block.MultiHeadAttention):
            module.forward = types.MethodType(sdpa_forward, module)
    return model


def train_block(model, optimizer, batches, device) -> float:
    """Seconds for one optimizer step per batch."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    started = time.perf_counter()
    for batch in batches:
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - started


def compare(config: dict, device, repeats: int, steps: int) -> dict:
    c = dict(config)
    V, T, B = c.pop("vocab_size"), c.pop("seq_len"), c.pop("batch")
    torch.manual_seed(0)
    models = {"course": ref.DecoderOnlyTransformer(V, max_len=T + 1, **c).to(device)}
    models["sdpa"] = with_sdpa(ref.DecoderOnlyTransformer(V, max_len=T + 1, **c).to(device))
    models["sdpa"].load_state_dict(models["course"].state_dict())
    optimizers = {k: torch.optim.AdamW(m.parameters(), lr=1e-3) for k, m in models.items()}
    g = torch.Generator().manual_seed(1)
    batches = [torch.randint(0, V, (B, T + 1), generator=g).to(device) for _ in range(steps)]
    with torch.no_grad():  # the two must agree before timing means anything
        same = torch.allclose(models["course"](batches[0][:, :-1]), models["sdpa"](batches[0][:, :-1]), atol=1e-4)
    assert same, "the SDPA model must compute what the course's model computes"
    for kind in models:  # warm-up
        train_block(models[kind], optimizers[kind], batches[:2], device)
    tokens = {k: [] for k in models}
    for _ in range(repeats):
        for kind in models:
            seconds = train_block(models[kind], optimizers[kind], batches, device)
            tokens[kind].append(B * T * steps / seconds)
    return {k: statistics.median(v) for k, v in tokens.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    machine = f"{platform.machine()}, {args.threads} CPU threads" if device.type == "cpu" else \
        torch.cuda.get_device_name(device)
    print("| configuration | machine | torch | course tokens/s | SDPA tokens/s | SDPA / course | date |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, config in CONFIGS.items():
        result = compare(config, device, args.repeats, args.steps)
        print(f"| {name} | {machine} | torch {torch.__version__} | {result['course']:,.0f} | {result['sdpa']:,.0f} | "
              f"{result['sdpa'] / result['course']:.2f} | {datetime.date.today()} |", flush=True)


if __name__ == "__main__":
    main()
