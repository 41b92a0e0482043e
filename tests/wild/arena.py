"""ARENA 3.0 (Callum McDougall et al.), chapter 1.1 "Transformer from scratch":
https://github.com/callummcdougall/ARENA_3.0, chapter1_transformer_interp/exercises/part1_transformer_from_scratch/
solutions.py, MIT licence; and TransformerLens' `tokenize_and_concatenate` that it uses for its data
(https://github.com/TransformerLensOrg/TransformerLens, transformer_lens/utils.py, MIT licence).

Adapted to the exercise API only where it differs: ARENA's (n_heads, d_model, d_head) parameter tensors W_Q, W_K,
W_V, W_O and b_* become the API's nn.Linear W_q, W_k, W_v, W_o (their outputs split with einops.rearrange), its
MLP's W_in, W_out become fc1, fc2 (used through einsum on their weights) with ReLU for gelu_new, w, b are weight,
bias, ln1, ln2, ln_final, mlp are norm1, norm2, norm_final, ff; the attention takes the API's mask instead of always
applying the causal one, and returns its pattern; post-norm is added for norm_first=False; the learned position
table gives way to the course's TokenAndPositionEmbedding; the sampler works on a batch and draws from the API's
generator (torch.multinomial instead of Categorical.sample). Its own choices stay: einops.einsum everywhere,
`register_buffer("IGNORE", ...)` with masked_fill_, `var(unbiased=False)`, `get_log_probs`, AdamW, the per-row
sampler with `.item()`.
"""
import math

import einops
import torch as t
from torch import nn

from tests.wild import Student, mistake

SOURCE = ("https://github.com/callummcdougall/ARENA_3.0 (chapter1_transformer_interp/exercises/"
          "part1_transformer_from_scratch/solutions.py)")
IMPORTS = "import math\n\nimport einops\nimport torch as t\nfrom torch import nn"


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `Attention.forward`'s scores, pattern and z, with "..."
# for the leading axes.
def attention(q, k, v):
    attn_scores = einops.einsum(q, k, "... posn_Q d_head, ... posn_K d_head -> ... posn_Q posn_K")
    attn_pattern = (attn_scores / q.shape[-1] ** 0.5).softmax(-1)
    z = einops.einsum(v, attn_pattern, "... posn_K d_v, ... posn_Q posn_K -> ... posn_Q d_v")
    return z, attn_pattern


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `Attention.apply_causal_mask`'s mask (True where the
# probability is set to zero there, so negated: True where a query may attend), for T_q queries against T_k keys.
def causal_mask(T_q, T_k=None, device=None):
    T_k = T_q if T_k is None else T_k
    # Define a mask that is True for all positions we want to set probabilities to zero for
    all_ones = t.ones(T_q, T_k, device=device)
    mask = t.triu(all_ones, diagonal=T_k - T_q + 1).bool()
    return ~mask


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `Attention` (nn.Linear W_q ... W_o for the parameter
# tensors, split into heads with einops.rearrange; the API's mask in `apply_mask`; the pattern returned).
class MultiHeadAttention(nn.Module):
    IGNORE: t.Tensor

    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} must be divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)
        self.register_buffer("IGNORE", t.tensor(-1e5, dtype=t.float32))

    def forward(self, normalized_resid_pre, x_kv=None, mask=None):
        x_kv = normalized_resid_pre if x_kv is None else x_kv
        # Calculate query, key and value vectors
        q = einops.rearrange(self.W_q(normalized_resid_pre), "batch posn (nheads d_head) -> batch posn nheads d_head",
                             nheads=self.n_heads)
        k = einops.rearrange(self.W_k(x_kv), "batch posn (nheads d_head) -> batch posn nheads d_head",
                             nheads=self.n_heads)
        v = einops.rearrange(self.W_v(x_kv), "batch posn (nheads d_head) -> batch posn nheads d_head",
                             nheads=self.n_heads)

        # Calculate attention scores, then scale and mask, and apply softmax to get probabilities
        attn_scores = einops.einsum(
            q, k,
            "batch posn_Q nheads d_head, batch posn_K nheads d_head -> batch nheads posn_Q posn_K",
        )
        attn_scores_masked = self.apply_mask(attn_scores / self.d_head ** 0.5, mask)
        attn_pattern = attn_scores_masked.softmax(-1)

        # Take weighted sum of value vectors, according to attention probabilities
        z = einops.einsum(
            v, self.dropout(attn_pattern),
            "batch posn_K nheads d_head, batch nheads posn_Q posn_K -> batch posn_Q nheads d_head",
        )

        # Calculate output (by applying matrix W_O and summing over heads, then adding bias b_O)
        attn_out = self.W_o(einops.rearrange(z, "batch posn_Q nheads d_head -> batch posn_Q (nheads d_head)"))
        return attn_out, attn_pattern

    def apply_mask(self, attn_scores, mask):
        '''
        Applies a mask to attention scores, and returns masked scores.
        '''
        if mask is None:
            return attn_scores
        if mask.dim() <= 3:
            mask = mask.unsqueeze(-3)
        # Apply the mask to attention scores, then return the masked scores
        attn_scores.masked_fill_(~mask, self.IGNORE)
        return attn_scores


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `LayerNorm` (w, b -> weight, bias; eps a parameter).
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.layer_norm_eps = eps
        self.weight = nn.Parameter(t.ones(d_model))
        self.bias = nn.Parameter(t.zeros(d_model))

    def forward(self, residual):
        residual_mean = residual.mean(dim=-1, keepdim=True)
        residual_std = (residual.var(dim=-1, keepdim=True, unbiased=False) + self.layer_norm_eps).sqrt()

        residual = (residual - residual_mean) / residual_std
        return residual * self.weight + self.bias


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `MLP` (W_in, b_in, W_out, b_out are the weights of
# fc1, fc2; ReLU for gelu_new; "..." for the leading axes).
class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, normalized_resid_mid):
        pre = einops.einsum(
            normalized_resid_mid, self.fc1.weight,
            "... d_model, d_mlp d_model -> ... d_mlp",
        ) + self.fc1.bias
        post = self.dropout(t.relu(pre))
        mlp_out = einops.einsum(
            post, self.fc2.weight,
            "... d_mlp, d_model d_mlp -> ... d_model",
        ) + self.fc2.bias
        return mlp_out


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `TransformerBlock` (ln1, ln2, mlp -> norm1, norm2, ff;
# post-norm added).
class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm1 = LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.norm2 = LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm_first = norm_first

    def forward(self, resid_pre, mask=None):
        if not self.norm_first:
            resid_mid = self.norm1(self.attn(resid_pre, resid_pre, mask)[0] + resid_pre)
            return self.norm2(self.ff(resid_mid) + resid_mid)
        normalized = self.norm1(resid_pre)
        resid_mid = self.attn(normalized, normalized, mask)[0] + resid_pre
        resid_post = self.ff(self.norm2(resid_mid)) + resid_mid
        return resid_post


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `DemoTransformer` (embed + pos_embed -> embedding,
# ln_final -> norm_final, unembed -> lm_head; the causal mask handed to the blocks).
class DecoderOnlyTransformer(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
        self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens):
        residual = self.dropout(self.embedding(tokens))
        mask = causal_mask(tokens.shape[-1], device=tokens.device)
        for block in self.blocks:
            residual = block(residual, mask)
        logits = self.lm_head(self.norm_final(residual))
        return logits


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `TransformerSampler.sample` with `sample_next_token`,
# `greedy_search`, `apply_temperature`, `sample_top_k` and `sample_basic`, the model run on every row of a batch at
# once and each row's next token chosen on its own (torch.multinomial with the generator in place of
# Categorical(logits=...).sample()).
@t.inference_mode()
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    model.eval()
    n_ctx = model.embedding.max_len
    input_ids = prompt
    for i in range(max_new_tokens):
        # Get new logits (make sure we don't pass in more tokens than the model's context length)
        logits = model(input_ids[:, -n_ctx:])
        # We only take logits for the last token, because this is what we're sampling
        logits = logits[:, -1]
        next_tokens = []
        for row_logits in logits:
            if temperature == 0:
                token = row_logits.argmax().item()
            else:
                row_logits = row_logits / temperature
                if top_k is not None and top_k > 0:
                    top_k_logits, top_k_token_ids = row_logits.topk(min(top_k, row_logits.shape[-1]))
                    sampled_token_idx = t.multinomial(top_k_logits.softmax(-1), 1, generator=generator)
                    token = top_k_token_ids[sampled_token_idx].item()
                else:
                    token = t.multinomial(row_logits.softmax(-1), 1, generator=generator).item()
            next_tokens.append(token)
        # Get next token (as a tensor of size (batch, 1) so we can concat it to input_ids)
        next_token = t.tensor(next_tokens, device=input_ids.device)[:, None]
        # Create new input ids string, with shape (batch, old_seq_len + 1)
        input_ids = t.cat([input_ids, next_token], dim=-1)
    return input_ids


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `get_log_probs`.
def get_log_probs(logits, tokens):
    log_probs = logits.log_softmax(dim=-1)
    # Get logprobs the first seq_len-1 predictions (so we can compare them with the actual next tokens)
    log_probs_for_tokens = log_probs[:, :-1].gather(dim=-1, index=tokens[:, 1:].unsqueeze(-1)).squeeze(-1)

    return log_probs_for_tokens


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `TransformerTrainer.__init__` and `training_step` (fresh
# reversal batches; the course's progress bar for tqdm).
def train_reversal(model, steps, batch_size, half_len, vocab_size, lr, device=None, weight_decay=1e-2):
    if device is not None:
        model.to(device)
    device = next(model.parameters()).device
    optimizer = t.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    model.train()
    losses = []
    for step in progress(range(steps), "training"):
        tokens = reversal_batch(batch_size, half_len, vocab_size).to(device)
        logits = model(tokens)
        loss = -get_log_probs(logits, tokens).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: `TransformerTrainer.validation_step`, averaged over the
# batch at each position.
@t.inference_mode()
def per_position_accuracy(model, batch):
    tokens = batch
    logits = model(tokens)[:, :-1]
    predicted_tokens = logits.argmax(dim=-1)
    correct_predictions = (predicted_tokens == tokens[:, 1:])
    return correct_predictions.float().mean(dim=0)


# TransformerLens, transformer_lens/utils.py: `tokenize_and_concatenate`'s cut of the token stream into rows
# of max_length ("drop the final, incomplete row").
def chunk(ids, seq_len):
    tokens = ids
    num_tokens = len(tokens)
    num_batches = num_tokens // (seq_len)
    # Drop the final tokens if not enough to make a full sequence
    tokens = tokens[: seq_len * num_batches]
    tokens = einops.rearrange(
        tokens, "(batch seq) -> batch seq", batch=num_batches, seq=seq_len
    )
    return tokens


# ARENA_3.0 part1_transformer_from_scratch/solutions.py: the loss of `training_step` (-get_log_probs(...).mean()),
# summed over the validation windows, batch_size at a time.
@t.inference_mode()
def evaluate(model, chunks, batch_size):
    device = next(model.parameters()).device
    total, count = 0.0, 0
    for first in range(0, len(chunks), batch_size):
        tokens = chunks[first:first + batch_size].to(device)
        log_probs = get_log_probs(model(tokens), tokens)
        total += -log_probs.sum().item()
        count += log_probs.numel()
    return total / count


STUDENTS = {
    "arena": Student(SOURCE, IMPORTS, {
        "attention": [attention],
        "causal_mask": [causal_mask],
        "multi_head_attention": [MultiHeadAttention],
        "layer_norm": [LayerNorm],
        "feed_forward": [FeedForward],
        "transformer_block": [TransformerBlock],
        "decoder_only_transformer": [DecoderOnlyTransformer],
        "generate": [generate],
        "train_reversal": [get_log_probs, train_reversal],
        "per_position_accuracy": [per_position_accuracy],
        "chunk": [chunk],
        "evaluate": [get_log_probs, evaluate],
    }, mistakes={
        "generate": mistake("TransformerSampler.sample calls model.eval() and never puts the model back in the mode "
                            "it was in", "check_generate", "hidden_generate"),
        "per_position_accuracy": mistake("validation_step runs the model in whatever mode it is in (training, with "
                                         "dropout on), where the API asks for eval mode",
                                         "check_per_position_accuracy", "hidden_per_position_accuracy"),
        "evaluate": mistake("the loss is measured in whatever mode the model is in (training, with dropout on), "
                            "where the API asks for eval mode", "check_evaluate", "hidden_evaluate"),
    }),
}
