"""nanoGPT (Andrej Karpathy): https://github.com/karpathy/nanoGPT, model.py, train.py, sample.py and
data/shakespeare_char/prepare.py, MIT licence.

Adapted to the exercise API only where it differs: the fused `c_attn` is split into W_q, W_k, W_v (the API fixes
them) and `c_proj` is W_o; its attention takes a mask and returns its weights (the manual, non-flash path); c_fc and
c_proj of the MLP are fc1, fc2 with the API's ReLU for GELU; ln_1, ln_2, ln_f are norm1, norm2, norm_final, with
post-norm added for norm_first=False; the learned position table gives way to the course's
TokenAndPositionEmbedding, lm_head has a bias and is not tied to the embedding (the API loads them separately);
generate takes the model, greedy decoding at temperature 0 and a generator. Its own choices stay: the `tril`
buffer named "bias" and `masked_fill(... == 0, float('-inf'))`, F.layer_norm, dropout after c_proj, AdamW with
weight decay on 2-D parameters and gradient clipping, feeding x = batch[:, :-1] against y = batch[:, 1:], a sorted
vocabulary, the `int(n * 0.9)` split, estimate_loss's mean of batch losses, decoding the whole sampled sequence.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from tests.wild import Student, mistake

SOURCE = "https://github.com/karpathy/nanoGPT (model.py, train.py, sample.py, data/shakespeare_char/prepare.py)"
IMPORTS = "import math\n\nimport torch\nimport torch.nn as nn\nfrom torch.nn import functional as F"


# karpathy/nanoGPT, model.py: `CausalSelfAttention.forward`, the manual implementation of attention, unmasked.
def attention(q, k, v):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = F.softmax(att, dim=-1)
    y = att @ v
    return y, att


# karpathy/nanoGPT, model.py: the causal mask `CausalSelfAttention` registers as its "bias" buffer, for T_q queries
# that are the last of T_k positions.
def causal_mask(T_q, T_k=None, device=None):
    T_k = T_q if T_k is None else T_k
    bias = torch.tril(torch.ones(T_q, T_k, device=device), diagonal=T_k - T_q)
    return bias != 0


# karpathy/nanoGPT, model.py: `CausalSelfAttention.forward`, the manual implementation of attention, its mask given.
def masked_attention(q, k, v, mask=None):
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    if mask is not None:
        att = att.masked_fill(mask == 0, float('-inf'))
    att = F.softmax(att, dim=-1)
    y = att @ v
    return y, att


# karpathy/nanoGPT, model.py: `CausalSelfAttention` (c_attn split into W_q, W_k, W_v; c_proj -> W_o; the mask a
# parameter; the weights returned).
class MultiHeadAttention(nn.Module):

    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"n_embd={d_model} is not a multiple of n_head={n_heads}")
        # key, query, value projections for all heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        # output projection
        self.W_o = nn.Linear(d_model, d_model)
        # regularization
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head = n_heads
        self.n_embd = d_model
        self.dropout = dropout

    def forward(self, x, x_kv=None, mask=None):
        B, T, C = x.size()  # batch size, sequence length, embedding dimensionality (n_embd)
        x_kv = x if x_kv is None else x_kv
        S = x_kv.size(1)

        # calculate query, key, values for all heads in batch and move head forward to be the batch dim
        q, k, v = self.W_q(x), self.W_k(x_kv), self.W_v(x_kv)
        k = k.view(B, S, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, S, hs)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, S, self.n_head, C // self.n_head).transpose(1, 2)  # (B, nh, S, hs)

        # manual implementation of attention
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        if mask is not None:
            if mask.dim() <= 3:
                mask = mask.unsqueeze(-3)
            att = att.masked_fill(mask == 0, float('-inf'))
        att = F.softmax(att, dim=-1)
        weights = att
        att = self.attn_dropout(att)
        y = att @ v  # (B, nh, T, S) x (B, nh, S, hs) -> (B, nh, T, hs)
        y = y.transpose(1, 2).contiguous().view(B, T, C)  # re-assemble all head outputs side by side

        # output projection
        y = self.resid_dropout(self.W_o(y))
        return y, weights


# karpathy/nanoGPT, model.py: `LayerNorm` (always with a bias; eps a parameter).
class LayerNorm(nn.Module):
    """ LayerNorm but with an optional bias. PyTorch doesn't support simply bias=False """

    def __init__(self, d_model, eps=1e-5):
        ndim = d_model
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim))
        self.eps = eps

    def forward(self, input):
        return F.layer_norm(input, self.weight.shape, self.weight, self.bias, self.eps)


# karpathy/nanoGPT, model.py: `MLP` (c_fc -> fc1, c_proj -> fc2, the API's ReLU in place of GELU).
class FeedForward(nn.Module):

    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu(x)
        x = self.fc2(x)
        x = self.dropout(x)
        return x


# karpathy/nanoGPT, model.py: `Block` (ln_1, ln_2 -> norm1, norm2; mlp -> ff; post-norm added).
class TransformerBlock(nn.Module):

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm1 = LayerNorm(d_model)
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.norm2 = LayerNorm(d_model)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.attn(h, h, mask)[0]
            x = x + self.ff(self.norm2(x))
        else:
            x = self.norm1(x + self.attn(x, x, mask)[0])
            x = self.norm2(x + self.ff(x))
        return x


# karpathy/nanoGPT, model.py: `GPT` (wte + wpe -> the course's embedding; h -> blocks; ln_f -> norm_final; the
# causal "bias" buffer of CausalSelfAttention kept here and handed to every block; lm_head with a bias, untied).
class DecoderOnlyTransformer(nn.Module):

    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.block_size = max_len
        self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(n_layers)])
        self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, vocab_size)
        # causal mask to ensure that attention is only applied to the left in the input sequence
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len))
                             .view(1, 1, max_len, max_len))
        # init all weights
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        b, t = idx.size()
        x = self.drop(self.embedding(idx))
        for block in self.blocks:
            x = block(x, self.bias[:, :, :t, :t] != 0)
        x = self.norm_final(x)
        logits = self.lm_head(x)
        return logits


# karpathy/nanoGPT, model.py: `GPT.generate` (the model a parameter, its block size its max_len; greedy at
# temperature 0; the generator handed to torch.multinomial).
@torch.no_grad()
def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """
    Take a conditioning sequence of indices idx (LongTensor of shape (b,t)) and complete
    the sequence max_new_tokens times, feeding the predictions back into the model each time.
    Most likely you'll want to make sure to be in model.eval() mode of operation for this.
    """
    idx = prompt
    block_size = model.embedding.max_len
    for _ in range(max_new_tokens):
        # if the sequence context is growing too long we must crop it at block_size
        idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
        # forward the model to get the logits for the index in the sequence
        logits = model(idx_cond)
        if temperature == 0:
            idx_next = logits[:, -1, :].argmax(dim=-1, keepdim=True)
            idx = torch.cat((idx, idx_next), dim=1)
            continue
        # pluck the logits at the final step and scale by desired temperature
        logits = logits[:, -1, :] / temperature
        # optionally crop the logits to only the top k options
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float('Inf')
        # apply softmax to convert logits to (normalized) probabilities
        probs = F.softmax(logits, dim=-1)
        # sample from the distribution
        idx_next = torch.multinomial(probs, num_samples=1, generator=generator)
        # append sampled index to the running sequence and continue
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


# karpathy/nanoGPT, train.py: the training loop (get_batch's x, y from one reversal batch; configure_optimizers'
# AdamW with weight decay on 2-D parameters; grad_clip 1.0; the course's progress bar for the iter log lines).
def train_reversal(model, steps, batch_size, half_len, vocab_size, lr, device=None, weight_decay=1e-1,
                   beta1=0.9, beta2=0.95, grad_clip=1.0):
    if device is not None:
        model.to(device)
    device = next(model.parameters()).device
    param_dict = {pn: p for pn, p in model.named_parameters() if p.requires_grad}
    decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
    nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
    optim_groups = [
        {'params': decay_params, 'weight_decay': weight_decay},
        {'params': nodecay_params, 'weight_decay': 0.0}
    ]
    optimizer = torch.optim.AdamW(optim_groups, lr=lr, betas=(beta1, beta2))
    model.train()
    losses = []
    for iter_num in progress(range(steps), "training"):
        data = reversal_batch(batch_size, half_len, vocab_size).to(device)
        X, Y = data[:, :-1], data[:, 1:]
        logits = model(X)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), Y.reshape(-1), ignore_index=-1)
        loss.backward()
        # clip the gradient
        if grad_clip != 0.0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
        optimizer.step()
        # flush the gradients as soon as we can, no need for this memory anymore
        optimizer.zero_grad(set_to_none=True)
        lossf = loss.item()
        losses.append(lossf)
    return losses


# karpathy/nanoGPT, data/shakespeare_char/prepare.py: the character vocabulary, `chars = sorted(list(set(data)))`,
# stoi, itos, encode, decode; over tokens, with min_freq and "<unk>" for what was not seen.
class Vocab:
    UNK = "<unk>"

    def __init__(self, chars):
        # create a mapping from characters to integers
        self.stoi = {ch: i for i, ch in enumerate(chars)}
        self.itos = {i: ch for i, ch in enumerate(chars)}

    @classmethod
    def build(cls, tokens, min_freq=1):
        data = tokens
        # get all the unique characters that occur in this text
        counts = {}
        for ch in data:
            counts[ch] = counts.get(ch, 0) + 1
        chars = sorted(list(set(ch for ch in data if counts[ch] >= min_freq and ch != cls.UNK)))
        return cls([cls.UNK] + chars)

    def __len__(self):
        return len(self.stoi)

    def encode(self, s):
        return [self.stoi.get(c, 0) for c in s]  # encoder: take a string, output a list of integers

    def decode(self, l):
        return [self.itos[int(i)] for i in l]  # decoder: take a list of integers, output a string


# karpathy/nanoGPT, data/shakespeare_char/prepare.py: the train and test splits, `data[:int(n*0.9)]`.
def train_val_split(chunks, val_fraction=0.1):
    data = chunks
    n = len(data)
    train_data = data[:int(n * (1 - val_fraction))]
    val_data = data[int(n * (1 - val_fraction)):]
    return train_data, val_data


# karpathy/nanoGPT, train.py: `estimate_loss` over the windows, batch_size at a time.
@torch.no_grad()
def evaluate(model, chunks, batch_size):
    model.eval()
    device = next(model.parameters()).device
    eval_iters = math.ceil(len(chunks) / batch_size)
    losses = torch.zeros(eval_iters)
    for k in range(eval_iters):
        data = chunks[k * batch_size:(k + 1) * batch_size].to(device)
        X, Y = data[:, :-1], data[:, 1:]
        logits = model(X)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), Y.reshape(-1), ignore_index=-1)
        losses[k] = loss.item()
    out = losses.mean().item()
    model.train()
    return out


# karpathy/nanoGPT, sample.py: encode the start, generate, decode (`decode(y[0].tolist())`).
def sample(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    start, max_new_tokens = prompt, n_tokens
    device = next(model.parameters()).device
    start_ids = vocab.encode(tokenize(start))
    x = (torch.tensor(start_ids, dtype=torch.long, device=device)[None, ...])
    y = generate(model, x, max_new_tokens, temperature=temperature, top_k=top_k, generator=generator)
    return "".join(vocab.decode(y[0].tolist()))


STUDENTS = {
    "nanogpt": Student(SOURCE, IMPORTS, {
        "attention": [attention],
        "causal_mask": [causal_mask],
        "masked_attention": [masked_attention],
        "multi_head_attention": [MultiHeadAttention],
        "layer_norm": [LayerNorm],
        "feed_forward": [FeedForward],
        "transformer_block": [TransformerBlock],
        "decoder_only_transformer": [DecoderOnlyTransformer],
        "generate": [generate],
        "train_reversal": [train_reversal],
        "vocab": [Vocab],
        "train_val_split": [train_val_split],
        "evaluate": [evaluate],
        "sample": [sample],
    }, mistakes={
        "masked_attention": mistake("masked_fill(-inf) then softmax gives NaN for a query with no allowed key "
                                    "(nanoGPT only ever masks causally, where every query sees itself)",
                                    "check_masked_attention", "hidden_masked_attention"),
        "generate": mistake("GPT.generate leaves the mode to its caller (\"Most likely you'll want to make sure to "
                            "be in model.eval() mode\"): it samples with dropout on in training mode",
                            "check_generate", "hidden_generate"),
        "vocab": mistake("prepare.py numbers the vocabulary in sorted order (sorted(list(set(data)))); the exercise "
                         "asks for ids from the most to the least frequent token", "check_vocab", "hidden_vocab"),
        "train_val_split": mistake("data[:int(n * 0.9)] truncates where the exercise asks for val = the last "
                                   "round(val_fraction * N) windows (N=9, val_fraction=0.5: 5 windows, not 4)",
                                   "check_train_val_split", "hidden_train_val_split"),
        "sample": mistake("sample.py decodes the whole sequence, prompt included, so a prompt word the vocabulary "
                          "does not know comes back as <unk>; the exercise keeps the prompt as given",
                          "check_sample", "hidden_sample"),
        "evaluate": mistake("estimate_loss averages the batch means, so a last, smaller batch weighs as much as a "
                            "full one, and it leaves the model in training mode",
                            "check_evaluate", "hidden_evaluate"),
    }),
}
