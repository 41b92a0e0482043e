"""Recording the weights attention modules return while a model runs (forward hooks), for the figures of trained
attention: 05's cross-attention and 06's self-attention."""
from __future__ import annotations

import torch


def recorded_attention(model, batch: torch.Tensor | tuple, attention_modules: list) -> list:
    """Run `model` once on `batch` in eval mode without gradients and return what each attention module returned as
    its weights, averaged over the batch: one tensor (n_heads, T_q, T_k) on the CPU per module, or None where the
    module did not return `(output, weights (B, n_heads, T_q, T_k))`. `batch` is the model's one input, such as
    tokens (B, T), or a tuple of its inputs, such as (src (B, S), tgt (B, T)). The model's mode is restored and the
    hooks are removed whatever happens."""
    recorded = [None] * len(attention_modules)
    inputs = batch if isinstance(batch, tuple) else (batch,)

    def keeper(layer: int):
        def keep(module, module_inputs, output):
            weights = output[1] if isinstance(output, tuple) and len(output) == 2 else None
            if isinstance(weights, torch.Tensor) and weights.dim() == 4:
                recorded[layer] = weights.detach().to("cpu", torch.float64).mean(dim=0)
        return keep

    hooks = [module.register_forward_hook(keeper(layer)) for layer, module in enumerate(attention_modules)]
    mode_before = model.training
    try:
        model.eval()
        with torch.no_grad():
            model(*inputs)
    finally:
        for hook in hooks:
            hook.remove()
        model.train(mode_before)
    return recorded
