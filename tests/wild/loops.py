"""Issue 17.2: every exercise of the seven notebooks solved with plain Python loops (student `loops`), and again
reading sizes and lengths on the host with `.item()`, `int()` and `.tolist()` (student `loops_item`). Both are
correct per the spec ("reading a few values on the host ... is fine: students write loops, and loops are correct")
and must earn every autograded point.

The second student's names end in `_by_item` so that both live in this one module; the suffix is removed when
the code goes into a notebook. Names used but not defined here (`masked_attention`, `causal_mask`,
`padding_mask`, `TokenAndPositionEmbedding`, `TransformerBlock`, `LayerNorm`, `FeedForward`,
`MultiHeadAttention`, `generate`, `tokenize`, `progress`, `parameter_groups`, `learning_rate`, `evaluate`) are the notebook's own.
"""
import math
import re

import torch
from torch import nn
from torch.nn import functional as F

from tests.wild import Student

SOURCE = "this project, issue 17.2 (loop-based solutions)"
IMPORTS = "import math\nimport re\n\nimport torch\nfrom torch import nn\nfrom torch.nn import functional as F"


# ================================================================ loops: Python loops over values

# ---- 01 positional encoding

def positional_encoding(max_len, d_model):
    rows = []
    for p in range(max_len):
        row = []
        for j in range(d_model):
            angle = p / 10000 ** (2 * (j // 2) / d_model)
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        rows.append(row)
    return torch.tensor(rows, dtype=torch.get_default_dtype()).reshape(max_len, d_model)


def offset_rotation(k, d_model, dtype=None, device=None):
    if d_model % 2 == 1:
        raise ValueError(f"offset_rotation needs an even d_model, got {d_model}")
    rows = [[0.0] * d_model for _ in range(d_model)]
    for i in range(0, d_model, 2):
        angle = k / 10000 ** (i / d_model)
        rows[i][i], rows[i][i + 1] = math.cos(angle), math.sin(angle)
        rows[i + 1][i], rows[i + 1][i + 1] = -math.sin(angle), math.cos(angle)
    return torch.tensor(rows, dtype=dtype or torch.get_default_dtype(), device=device)


class TokenAndPositionEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.d_model = d_model
        self.max_len = max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=1 / math.sqrt(d_model))
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)

    def forward(self, tokens):
        T = tokens.shape[-1]
        if T > self.max_len:
            raise ValueError(f"sequence of {T} tokens is longer than max_len={self.max_len}")
        scaled = self.embed(tokens) * math.sqrt(self.d_model)
        positions = []
        for t in range(T):  # one position at a time
            positions.append(scaled[..., t, :] + self.pe[t])
        return torch.stack(positions, dim=-2)


# ---- 02 attention

def attention(Q, K, V):
    d_k = Q.shape[-1]
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    q = Q.expand(*batch, *Q.shape[-2:]).reshape(-1, *Q.shape[-2:])
    k = K.expand(*batch, *K.shape[-2:]).reshape(-1, *K.shape[-2:])
    v = V.expand(*batch, *V.shape[-2:]).reshape(-1, *V.shape[-2:])
    outputs, weights = [], []
    for b in range(q.shape[0]):
        out_rows, weight_rows = [], []
        for i in range(q.shape[1]):
            scores = [(q[b, i] * k[b, j]).sum() / math.sqrt(d_k) for j in range(k.shape[1])]
            top = max(scores)
            exps = [torch.exp(s - top) for s in scores]
            total = sum(exps)
            w = [e / total for e in exps]
            out_rows.append(sum(w_j * v[b, j] for j, w_j in enumerate(w)))
            weight_rows.append(torch.stack(w))
        outputs.append(torch.stack(out_rows))
        weights.append(torch.stack(weight_rows))
    T_q, T_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    return torch.stack(outputs).reshape(*batch, T_q, d_v), torch.stack(weights).reshape(*batch, T_q, T_k)


# ---- 03 masking

def causal_mask(T_q, T_k=None, device=None):
    if T_k is None:
        T_k = T_q
    rows = []
    for i in range(T_q):
        rows.append([j <= i + (T_k - T_q) for j in range(T_k)])
    return torch.tensor(rows, dtype=torch.bool, device=device).reshape(T_q, T_k)


def padding_mask(lengths, T):
    mask = torch.zeros(lengths.shape[0], 1, T, dtype=torch.bool, device=lengths.device)
    for b in range(lengths.shape[0]):
        for t in range(T):
            if t < lengths[b]:
                mask[b, 0, t] = True
    return mask


def masked_attention(Q, K, V, mask=None):
    d_k, T_q, T_k, d_v = Q.shape[-1], Q.shape[-2], K.shape[-2], V.shape[-1]
    if mask is None:
        mask = torch.ones(T_q, T_k, dtype=torch.bool, device=Q.device)
    batch = torch.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2], mask.shape[:-2])
    q = Q.expand(*batch, T_q, d_k).reshape(-1, T_q, d_k)
    k = K.expand(*batch, T_k, d_k).reshape(-1, T_k, d_k)
    v = V.expand(*batch, T_k, d_v).reshape(-1, T_k, d_v)
    m = mask.expand(*batch, T_q, T_k).reshape(-1, T_q, T_k)
    outputs, weights = [], []
    for b in range(q.shape[0]):
        out_rows, weight_rows = [], []
        for i in range(T_q):
            allowed = [j for j in range(T_k) if m[b, i, j]]
            row = [Q.new_zeros(()) for _ in range(T_k)]
            out = V.new_zeros(d_v)
            if allowed:  # a query with no allowed key keeps zeros
                scores = {j: (q[b, i] * k[b, j]).sum() / math.sqrt(d_k) for j in allowed}
                top = max(scores.values())
                exps = {j: torch.exp(s - top) for j, s in scores.items()}
                total = sum(exps.values())
                for j in allowed:
                    row[j] = exps[j] / total
                    out = out + row[j] * v[b, j]
            out_rows.append(out)
            weight_rows.append(torch.stack(row))
        outputs.append(torch.stack(out_rows))
        weights.append(torch.stack(weight_rows))
    return torch.stack(outputs).reshape(*batch, T_q, d_v), torch.stack(weights).reshape(*batch, T_q, T_k)


# ---- 04 attention block

class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if d_model % n_heads != 0:
            raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x_q, x_kv=None, mask=None):
        if x_kv is None:
            x_kv = x_q
        Q, K, V = self.W_q(x_q), self.W_k(x_kv), self.W_v(x_kv)
        heads, weights = [], []
        for h in range(self.n_heads):  # one head at a time, on its own columns
            columns = slice(h * self.d_head, (h + 1) * self.d_head)
            head_mask = mask
            if mask is not None and mask.dim() == 4:
                head_mask = mask[:, h] if mask.shape[1] > 1 else mask[:, 0]
            _, w = masked_attention(Q[..., columns], K[..., columns], V[..., columns], head_mask)
            heads.append(self.dropout(w) @ V[..., columns])
            weights.append(w)
        return self.W_o(torch.cat(heads, dim=-1)), torch.stack(weights, dim=1)


class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        rows = []
        for vector in x.reshape(-1, x.shape[-1]):
            mean = sum(vector) / len(vector)
            variance = sum((value - mean) ** 2 for value in vector) / len(vector)
            rows.append((vector - mean) / torch.sqrt(variance + self.eps) * self.weight + self.bias)
        return torch.stack(rows).reshape(x.shape)


class FeedForward(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        positions = [self.fc2(self.dropout(torch.relu(self.fc1(row)))) for row in x.reshape(-1, x.shape[-1])]
        return torch.stack(positions).reshape(*x.shape[:-1], -1)


class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        sublayers = [(self.norm1, lambda h: self.attn(h, h, mask)[0]), (self.norm2, self.ff)]
        for norm, sublayer in sublayers:
            if self.norm_first:
                x = x + self.dropout(sublayer(norm(x)))
            else:
                x = norm(x + self.dropout(sublayer(x)))
        return x


# ---- 05 the whole architecture

class DecoderOnlyTransformer(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
        self.blocks = nn.ModuleList()
        for _ in range(n_layers):
            self.blocks.append(TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first))
        self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens):
        T = tokens.shape[-1]
        mask = torch.ones(T, T, dtype=torch.bool, device=tokens.device)
        for i in range(T):
            mask[i, i + 1:] = False  # no key after the query
        x = self.dropout(self.embedding(tokens))
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.norm_final(x))


class DecoderBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.norm3 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        sublayers = [(self.norm1, lambda h: self.self_attn(h, h, self_mask)[0]),
                     (self.norm2, lambda h: self.cross_attn(h, memory, memory_mask)[0]),
                     (self.norm3, self.ff)]
        for norm, sublayer in sublayers:
            if self.norm_first:
                x = x + self.dropout(sublayer(norm(x)))
            else:
                x = norm(x + self.dropout(sublayer(x)))
        return x


class EncoderDecoderTransformer(nn.Module):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_encoder_layers, n_decoder_layers,
                 max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.src_embedding = TokenAndPositionEmbedding(src_vocab_size, d_model, max_len)
        self.tgt_embedding = TokenAndPositionEmbedding(tgt_vocab_size, d_model, max_len)
        self.encoder = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                      for _ in range(n_encoder_layers)])
        self.decoder = nn.ModuleList([DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                      for _ in range(n_decoder_layers)])
        self.encoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, tgt_vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, tgt, src_lengths=None):
        B, S = src.shape
        source_mask = None
        if src_lengths is not None:
            source_mask = torch.ones(B, 1, S, dtype=torch.bool, device=src.device)
            for b in range(B):
                for s in range(S):
                    if s >= src_lengths[b]:
                        source_mask[b, 0, s] = False  # padding
        memory = self.dropout(self.src_embedding(src))
        for block in self.encoder:
            memory = block(memory, source_mask)
        memory = self.encoder_norm(memory)
        T = tgt.shape[-1]
        target_mask = torch.zeros(T, T, dtype=torch.bool, device=tgt.device)
        for i in range(T):
            for j in range(i + 1):
                target_mask[i, j] = True
        x = self.dropout(self.tgt_embedding(tgt))
        for block in self.decoder:
            x = block(x, memory, target_mask, source_mask)
        return self.lm_head(self.decoder_norm(x))


def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was_training = model.training
    model.eval()
    max_len = model.embedding.max_len
    rows = [row for row in prompt]  # one sequence at a time
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(torch.stack(rows)[:, -max_len:])[:, -1, :]
            grown = []
            for b, row in enumerate(rows):
                scores = logits[b]
                if temperature == 0:
                    next_token = scores.argmax().reshape(1)
                else:
                    scores = scores / temperature
                    if top_k is not None and top_k < scores.shape[-1]:
                        kth_largest = torch.topk(scores, top_k).values[-1]
                        scores = torch.where(scores < kth_largest, float("-inf"), scores)
                    next_token = torch.multinomial(torch.softmax(scores, dim=-1), 1, generator=generator)
                grown.append(torch.cat([row, next_token]))
            rows = grown
    model.train(was_training)
    return torch.stack(rows)


def forward_with_cache(model, tokens, cache=None):
    """One new position at a time; the cache a list, per layer, of two lists of (B, n_heads, 1, d_head) tensors."""
    T_past = 0 if cache is None else len(cache[0][0])
    if T_past + tokens.shape[1] > model.embedding.max_len:
        raise ValueError(f"{T_past} cached and {tokens.shape[1]} new positions pass max_len={model.embedding.max_len}")
    if cache is None:
        cache = [([], []) for _ in model.blocks]
    d_model = model.embedding.embed.embedding_dim
    outputs = []
    for t in range(tokens.shape[1]):
        x = model.embedding.embed(tokens[:, t:t + 1]) * math.sqrt(d_model) + model.embedding.pe[T_past + t]
        for block, (keys, values) in zip(model.blocks, cache):
            attn = block.attn
            B, n_heads = x.shape[0], attn.n_heads
            h = block.norm1(x) if block.norm_first else x
            split = lambda y: y.reshape(B, 1, n_heads, d_model // n_heads).transpose(1, 2)  # noqa: E731
            q = split(attn.W_q(h))
            keys.append(split(attn.W_k(h)))
            values.append(split(attn.W_v(h)))
            K, V = torch.cat(keys, dim=2), torch.cat(values, dim=2)  # every position so far: this query sees them all
            weights = torch.softmax(q @ K.transpose(-2, -1) / math.sqrt(d_model // n_heads), dim=-1)
            out = attn.W_o((weights @ V).transpose(1, 2).reshape(B, 1, d_model))
            if block.norm_first:
                x = x + out
                x = x + block.ff(block.norm2(x))
            else:
                x = block.norm1(x + out)
                x = block.norm2(x + block.ff(x))
        outputs.append(model.lm_head(model.norm_final(x)))
    return torch.cat(outputs, dim=1), cache


def generate_cached(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    if prompt.shape[1] + max_new_tokens > model.embedding.max_len:
        raise ValueError("the text would pass max_len, and a cache cannot crop: use generate")
    was_training = model.training
    model.eval()
    written, cache, fed = [], None, prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits, cache = forward_with_cache(model, fed, cache)
            logits = logits[:, -1]
            if temperature == 0:
                fed = logits.argmax(dim=-1, keepdim=True)
            else:
                logits = logits / temperature
                if top_k is not None and top_k < logits.shape[-1]:
                    smallest_kept = torch.topk(logits, top_k, dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < smallest_kept, float("-inf"))
                fed = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)
            written.append(fed)
    model.train(was_training)
    return torch.cat([prompt] + written, dim=1)

# ---- 06 reversal

def reversal_batch(batch_size, half_len, vocab_size, generator=None):
    rows = []
    for _ in range(batch_size):
        first = torch.randint(0, vocab_size, (half_len,), generator=generator)
        rows.append(torch.cat([first, first.flip(0)]))
    if not rows:
        return torch.zeros(0, 2 * half_len, dtype=torch.long)
    return torch.stack(rows)


def train_reversal(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    if device is not None:
        model.to(device)
    model.train()
    where = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    for _ in progress(range(steps), "training"):
        batch = reversal_batch(batch_size, half_len, vocab_size).to(where)
        logits = model(batch)
        T = batch.shape[1]
        loss = 0
        for t in range(T - 1):  # every position predicts the next token, each with the same weight
            loss = loss + F.cross_entropy(logits[:, t], batch[:, t + 1])
        loss = loss / (T - 1)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(float(loss))
    return losses


def per_position_accuracy(model, batch):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        logits = model(batch)
    model.train(was_training)
    B, T = batch.shape
    accuracy = []
    for i in range(T - 1):
        correct = 0
        for b in range(B):
            if logits[b, i].argmax() == batch[b, i + 1]:
                correct += 1
        accuracy.append(correct / B)
    return torch.tensor(accuracy, device=batch.device)


# ---- 07 Shakespeare

def tokenize(text):
    tokens = []
    for piece in re.split(r"\b", text):
        if piece:
            tokens.append(piece)
    return tokens


class Vocab:
    UNK = "<unk>"

    def __init__(self, tokens_by_id):
        self.tokens_by_id = []
        self.id_of = {}
        for i, token in enumerate(tokens_by_id):
            self.tokens_by_id.append(token)
            self.id_of[token] = i

    @classmethod
    def build(cls, tokens, min_freq=1):
        counts = {}
        for token in tokens:  # a dict keeps the order of first appearance
            counts[token] = counts.get(token, 0) + 1
        kept = [cls.UNK]
        for token in sorted(counts, key=lambda t: -counts[t]):  # a stable sort: ties keep their order
            if counts[token] >= min_freq and token != cls.UNK:
                kept.append(token)
        return cls(kept)

    def __len__(self):
        count = 0
        for _ in self.tokens_by_id:
            count += 1
        return count

    def encode(self, tokens):
        ids = []
        for token in tokens:
            ids.append(self.id_of[token] if token in self.id_of else 0)
        return ids

    def decode(self, ids):
        tokens = []
        for i in ids:
            tokens.append(self.tokens_by_id[i])
        return tokens


def chunk(ids, seq_len):
    windows = []
    for start in range(0, len(ids) - seq_len + 1, seq_len):
        windows.append(ids[start:start + seq_len])
    if not windows:
        return ids.new_zeros((0, seq_len))
    return torch.stack(windows)


def train_val_split(chunks, val_fraction=0.1):
    n_val = round(val_fraction * len(chunks))
    train, val = [], []
    for i in range(len(chunks)):
        (train if i < len(chunks) - n_val else val).append(chunks[i])
    empty = chunks[:0]
    return (torch.stack(train) if train else empty), (torch.stack(val) if val else empty)


def evaluate(model, chunks, batch_size):
    was_training = model.training
    model.eval()
    where = next(model.parameters()).device
    total, count = 0.0, 0
    with torch.no_grad():
        for first in range(0, len(chunks), batch_size):
            windows = chunks[first:first + batch_size].to(where)
            logits = model(windows[:, :-1])
            for t in range(windows.shape[1] - 1):  # position by position
                total += F.cross_entropy(logits[:, t], windows[:, t + 1], reduction="sum").item()
                count += windows.shape[0]
    model.train(was_training)
    return total / count


def sample(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    where = next(model.parameters()).device
    prompt_ids = torch.tensor([vocab.encode(tokenize(prompt))], dtype=torch.long, device=where)
    written = generate(model, prompt_ids, n_tokens, temperature=temperature, top_k=top_k, generator=generator)
    text = prompt
    for i in range(prompt_ids.shape[1], written.shape[1]):
        text += vocab.decode([written[0, i]])[0]
    return text


def parameter_groups(model, weight_decay):
    matrices, others = [], []
    for parameter in model.parameters():
        if len(parameter.shape) >= 2:
            matrices.append(parameter)
        else:
            others.append(parameter)
    return [{"params": matrices, "weight_decay": weight_decay}, {"params": others, "weight_decay": 0.0}]


def learning_rate(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    if step < warmup_steps:
        rate = 0.0
        for _ in range(step + 1):  # one warmup share per update made
            rate += max_lr / warmup_steps
        return rate
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + 0.5 * (max_lr - min_lr) * (1.0 + math.cos(progress * math.pi))


def train_model(model, train_windows, val_windows, steps, batch_size, max_lr, warmup_steps, weight_decay,
                max_grad_norm=1.0, eval_every=100, eval_windows=200, generator=None):
    where = next(model.parameters()).device
    optimizer = torch.optim.AdamW(parameter_groups(model, weight_decay), lr=max_lr)
    history = {"step": [], "train": [], "eval_step": [], "val": [], "best_step": None, "best_val": float("inf")}
    best = None
    model.train()
    for step in range(steps):
        for group in optimizer.param_groups:  # asked once per group
            group["lr"] = learning_rate(step, max_lr, warmup_steps, steps)
        rows = torch.randint(len(train_windows), (batch_size,), generator=generator)
        batch = train_windows[rows].to(where)
        logits = model(batch[:, :-1])
        losses = [F.cross_entropy(logits[b], batch[b, 1:]) for b in range(batch.shape[0])]  # each window's mean
        loss = sum(losses) / len(losses)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
        optimizer.step()
        history["step"].append(step + 1)
        history["train"].append(loss.item())
        if (step + 1) % eval_every == 0 or step == steps - 1:
            score = evaluate(model, val_windows[:eval_windows], batch_size)
            history["eval_step"].append(step + 1)
            history["val"].append(score)
            if score < history["best_val"]:
                history["best_step"], history["best_val"] = step + 1, score
                best = {}
                for name, value in model.state_dict().items():
                    best[name] = value.clone()
    model.load_state_dict(best)
    return history


# ================================================================ loops_item: sizes and lengths read on the host

# ---- 01 positional encoding

def positional_encoding_by_item(max_len, d_model):
    table = torch.zeros(int(max_len), int(d_model), dtype=torch.float64)
    for p in range(int(max_len)):
        for i in range(0, int(d_model), 2):
            angle = p / 10000 ** (i / d_model)
            table[p, i] = math.sin(angle)
            if i + 1 < d_model:
                table[p, i + 1] = math.cos(angle)
    return table.to(torch.get_default_dtype())


def offset_rotation_by_item(k, d_model, dtype=None, device=None):
    if int(d_model) % 2:
        raise ValueError(f"offset_rotation needs an even d_model, got {d_model}")
    rotation = torch.zeros(int(d_model), int(d_model), dtype=torch.float64)
    for pair in range(int(d_model) // 2):
        angle = torch.tensor(k / 10000 ** (2 * pair / d_model), dtype=torch.float64)
        c, s = angle.cos().item(), angle.sin().item()  # read on the host, written entry by entry
        rotation[2 * pair, 2 * pair], rotation[2 * pair, 2 * pair + 1] = c, s
        rotation[2 * pair + 1, 2 * pair], rotation[2 * pair + 1, 2 * pair + 1] = -s, c
    return rotation.to(dtype=dtype if dtype is not None else torch.get_default_dtype(), device=device)


class TokenAndPositionEmbedding_by_item(nn.Module):
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.d_model = int(d_model)
        self.max_len = int(max_len)
        self.embed = nn.Embedding(vocab_size, d_model)
        with torch.no_grad():
            for row in range(vocab_size):  # one row at a time
                self.embed.weight[row] = torch.randn(d_model) / math.sqrt(d_model)
        self.register_buffer("pe", positional_encoding_by_item(max_len, d_model), persistent=False)

    def forward(self, tokens):
        length = torch.tensor(tokens.shape[-1]).item()
        if length > self.max_len:
            raise ValueError(f"{length} tokens, but max_len is {self.max_len}")
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[:length]


# ---- 02 attention

def attention_by_item(Q, K, V):
    d_k = int(Q.shape[-1])
    scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    rows = [torch.softmax(scores[..., i, :], dim=-1) for i in range(int(scores.shape[-2]))]
    weights = torch.stack(rows, dim=-2)
    return weights @ V, weights


# ---- 03 masking

def causal_mask_by_item(T_q, T_k=None, device=None):
    T_k = int(T_q if T_k is None else T_k)
    mask = torch.zeros(int(T_q), T_k, dtype=torch.bool, device=device)
    for i in range(int(T_q)):
        stop = i + T_k - int(T_q) + 1
        if stop > 0:
            mask[i, :stop] = True
    return mask


def padding_mask_by_item(lengths, T):
    m = torch.zeros(len(lengths.tolist()), 1, int(T), dtype=torch.bool, device=lengths.device)
    for b, n in enumerate(lengths.tolist()):
        m[b, 0, :n] = True
    return m


def masked_attention_by_item(Q, K, V, mask=None):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(int(Q.shape[-1]))
    if mask is None:
        return torch.softmax(scores, dim=-1) @ V, torch.softmax(scores, dim=-1)
    scores, mask = torch.broadcast_tensors(scores, mask)
    T_k = int(scores.shape[-1])
    flat_scores, flat_mask = scores.reshape(-1, T_k), mask.reshape(-1, T_k)
    rows = []
    for r in range(int(flat_scores.shape[0])):
        if int(flat_mask[r].sum().item()) == 0:  # no allowed key: zeros
            rows.append(torch.zeros_like(flat_scores[r]))
        else:
            rows.append(torch.softmax(flat_scores[r].masked_fill(~flat_mask[r], float("-inf")), dim=-1))
    weights = torch.stack(rows).reshape(scores.shape)
    return weights @ V, weights


# ---- 04 attention block

class MultiHeadAttention_by_item(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        if int(d_model) % int(n_heads):
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")
        self.n_heads = int(n_heads)
        self.d_head = int(d_model) // int(n_heads)
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x_q, x_kv=None, mask=None):
        x_kv = x_q if x_kv is None else x_kv
        B, T_q, T_k = int(x_q.shape[0]), int(x_q.shape[1]), int(x_kv.shape[1])
        Q = self.W_q(x_q).reshape(B, T_q, self.n_heads, self.d_head).transpose(1, 2)
        K = self.W_k(x_kv).reshape(B, T_k, self.n_heads, self.d_head).transpose(1, 2)
        V = self.W_v(x_kv).reshape(B, T_k, self.n_heads, self.d_head).transpose(1, 2)
        if mask is not None and mask.dim() <= 3:
            mask = mask.unsqueeze(-3)  # one mask for every head
        _, weights = masked_attention(Q, K, V, mask)
        merged = (self.dropout(weights) @ V).transpose(1, 2).reshape(B, T_q, self.n_heads * self.d_head)
        return self.W_o(merged), weights


class LayerNorm_by_item(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(int(d_model)))
        self.bias = nn.Parameter(torch.zeros(int(d_model)))

    def forward(self, x):
        n = int(x.shape[-1])
        mean = x.sum(dim=-1, keepdim=True) / n
        variance = ((x - mean) ** 2).sum(dim=-1, keepdim=True) / n
        return (x - mean) / (variance + self.eps) ** 0.5 * self.weight + self.bias


class FeedForward_by_item(nn.Module):
    def __init__(self, d_model, d_ff, dropout=0.0):
        super().__init__()
        self.fc1 = nn.Linear(int(d_model), int(d_ff))
        self.fc2 = nn.Linear(int(d_ff), int(d_model))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.fc2(self.dropout(F.relu(self.fc1(x))))


class TransformerBlock_by_item(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm_first = bool(norm_first)
        self.attn = MultiHeadAttention_by_item(d_model, n_heads, dropout)
        self.ff = FeedForward_by_item(d_model, d_ff, dropout)
        self.norm1 = LayerNorm_by_item(d_model)
        self.norm2 = LayerNorm_by_item(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout(self.attn(h, h, mask)[0])
            return x + self.dropout(self.ff(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.attn(x, x, mask)[0]))
        return self.norm2(x + self.dropout(self.ff(x)))


# ---- 05 the whole architecture

class DecoderOnlyTransformer_by_item(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
        self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                     for _ in range(int(n_layers))])
        self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, tokens):
        T = int(tokens.shape[-1])
        mask = causal_mask(T, T, device=tokens.device)
        x = self.dropout(self.embedding(tokens))
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.norm_final(x))


class DecoderBlock_by_item(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.norm_first = bool(norm_first)
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout(self.self_attn(h, h, self_mask)[0])
            x = x + self.dropout(self.cross_attn(self.norm2(x), memory, memory_mask)[0])
            return x + self.dropout(self.ff(self.norm3(x)))
        x = self.norm1(x + self.dropout(self.self_attn(x, x, self_mask)[0]))
        x = self.norm2(x + self.dropout(self.cross_attn(x, memory, memory_mask)[0]))
        return self.norm3(x + self.dropout(self.ff(x)))


class EncoderDecoderTransformer_by_item(nn.Module):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_encoder_layers, n_decoder_layers,
                 max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.src_embedding = TokenAndPositionEmbedding(src_vocab_size, d_model, max_len)
        self.tgt_embedding = TokenAndPositionEmbedding(tgt_vocab_size, d_model, max_len)
        self.encoder = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                      for _ in range(int(n_encoder_layers))])
        self.decoder = nn.ModuleList([DecoderBlock_by_item(d_model, n_heads, d_ff, dropout, norm_first)
                                      for _ in range(int(n_decoder_layers))])
        self.encoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, tgt_vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, tgt, src_lengths=None):
        source_mask = None
        if src_lengths is not None:
            S = int(src.shape[-1])
            source_mask = torch.zeros(len(src_lengths.tolist()), 1, S, dtype=torch.bool, device=src.device)
            for b, n in enumerate(src_lengths.tolist()):
                source_mask[b, 0, :n] = True
        memory = self.dropout(self.src_embedding(src))
        for block in self.encoder:
            memory = block(memory, source_mask)
        memory = self.encoder_norm(memory)
        target_mask = causal_mask(int(tgt.shape[-1]), device=tgt.device)
        x = self.dropout(self.tgt_embedding(tgt))
        for block in self.decoder:
            x = block(x, memory, target_mask, source_mask)
        return self.lm_head(self.decoder_norm(x))


def generate_by_item(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was_training = model.training
    model.eval()
    max_len = int(model.embedding.max_len)
    sequences = prompt.tolist()  # token ids as Python lists, one per row
    with torch.no_grad():
        for _ in range(int(max_new_tokens)):
            context = torch.tensor([s[-max_len:] for s in sequences], dtype=torch.long, device=prompt.device)
            logits = model(context)[:, -1, :]
            if temperature == 0:
                chosen = logits.argmax(dim=-1)
            else:
                logits = logits / temperature
                if top_k is not None and int(top_k) < int(logits.shape[-1]):
                    kth = torch.topk(logits, int(top_k), dim=-1).values[:, -1:]
                    logits = logits.masked_fill(logits < kth, float("-inf"))
                chosen = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)[:, 0]
            for s, token in zip(sequences, chosen.tolist()):
                s.append(int(token))
    model.train(was_training)
    return torch.tensor(sequences, dtype=torch.long, device=prompt.device).reshape(len(sequences), -1)


def forward_with_cache_by_item(model, tokens, cache=None):
    """The cache a dict: the number of positions and, per layer, keys and values (B, n_heads, T, d_head)."""
    B, T_new = int(tokens.shape[0]), int(tokens.shape[1])
    T_past = 0 if cache is None else int(cache["length"])
    T = T_past + T_new
    if T > int(model.embedding.max_len):
        raise ValueError(f"{T} positions pass max_len={int(model.embedding.max_len)}")
    d_model = int(model.embedding.embed.embedding_dim)
    x = model.embedding.embed(tokens) * math.sqrt(d_model) + model.embedding.pe[T_past:T]
    mask = causal_mask(T_new, T, device=tokens.device)
    layers = []
    for i, block in enumerate(model.blocks):
        attn = block.attn
        n_heads = int(attn.n_heads)
        h = block.norm1(x) if block.norm_first else x
        q, k, v = (W(h).reshape(B, T_new, n_heads, d_model // n_heads).transpose(1, 2)
                   for W in (attn.W_q, attn.W_k, attn.W_v))
        if cache is not None:
            k = torch.cat([cache["layers"][i][0], k], dim=2)
            v = torch.cat([cache["layers"][i][1], v], dim=2)
        layers.append((k, v))
        heads, _ = masked_attention(q, k, v, mask)
        out = attn.W_o(heads.transpose(1, 2).reshape(B, T_new, d_model))
        if block.norm_first:
            x = x + out
            x = x + block.ff(block.norm2(x))
        else:
            x = block.norm1(x + out)
            x = block.norm2(x + block.ff(x))
    return model.lm_head(model.norm_final(x)), {"length": T, "layers": layers}


def generate_cached_by_item(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    T0, n = int(prompt.shape[1]), int(max_new_tokens)
    if T0 + n > int(model.embedding.max_len):
        raise ValueError("past max_len: use generate, which crops")
    was_training = model.training
    model.eval()
    tokens, fed, cache = prompt, prompt, None
    with torch.no_grad():
        for _ in range(n):
            logits, cache = forward_with_cache(model, fed, cache)
            last = logits[:, -1, :]
            if float(temperature) == 0.0:
                fed = last.argmax(dim=-1, keepdim=True)
            else:
                last = last / temperature
                if top_k is not None and int(top_k) < int(last.shape[-1]):
                    kth = torch.topk(last, int(top_k), dim=-1).values[:, -1:]
                    last = last.masked_fill(last < kth, float("-inf"))
                fed = torch.multinomial(torch.softmax(last, dim=-1), 1, generator=generator)
            tokens = torch.cat([tokens, fed], dim=1)
    model.train(was_training)
    return tokens

# ---- 06 reversal

def reversal_batch_by_item(batch_size, half_len, vocab_size, generator=None):
    first = torch.randint(0, int(vocab_size), (int(batch_size), int(half_len)), generator=generator)
    rows = [row + row[::-1] for row in first.tolist()]
    return torch.tensor(rows, dtype=torch.long).reshape(int(batch_size), 2 * int(half_len))


def train_reversal_by_item(model, steps, batch_size, half_len, vocab_size, lr, device=None):
    if device is not None:
        model.to(device)
    model.train()
    where = next(model.parameters()).device
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    losses = []
    bar = progress(range(int(steps)), "training")
    for _ in bar:
        batch = reversal_batch(batch_size, half_len, vocab_size).to(where)
        logits = model(batch)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, int(vocab_size)), batch[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}", refresh=False)
    return losses


def per_position_accuracy_by_item(model, batch):
    was_training = model.training
    model.eval()
    with torch.no_grad():
        predicted = model(batch).argmax(dim=-1)
    model.train(was_training)
    B, T = int(batch.shape[0]), int(batch.shape[1])
    counts = [int((predicted[:, i] == batch[:, i + 1]).sum().item()) for i in range(T - 1)]
    return torch.tensor([c / B for c in counts], device=batch.device)


# ---- 07 Shakespeare

def tokenize_by_item(text):
    return [piece for piece in re.split(r"\b", text) if len(piece) > 0]


class Vocab_by_item:
    UNK = "<unk>"

    def __init__(self, tokens_by_id):
        self.tokens_by_id = list(tokens_by_id)
        self.id_of = {token: i for i, token in enumerate(self.tokens_by_id)}

    @classmethod
    def build(cls, tokens, min_freq=1):
        first_seen, counts = {}, {}
        for position, token in enumerate(tokens):
            first_seen.setdefault(token, position)
            counts[token] = counts.get(token, 0) + 1
        order = sorted(counts, key=lambda t: (-counts[t], first_seen[t]))
        return cls([cls.UNK] + [t for t in order if counts[t] >= int(min_freq) and t != cls.UNK])

    def __len__(self):
        return len(self.tokens_by_id)

    def encode(self, tokens):
        return [self.id_of.get(token, 0) for token in tokens]

    def decode(self, ids):
        if isinstance(ids, torch.Tensor):
            ids = ids.tolist()
        return [self.tokens_by_id[int(i)] for i in ids]


def chunk_by_item(ids, seq_len):
    n_windows = int(ids.numel()) // int(seq_len)
    return ids[: n_windows * int(seq_len)].reshape(n_windows, int(seq_len))


def train_val_split_by_item(chunks, val_fraction=0.1):
    n = int(chunks.shape[0])
    boundary = n - int(round(val_fraction * n))
    return chunks[:boundary], chunks[boundary:]


def evaluate_by_item(model, chunks, batch_size):
    was_training = model.training
    model.eval()
    where = next(model.parameters()).device
    nats, tokens = 0.0, 0
    with torch.no_grad():
        for first in range(0, int(chunks.shape[0]), int(batch_size)):
            windows = chunks[first:first + int(batch_size)].to(where)
            logits = model(windows[:, :-1])
            V = int(logits.shape[-1])
            nats += F.cross_entropy(logits.reshape(-1, V), windows[:, 1:].reshape(-1), reduction="sum").item()
            tokens += int(windows[:, 1:].numel())
    model.train(was_training)
    return nats / tokens


def sample_by_item(model, vocab, prompt, n_tokens, temperature=1.0, top_k=None, generator=None):
    where = next(model.parameters()).device
    prompt_ids = vocab.encode(tokenize(prompt))
    written = generate(model, torch.tensor([prompt_ids], device=where), int(n_tokens), temperature=temperature,
                       top_k=top_k, generator=generator)
    return prompt + "".join(vocab.decode(written[0].tolist()[len(prompt_ids):]))


def parameter_groups_by_item(model, weight_decay):
    named = list(model.named_parameters())
    decayed = [p for _, p in named if int(p.dim()) >= 2]
    return [{"params": decayed, "weight_decay": float(weight_decay)},
            {"params": [p for _, p in named if int(p.dim()) < 2], "weight_decay": 0.0}]


def learning_rate_by_item(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    step, warmup_steps, total_steps = int(step), int(warmup_steps), int(total_steps)
    if step < warmup_steps:
        return float(max_lr) * (step + 1) / warmup_steps
    share = torch.tensor((step - warmup_steps) / (total_steps - warmup_steps), dtype=torch.float64)
    return float(min_lr + (max_lr - min_lr) * (1 + torch.cos(math.pi * share)) / 2)


def train_model_by_item(model, train_windows, val_windows, steps, batch_size, max_lr, warmup_steps, weight_decay,
                        max_grad_norm=1.0, eval_every=100, eval_windows=200, generator=None):
    where = next(model.parameters()).device
    optimizer = torch.optim.AdamW(parameter_groups(model, weight_decay), lr=max_lr)
    history = {"step": [], "train": [], "eval_step": [], "val": [], "best_step": None, "best_val": math.inf}
    best = None
    model.train()
    n = int(train_windows.shape[0])
    for step in range(int(steps)):
        rate = learning_rate(step, max_lr, warmup_steps, int(steps))
        for group in optimizer.param_groups:
            group["lr"] = rate
        batch = train_windows[torch.randint(n, (int(batch_size),), generator=generator)].to(where)
        logits = model(batch[:, :-1])
        V = int(logits.shape[-1])
        loss = F.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for group in optimizer.param_groups for p in group["params"]],
                                       max_grad_norm)
        optimizer.step()
        history["step"].append(step + 1)
        history["train"].append(float(loss.item()))
        if (step + 1) % int(eval_every) == 0 or step + 1 == int(steps):
            score = float(evaluate(model, val_windows[:int(eval_windows)], int(batch_size)))
            history["eval_step"].append(step + 1)
            history["val"].append(score)
            if score < history["best_val"]:
                history["best_step"], history["best_val"] = step + 1, score
                best = {name: value.detach().cpu().clone() for name, value in model.state_dict().items()}
    model.load_state_dict(best)
    return history


STUDENTS = {
    "loops": Student(SOURCE, IMPORTS, {
        "positional_encoding": [positional_encoding],
        "offset_rotation": [offset_rotation],
        "token_and_position_embedding": [TokenAndPositionEmbedding],
        "attention": [attention],
        "causal_mask": [causal_mask],
        "padding_mask": [padding_mask],
        "masked_attention": [masked_attention],
        "multi_head_attention": [MultiHeadAttention],
        "layer_norm": [LayerNorm],
        "feed_forward": [FeedForward],
        "transformer_block": [TransformerBlock],
        "decoder_only_transformer": [DecoderOnlyTransformer],
        "decoder_block": [DecoderBlock],
        "encoder_decoder_transformer": [EncoderDecoderTransformer],
        "generate": [generate],
        "forward_with_cache": [forward_with_cache],
        "generate_cached": [generate_cached],
        "reversal_batch": [reversal_batch],
        "train_reversal": [train_reversal],
        "per_position_accuracy": [per_position_accuracy],
        "tokenize": [tokenize],
        "vocab": [Vocab],
        "chunk": [chunk],
        "train_val_split": [train_val_split],
        "evaluate": [evaluate],
        "sample": [sample],
        "parameter_groups": [parameter_groups],
        "learning_rate": [learning_rate],
        "train_model": [train_model],
    }),
    "loops_item": Student(SOURCE, IMPORTS, {
        "positional_encoding": [positional_encoding_by_item],
        "offset_rotation": [offset_rotation_by_item],
        "token_and_position_embedding": [TokenAndPositionEmbedding_by_item],
        "attention": [attention_by_item],
        "causal_mask": [causal_mask_by_item],
        "padding_mask": [padding_mask_by_item],
        "masked_attention": [masked_attention_by_item],
        "multi_head_attention": [MultiHeadAttention_by_item],
        "layer_norm": [LayerNorm_by_item],
        "feed_forward": [FeedForward_by_item],
        "transformer_block": [TransformerBlock_by_item],
        "decoder_only_transformer": [DecoderOnlyTransformer_by_item],
        "decoder_block": [DecoderBlock_by_item],
        "encoder_decoder_transformer": [EncoderDecoderTransformer_by_item],
        "generate": [generate_by_item],
        "forward_with_cache": [forward_with_cache_by_item],
        "generate_cached": [generate_cached_by_item],
        "reversal_batch": [reversal_batch_by_item],
        "train_reversal": [train_reversal_by_item],
        "per_position_accuracy": [per_position_accuracy_by_item],
        "tokenize": [tokenize_by_item],
        "vocab": [Vocab_by_item],
        "chunk": [chunk_by_item],
        "train_val_split": [train_val_split_by_item],
        "evaluate": [evaluate_by_item],
        "sample": [sample_by_item],
        "parameter_groups": [parameter_groups_by_item],
        "learning_rate": [learning_rate_by_item],
        "train_model": [train_model_by_item],
    }, suffix="_by_item"),
}
