"""A second class for the similarity screen (issue 40), built apart from tests/similarity_corpus.py so that the
screen's scoring is proven on a class it was not tuned on. Deterministic from a seed.

Every exercise of the seven notebooks is written here as steps, each step in two to four ways a student might
write it (loops or tensors, `@` or `matmul`, `masked_fill` or `where`...). An honest student draws one way for every
step, names of their own and a style (comments, blank lines, debug prints), so two honest students meet on a line
or a step now and then, as honest students do, but rarely on a whole cell. Honest students of four kinds:
- `course_*`: the course's own solution (read from the source notebook at run time) with the student's comments;
- `mixed_*`: their own way through every step;
- `printer_*`: the same, with debug prints in every function (long cells in fingerprints, short in what they wrote);
- `idiom_*`: the textbook idiom (the first way of every step, no prints) on every short exercise, their own way on
  the rest.
Two honest students (`tutorial_a`, `tutorial_b`) took one layer from the same public tutorial (`public/
layers_tutorial.py`, passed with --reference): that is attributed to the tutorial, not to the pair.

Eight copiers, each of one honest student, with disguises of this module's own: verbatim, renamed (every local
name gets a new spelling), comments and spacing changed, reordered (methods and helper order), dead code added,
all of these at once, a partial copy (3 exercises copied, the rest their own), and one copied from a public file
(`public/minimal_gpt.py`, passed with --reference).
"""
from __future__ import annotations

import ast
import io
import random
import re
import shutil
import tokenize
from pathlib import Path

import nbformat

from autograder.paths import RELEASE, notebook_path
from autograder.handins.preflight import nbgrader_metadata
from autograder.similarity.collect import solution_code
from course.about import NOTEBOOKS

SOURCE = Path(__file__).resolve().parent.parent / "source"
SLOT, STEP, WAY = "\n====\n", "\n----\n", "\n~~~~\n"

# grade_id -> the code of each `# YOUR CODE HERE` of the stub (SLOT apart), each made of steps (STEP apart), each
# step written in several ways (WAY apart). A step's ways define the same names for the steps after it.
WAYS = {
    "positional_encoding": """
position = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)
~~~~
position = torch.arange(0, max_len).double()[:, None]
~~~~
position = torch.tensor([[float(p)] for p in range(max_len)], dtype=torch.float64)
----
rate = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
~~~~
rate = torch.exp(-math.log(10000.0) * torch.arange(0, d_model, 2).double() / d_model)
~~~~
rate = torch.tensor([10000 ** (-(2 * i) / d_model) for i in range((d_model + 1) // 2)], dtype=torch.float64)
----
table = torch.zeros(max_len, d_model, dtype=torch.float64)
table[:, 0::2] = torch.sin(position * rate)
table[:, 1::2] = torch.cos(position * rate)[:, : d_model // 2]
~~~~
angles = position * rate
table = torch.stack([torch.sin(angles), torch.cos(angles)], dim=-1).flatten(1)[:, :d_model]
~~~~
table = torch.empty(max_len, d_model, dtype=torch.float64)
for column in range(d_model):
    wave = torch.sin if column % 2 == 0 else torch.cos
    table[:, column] = wave(position[:, 0] * rate[column // 2])
----
return table.to(torch.get_default_dtype())
~~~~
return table.float()
""",
    "offset_rotation": """
if d_model % 2:
    raise ValueError(f"offset_rotation needs an even d_model, got {d_model}")
~~~~
if d_model % 2 != 0:
    raise ValueError("d_model must be even: the last sine has no cosine to turn with")
----
freqs = 1.0 / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
theta = k * freqs
~~~~
theta = torch.tensor([k / 10000 ** (2 * i / d_model) for i in range(d_model // 2)], dtype=torch.float64)
~~~~
half = torch.arange(d_model // 2, dtype=torch.float64)
theta = k * torch.pow(10000.0, -2.0 * half / d_model)
----
rotation = torch.zeros(d_model, d_model, dtype=torch.float64)
for i in range(d_model // 2):
    c, s = math.cos(theta[i]), math.sin(theta[i])
    rotation[2 * i, 2 * i], rotation[2 * i, 2 * i + 1] = c, s
    rotation[2 * i + 1, 2 * i], rotation[2 * i + 1, 2 * i + 1] = -s, c
~~~~
blocks = [torch.tensor([[torch.cos(t), torch.sin(t)], [-torch.sin(t), torch.cos(t)]]) for t in theta]
rotation = torch.block_diag(*blocks)
~~~~
rotation = torch.zeros(d_model, d_model, dtype=torch.float64)
even = torch.arange(0, d_model, 2)
rotation[even, even] = torch.cos(theta)
rotation[even + 1, even + 1] = torch.cos(theta)
rotation[even, even + 1] = torch.sin(theta)
rotation[even + 1, even] = -torch.sin(theta)
----
return rotation.to(dtype=dtype or torch.get_default_dtype(), device=device)
~~~~
if dtype is None:
    dtype = torch.get_default_dtype()
return rotation.to(device=device, dtype=dtype)
""",
    "token_and_position_embedding": """
self.embed = nn.Embedding(vocab_size, d_model)
nn.init.normal_(self.embed.weight, mean=0.0, std=d_model ** -0.5)
~~~~
self.embed = nn.Embedding(vocab_size, d_model)
with torch.no_grad():
    self.embed.weight.normal_(0, 1 / math.sqrt(d_model))
~~~~
self.embed = nn.Embedding(vocab_size, d_model)
self.embed.weight.data = torch.randn(vocab_size, d_model) / d_model ** 0.5
----
self.d_model, self.max_len = d_model, max_len
self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)
~~~~
self.scale = math.sqrt(d_model)
self.max_len = max_len
self.register_buffer("table", positional_encoding(max_len, d_model))
====
length = tokens.shape[-1]
if length > self.max_len:
    raise ValueError(f"sequence of {length} tokens is longer than max_len={self.max_len}")
~~~~
T = tokens.size(-1)
if T > self.max_len:
    raise ValueError("the sequence is longer than max_len " + str(self.max_len))
----
return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[:length]
~~~~
return self.embed(tokens) * self.scale + self.table[:T].to(self.embed.weight.dtype)
~~~~
scaled = self.embed(tokens) * math.sqrt(self.d_model)
return scaled + self.pe[:length].to(scaled.dtype)
""",
    "attention": """
d_k = Q.shape[-1]
~~~~
d_k = Q.size(-1)
~~~~
d_k = K.shape[-1]
----
scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
~~~~
scores = torch.matmul(Q, K.transpose(-1, -2)) / d_k ** 0.5
~~~~
scores = torch.einsum("...qd,...kd->...qk", Q, K) / math.sqrt(d_k)
----
weights = torch.softmax(scores, dim=-1)
return weights @ V, weights
~~~~
weights = F.softmax(scores, dim=-1)
output = torch.matmul(weights, V)
return output, weights
""",
    "causal_mask": """
if T_k is None:
    T_k = T_q
~~~~
T_k = T_q if T_k is None else T_k
----
return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril(diagonal=T_k - T_q)
~~~~
rows = torch.arange(T_q, device=device).unsqueeze(1)
cols = torch.arange(T_k, device=device).unsqueeze(0)
return cols <= rows + (T_k - T_q)
~~~~
mask = torch.zeros(T_q, T_k, dtype=torch.bool, device=device)
for i in range(T_q):
    for j in range(T_k):
        mask[i, j] = j <= i + T_k - T_q
return mask
""",
    "padding_mask": """
positions = torch.arange(T, device=lengths.device)
return (positions[None, :] < lengths[:, None]).unsqueeze(1)
~~~~
return (torch.arange(T, device=lengths.device).expand(len(lengths), T) < lengths.unsqueeze(-1))[:, None, :]
~~~~
mask = torch.zeros(lengths.shape[0], 1, T, dtype=torch.bool, device=lengths.device)
for b, n in enumerate(lengths.tolist()):
    mask[b, 0, :n] = True
return mask
""",
    "masked_attention": """
d_k = Q.shape[-1]
scores = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
~~~~
scores = torch.matmul(Q, K.transpose(-1, -2)) / math.sqrt(K.size(-1))
----
if mask is not None:
    scores = scores.masked_fill(~mask, float("-inf"))
~~~~
if mask is not None:
    scores = torch.where(mask, scores, torch.full_like(scores, -1e9))
----
weights = torch.softmax(scores, dim=-1)
weights = torch.nan_to_num(weights, nan=0.0)
~~~~
weights = F.softmax(scores, dim=-1)
if mask is not None:
    weights = weights * mask
    weights = torch.where(weights.isnan(), torch.zeros_like(weights), weights)
----
return weights @ V, weights
~~~~
out = torch.matmul(weights, V)
return out, weights
""",
    "multi_head_attention": """
if d_model % n_heads != 0:
    raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}")
~~~~
if d_model % n_heads:
    raise ValueError("n_heads must divide d_model")
----
self.n_heads, self.d_head = n_heads, d_model // n_heads
~~~~
self.n_heads = n_heads
self.d_k = d_model // n_heads
----
self.W_q = nn.Linear(d_model, d_model)
self.W_k = nn.Linear(d_model, d_model)
self.W_v = nn.Linear(d_model, d_model)
self.W_o = nn.Linear(d_model, d_model)
~~~~
for name in ("W_q", "W_k", "W_v", "W_o"):
    setattr(self, name, nn.Linear(d_model, d_model, bias=True))
----
self.dropout = nn.Dropout(dropout)
~~~~
self.drop = nn.Dropout(p=dropout)
====
if x_kv is None:
    x_kv = x_q
~~~~
x_kv = x_q if x_kv is None else x_kv
----
B, T_q, D = x_q.shape
T_k = x_kv.shape[1]
~~~~
batch, T_q, width = x_q.size()
T_k = x_kv.size(1)
----
def split(x, length):
    return x.view(x.shape[0], length, self.n_heads, -1).transpose(1, 2)
~~~~
def split(x, length):
    return x.reshape(x.size(0), length, self.n_heads, -1).permute(0, 2, 1, 3)
----
q, k, v = split(self.W_q(x_q), T_q), split(self.W_k(x_kv), T_k), split(self.W_v(x_kv), T_k)
~~~~
q = split(self.W_q(x_q), T_q)
k = split(self.W_k(x_kv), T_k)
v = split(self.W_v(x_kv), T_k)
----
if mask is not None and mask.dim() <= 3:
    mask = mask.unsqueeze(-3)
~~~~
if mask is not None:
    while mask.dim() < 4:
        mask = mask.unsqueeze(0) if mask.dim() < 3 else mask.unsqueeze(1)
----
out, weights = masked_attention(q, k, v, mask)
out = out.transpose(1, 2).reshape(x_q.shape[0], T_q, -1)
return self.W_o(out), weights
~~~~
heads, weights = masked_attention(q, k, v, mask=mask)
merged = heads.permute(0, 2, 1, 3).contiguous().view(x_q.size(0), T_q, -1)
return self.W_o(merged), weights
""",
    "layer_norm": """
self.eps = eps
~~~~
self.eps = float(eps)
----
self.weight = nn.Parameter(torch.ones(d_model))
self.bias = nn.Parameter(torch.zeros(d_model))
~~~~
self.weight = nn.Parameter(torch.ones(d_model), requires_grad=True)
self.bias = nn.Parameter(torch.zeros(d_model), requires_grad=True)
====
mean = x.mean(dim=-1, keepdim=True)
var = x.var(dim=-1, keepdim=True, unbiased=False)
~~~~
mean = x.mean(-1, keepdim=True)
var = ((x - mean) ** 2).mean(-1, keepdim=True)
~~~~
var, mean = torch.var_mean(x, dim=-1, unbiased=False, keepdim=True)
----
return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
~~~~
normed = (x - mean) * torch.rsqrt(var + self.eps)
return normed * self.weight + self.bias
""",
    "feed_forward": """
self.fc1 = nn.Linear(d_model, d_ff)
self.fc2 = nn.Linear(d_ff, d_model)
~~~~
self.fc1, self.fc2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)
----
self.dropout = nn.Dropout(dropout)
~~~~
self.dropout = nn.Dropout(p=dropout)
====
return self.fc2(self.dropout(torch.relu(self.fc1(x))))
~~~~
hidden = F.relu(self.fc1(x))
hidden = self.dropout(hidden)
return self.fc2(hidden)
""",
    "transformer_block": """
self.norm_first = norm_first
~~~~
self.norm_first = bool(norm_first)
----
self.attn = MultiHeadAttention(d_model, n_heads, dropout)
self.ff = FeedForward(d_model, d_ff, dropout)
~~~~
self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
self.ff = FeedForward(d_model, d_ff, dropout=dropout)
----
self.norm1 = LayerNorm(d_model)
self.norm2 = LayerNorm(d_model)
~~~~
self.norm1, self.norm2 = LayerNorm(d_model), LayerNorm(d_model)
----
self.dropout1 = nn.Dropout(dropout)
self.dropout2 = nn.Dropout(dropout)
~~~~
self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)
====
if self.norm_first:
    h = self.norm1(x)
    x = x + self.dropout1(self.attn(h, h, mask)[0])
    x = x + self.dropout2(self.ff(self.norm2(x)))
else:
    x = self.norm1(x + self.dropout1(self.attn(x, x, mask)[0]))
    x = self.norm2(x + self.dropout2(self.ff(x)))
return x
~~~~
def attend(y):
    return self.dropout1(self.attn(y, mask=mask)[0])
if self.norm_first:
    x = x + attend(self.norm1(x))
    return x + self.dropout2(self.ff(self.norm2(x)))
x = self.norm1(x + attend(x))
return self.norm2(x + self.dropout2(self.ff(x)))
""",
    "decoder_only_transformer": """
self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
~~~~
self.max_len = max_len
self.embedding = TokenAndPositionEmbedding(vocab_size=vocab_size, d_model=d_model, max_len=max_len)
----
self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first) for _ in range(n_layers)])
~~~~
self.blocks = nn.ModuleList()
for _ in range(n_layers):
    self.blocks.append(TransformerBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first))
----
self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
self.lm_head = nn.Linear(d_model, vocab_size)
~~~~
if norm_first:
    self.norm_final = LayerNorm(d_model)
else:
    self.norm_final = nn.Identity()
self.lm_head = nn.Linear(d_model, vocab_size)
====
T = tokens.shape[-1]
mask = causal_mask(T, device=tokens.device)
~~~~
mask = causal_mask(tokens.size(1), device=tokens.device)
----
h = self.embedding(tokens)
for block in self.blocks:
    h = block(h, mask)
return self.lm_head(self.norm_final(h))
~~~~
x = self.embedding(tokens)
for i in range(len(self.blocks)):
    x = self.blocks[i](x, mask=mask)
x = self.norm_final(x)
return self.lm_head(x)
""",
    "decoder_block": """
self.norm_first = norm_first
~~~~
self.norm_first = norm_first
----
self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
self.ff = FeedForward(d_model, d_ff, dropout)
~~~~
self.self_attn, self.cross_attn = (MultiHeadAttention(d_model, n_heads, dropout=dropout) for _ in range(2))
self.ff = FeedForward(d_model, d_ff, dropout=dropout)
----
self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)
~~~~
self.norm1 = LayerNorm(d_model)
self.norm2 = LayerNorm(d_model)
self.norm3 = LayerNorm(d_model)
====
if self.norm_first:
    h = self.norm1(x)
    x = x + self.self_attn(h, h, self_mask)[0]
    x = x + self.cross_attn(self.norm2(x), memory, memory_mask)[0]
    return x + self.ff(self.norm3(x))
x = self.norm1(x + self.self_attn(x, x, self_mask)[0])
x = self.norm2(x + self.cross_attn(x, memory, memory_mask)[0])
return self.norm3(x + self.ff(x))
~~~~
steps = [
    (self.norm1, lambda y: self.self_attn(y, mask=self_mask)[0]),
    (self.norm2, lambda y: self.cross_attn(y, memory, mask=memory_mask)[0]),
    (self.norm3, self.ff),
]
for norm, layer in steps:
    x = x + layer(norm(x)) if self.norm_first else norm(x + layer(x))
return x
""",
    "encoder_decoder_transformer": """
self.src_embedding = TokenAndPositionEmbedding(src_vocab_size, d_model, max_len)
self.tgt_embedding = TokenAndPositionEmbedding(tgt_vocab_size, d_model, max_len)
~~~~
self.src_embedding = TokenAndPositionEmbedding(src_vocab_size, d_model, max_len=max_len)
self.tgt_embedding = TokenAndPositionEmbedding(tgt_vocab_size, d_model, max_len=max_len)
----
self.encoder = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                              for _ in range(n_encoder_layers)])
self.decoder = nn.ModuleList([DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                              for _ in range(n_decoder_layers)])
~~~~
self.encoder = nn.ModuleList(TransformerBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
                             for _ in range(n_encoder_layers))
self.decoder = nn.ModuleList(DecoderBlock(d_model, n_heads, d_ff, dropout=dropout, norm_first=norm_first)
                             for _ in range(n_decoder_layers))
----
make_norm = (lambda: LayerNorm(d_model)) if norm_first else nn.Identity
self.encoder_norm, self.decoder_norm = make_norm(), make_norm()
self.lm_head = nn.Linear(d_model, tgt_vocab_size)
~~~~
self.encoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
self.decoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
self.lm_head = nn.Linear(d_model, tgt_vocab_size)
====
S, T = src.shape[1], tgt.shape[1]
if src_lengths is None:
    src_lengths = torch.full((src.shape[0],), S, device=src.device)
~~~~
S = src.size(-1)
T = tgt.size(-1)
if src_lengths is None:
    src_lengths = torch.tensor([S] * src.size(0), device=src.device)
----
pad = padding_mask(src_lengths, S)
memory = self.src_embedding(src)
for layer in self.encoder:
    memory = layer(memory, pad)
memory = self.encoder_norm(memory)
~~~~
source_mask = padding_mask(src_lengths.to(src.device), S)
memory = self.src_embedding(src)
for i, block in enumerate(self.encoder):
    memory = block(memory, mask=source_mask)
memory = self.encoder_norm(memory)
----
y = self.tgt_embedding(tgt)
look_ahead = causal_mask(T, device=tgt.device)
for layer in self.decoder:
    y = layer(y, memory, look_ahead, pad)
return self.lm_head(self.decoder_norm(y))
~~~~
out = self.tgt_embedding(tgt)
for block in self.decoder:
    out = block(out, memory, self_mask=causal_mask(T, device=tgt.device), memory_mask=source_mask)
out = self.decoder_norm(out)
return self.lm_head(out)
""",
    "generate": """
max_len = model.embedding.max_len
tokens = prompt
~~~~
limit = model.max_len if hasattr(model, "max_len") else model.embedding.max_len
tokens = prompt.clone()
----
was_training = model.training
model.eval()
~~~~
model.eval()
----
with torch.no_grad():
    for _ in range(max_new_tokens):
        logits = model(tokens[:, -max_len:])[:, -1, :]
        if temperature == 0:
            nxt = logits.argmax(dim=-1, keepdim=True)
        else:
            logits = logits / temperature
            if top_k is not None:
                kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            nxt = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)
        tokens = torch.cat([tokens, nxt], dim=1)
~~~~
for step in range(max_new_tokens):
    with torch.no_grad():
        last = model(tokens[:, -limit:])[:, -1]
    if temperature == 0:
        choice = torch.argmax(last, dim=-1).unsqueeze(-1)
    else:
        scaled = last / temperature
        if top_k:
            values, _ = scaled.topk(top_k, dim=-1)
            scaled = torch.where(scaled < values[:, -1:], torch.full_like(scaled, -float("inf")), scaled)
        probs = F.softmax(scaled, dim=-1)
        choice = torch.multinomial(probs, num_samples=1, generator=generator)
    tokens = torch.cat((tokens, choice), dim=-1)
----
model.train(was_training)
return tokens
~~~~
return tokens
""",
    "reversal_batch": """
first = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
return torch.cat([first, first.flip(1)], dim=1)
~~~~
first = torch.randint(vocab_size, size=(batch_size, half_len), generator=generator)
return torch.cat((first, torch.flip(first, dims=[1])), dim=-1)
~~~~
first = torch.randint(0, vocab_size, (batch_size, half_len), generator=generator)
second = torch.stack([first[:, half_len - 1 - i] for i in range(half_len)], dim=1)
return torch.cat([first, second], dim=1)
""",
    "train_reversal": """
device = device or next(model.parameters()).device
model.to(device)
~~~~
if device is None:
    device = next(model.parameters()).device
model = model.to(device)
----
optimizer = torch.optim.Adam(model.parameters(), lr=lr)
losses = []
model.train()
~~~~
opt = torch.optim.Adam(params=model.parameters(), lr=lr)
history: list[float] = []
model.train(True)
----
for _ in progress(range(steps)):
    batch = reversal_batch(batch_size, half_len, vocab_size).to(device)
    logits = model(batch[:, :-1])
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    losses.append(loss.item())
return losses
~~~~
for step in progress(range(steps), desc="reversal"):
    seq = reversal_batch(batch_size, half_len, vocab_size).to(device)
    inputs, targets = seq[:, :-1], seq[:, 1:]
    out = model(inputs)
    loss = F.cross_entropy(out.transpose(1, 2), targets)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    history.append(float(loss))
return history
""",
    "per_position_accuracy": """
with torch.no_grad():
    predictions = model(batch[:, :-1]).argmax(dim=-1)
return (predictions == batch[:, 1:]).float().mean(dim=0)
~~~~
model.eval()
with torch.no_grad():
    logits = model(batch[:, :-1])
correct = logits.argmax(-1).eq(batch[:, 1:])
return correct.to(torch.float32).mean(0)
~~~~
with torch.no_grad():
    guess = torch.argmax(model(batch[:, :-1]), dim=-1)
hits = torch.zeros(batch.shape[1] - 1, device=batch.device)
for i in range(batch.shape[1] - 1):
    hits[i] = (guess[:, i] == batch[:, i + 1]).float().mean()
return hits
""",
    "tokenize": """
return [piece for piece in re.split(r"\\b", text) if piece]
~~~~
return list(filter(None, re.split(r"\\b", text)))
~~~~
pieces = []
for piece in re.split(r"\\b", text):
    if piece != "":
        pieces.append(piece)
return pieces
""",
    "vocab": """
self.tokens_by_id = list(tokens_by_id)
self.id_of = {token: i for i, token in enumerate(self.tokens_by_id)}
~~~~
self.itos = list(tokens_by_id)
self.stoi = dict(zip(self.itos, range(len(self.itos))))
====
counts = Counter(tokens)
kept = [t for t, n in counts.most_common() if n >= min_freq and t != cls.UNK]
return cls([cls.UNK] + kept)
~~~~
counts = {}
for token in tokens:
    counts[token] = counts.get(token, 0) + 1
order = sorted(counts, key=lambda t: -counts[t])
return cls([cls.UNK] + [t for t in order if counts[t] >= min_freq and t != cls.UNK])
====
return len(self.tokens_by_id)
~~~~
return len(self.itos)
====
return [self.id_of.get(token, 0) for token in tokens]
~~~~
return [self.stoi[t] if t in self.stoi else 0 for t in tokens]
====
return [self.tokens_by_id[int(i)] for i in ids]
~~~~
return [self.itos[int(i)] for i in list(ids)]
""",
    "chunk": """
n = len(ids) // seq_len
return ids[: n * seq_len].view(n, seq_len)
~~~~
n = ids.numel() // seq_len
return ids[: n * seq_len].reshape(n, seq_len)
~~~~
rows = [ids[i * seq_len:(i + 1) * seq_len] for i in range(len(ids) // seq_len)]
return torch.stack(rows) if rows else ids.new_empty((0, seq_len))
""",
    "train_val_split": """
n_val = round(val_fraction * len(chunks))
return chunks[: len(chunks) - n_val], chunks[len(chunks) - n_val:]
~~~~
n_val = int(round(len(chunks) * val_fraction))
cut = chunks.shape[0] - n_val
return chunks[:cut], chunks[cut:]
""",
    "evaluate": """
device = next(model.parameters()).device
was_training = model.training
model.eval()
~~~~
device = next(iter(model.parameters())).device
model.eval()
----
total, count = 0.0, 0
with torch.no_grad():
    for start in range(0, len(chunks), batch_size):
        batch = chunks[start:start + batch_size].to(device)
        logits = model(batch[:, :-1])
        total += F.cross_entropy(logits.reshape(-1, logits.size(-1)), batch[:, 1:].reshape(-1),
                                 reduction="sum").item()
        count += batch[:, 1:].numel()
~~~~
losses, tokens = [], 0
for part in torch.split(chunks, batch_size):
    part = part.to(device)
    with torch.no_grad():
        out = model(part[:, :-1])
    losses.append(F.cross_entropy(out.transpose(1, 2), part[:, 1:], reduction="sum").item())
    tokens += part[:, 1:].numel()
total, count = sum(losses), tokens
----
model.train(was_training)
return total / count
~~~~
return total / max(count, 1)
""",
    "sample": """
ids = torch.tensor([vocab.encode(tokenize(prompt))])
~~~~
prompt_ids = vocab.encode(tokenize(prompt))
ids = torch.tensor(prompt_ids, dtype=torch.long).unsqueeze(0)
----
ids = ids.to(next(model.parameters()).device)
out = generate(model, ids, n_tokens, temperature=temperature, top_k=top_k, generator=generator)
~~~~
device = next(model.parameters()).device
out = generate(model, ids.to(device), max_new_tokens=n_tokens, temperature=temperature, top_k=top_k,
               generator=generator)
----
return "".join(vocab.decode(out[0].tolist()))
~~~~
words = vocab.decode(out[0])
return "".join(words)
""",
}
# The exercises short enough that most students write the same few lines (the idiom students' first ways).
SHORT_EXERCISES = ["attention", "causal_mask", "padding_mask", "chunk", "train_val_split", "tokenize",
                   "reversal_batch", "per_position_accuracy", "feed_forward", "layer_norm"]

COMMENTS = ["# work it out step by step", "# as in the lecture", "# shapes checked by hand", "# TODO tidy up",
            "# this took a while", "# batch first everywhere", "# follows the formula in the notebook"]
PRINTS = ['print("debug", {name})', 'print(f"{name} =", {name})', 'print("shape:", getattr({name}, "shape", {name}))']

# A student's habits: each student has some of them, everywhere they write (so two honest students who chose the
# same way of a step still part on its details, as real students do).
HABITS = [
    (r"\bdim=(-?\d)(?=[,)])", r"\1"),
    (r"\.shape\[(-?\d+)\]", r".size(\1)"),
    (r"\btorch\.softmax\(", "F.softmax("),
    (r"\btorch\.relu\(", "F.relu("),
    (r'float\("-inf"\)', "-math.inf"),
    (r"\.transpose\((-2, -1|-1, -2)\)", ".mT"),
    (r"\[:, -1, :\]", "[:, -1]"),
    (r"\bis not None\b", "!= None"),
    (r"nn\.Linear\((\w+), (\w+)\)", r"nn.Linear(in_features=\1, out_features=\2)"),
    (r"nn\.Dropout\((\w+)\)", r"nn.Dropout(p=\1)"),
    (r"^(\s*)return (\w[^,\n]*), (\w+)$", r"\1return (\2, \3)"),
    (r"^(\s*)(\w+) = \2 \+ ", r"\1\2 += "),
    (r"\btorch\.cat\(", "torch.concat("),
    (r"with torch\.no_grad\(\):", "with torch.inference_mode():"),
    (r"\.reshape\(", ".view("),
    (r"\brange\(0, ([^,()]+)\)", r"range(\1)"),
    (r"\.float\(\)", ".to(torch.float32)"),
    (r"\.unsqueeze\(0\)", "[None]"),
    (r"\b2 \* (\w+)", r"\1 * 2"),
    (r"\btorch\.tensor\(", "torch.as_tensor("),
    (r"\bif (\w+) is None:", r"if \1 == None:"),
    (r"\.to\(device\)", ".to(device=device)"),
    (r"\btorch\.long\b", "torch.int64"),
    (r"\btorch\.float64\b", "torch.double"),
    (r"\bF\.cross_entropy\(", "nn.functional.cross_entropy("),
    (r"\bnn\.ModuleList\(", "torch.nn.ModuleList("),
    (r"\bLayerNorm\(d_model\)", "LayerNorm(d_model, eps=1e-5)"),
    (r"\b1\.0 / ", "1 / "),
    (r"\.size\(0\)", ".shape[0]"),
    (r"\bmath\.(sin|cos)\(([^()]*)\)", r"torch.\1(torch.as_tensor(\2))"),
    (r"\bnext\(model\.parameters\(\)\)", "list(model.parameters())[0]"),
    (r"\bfor (\w+) in range\(([^()]*)\):", r"for \1 in list(range(\2)):"),
    (r", keepdim=True\)", ", keepdim=True).clone()"),
]


def habits_of(rng: random.Random) -> list[tuple[str, str]]:
    """About half of `HABITS`, drawn for one student."""
    return [habit for habit in HABITS if rng.random() < 0.5]


def with_habits(code: str, habits: list[tuple[str, str]]) -> str:
    for pattern, replacement in habits:
        code = re.sub(pattern, replacement, code, flags=re.M)
    return code


# One layer of a public tutorial, and a small public GPT: the reference files of this class.
TUTORIAL_LAYER = ("layer_norm", """
self.eps = eps
self.weight = nn.Parameter(torch.ones(d_model))
self.bias = nn.Parameter(torch.zeros(d_model))
self.normalized_shape = (d_model,)
====
centred = x - x.mean(dim=-1, keepdim=True)
spread = centred.pow(2).mean(dim=-1, keepdim=True).add(self.eps).sqrt()
scaled = centred.div(spread)
return scaled.mul(self.weight).add(self.bias)
""")
MINIMAL_GPT = {
    "multi_head_attention": """
assert d_model % n_heads == 0 or (_ for _ in ()).throw(ValueError("heads must divide the width"))
self.n_head = n_heads
self.W_q, self.W_k, self.W_v = (nn.Linear(d_model, d_model) for _ in range(3))
self.W_o = nn.Linear(d_model, d_model)
self.attn_dropout = nn.Dropout(dropout)
====
src = x_q if x_kv is None else x_kv
nb, nq, nc = x_q.size()
nk = src.size(1)
hs = nc // self.n_head
qh = self.W_q(x_q).view(nb, nq, self.n_head, hs).transpose(1, 2)
kh = self.W_k(src).view(nb, nk, self.n_head, hs).transpose(1, 2)
vh = self.W_v(src).view(nb, nk, self.n_head, hs).transpose(1, 2)
att = (qh @ kh.transpose(-2, -1)) * (1.0 / math.sqrt(kh.size(-1)))
if mask is not None:
    full = mask if mask.dim() == 4 else mask.unsqueeze(-3)
    att = att.masked_fill(full == 0, float("-inf"))
att = F.softmax(att, dim=-1).nan_to_num(0.0)
y = self.attn_dropout(att) @ vh
y = y.transpose(1, 2).contiguous().view(nb, nq, nc)
return self.W_o(y), att
""",
    "feed_forward": """
self.fc1 = nn.Linear(d_model, d_ff)
self.gelu_free = nn.ReLU()
self.fc2 = nn.Linear(d_ff, d_model)
self.resid_dropout = nn.Dropout(dropout)
====
return self.resid_dropout(self.fc2(self.gelu_free(self.fc1(x))))
""",
    "transformer_block": """
self.ln_first = norm_first
self.attn = MultiHeadAttention(d_model, n_heads, dropout)
self.ff = FeedForward(d_model, d_ff, dropout)
self.norm1 = LayerNorm(d_model)
self.norm2 = LayerNorm(d_model)
====
if self.ln_first:
    a = self.norm1(x)
    x = x + self.attn(a, a, mask)[0]
    x = x + self.ff(self.norm2(x))
    return x
x = self.norm1(x + self.attn(x, x, mask)[0])
x = self.norm2(x + self.ff(x))
return x
""",
    "decoder_only_transformer": """
self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)
self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)
                             for _ in range(n_layers)])
self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()
self.lm_head = nn.Linear(d_model, vocab_size, bias=True)
self.block_size = max_len
====
b, t = tokens.size()
assert t <= self.block_size, f"Cannot forward sequence of length {t}, block size is only {self.block_size}"
causal = causal_mask(t, device=tokens.device)
x = self.embedding(tokens)
for block in self.blocks:
    x = block(x, causal)
x = self.norm_final(x)
logits = self.lm_head(x)
return logits
""",
    "generate": """
block_size = model.embedding.max_len
idx = prompt
for _ in range(max_new_tokens):
    idx_cond = idx if idx.size(1) <= block_size else idx[:, -block_size:]
    with torch.no_grad():
        logits = model(idx_cond)
    logits = logits[:, -1, :]
    if temperature == 0:
        idx_next = torch.argmax(logits, dim=-1, keepdim=True)
    else:
        logits = logits / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        idx_next = torch.multinomial(probs, num_samples=1, generator=generator)
    idx = torch.cat((idx, idx_next), dim=1)
return idx
""",
}
CLASS_NAMES = {"layer_norm": "LayerNorm", "multi_head_attention": "MultiHeadAttention",
               "feed_forward": "FeedForward", "transformer_block": "TransformerBlock",
               "decoder_only_transformer": "DecoderOnlyTransformer"}


def stubs() -> dict[str, tuple[str, str]]:
    """grade_id -> (assignment, the release notebook's stub of the solution cell), for the exercises this class
    writes (WAYS): the exercises added after it (issue 60's training loop and cache) keep their stubs, as released."""
    found = {}
    for assignment in NOTEBOOKS:
        notebook = nbformat.read(notebook_path(RELEASE, assignment), as_version=4)
        found.update({g: (assignment, code) for g, code in solution_code(notebook).items() if g in WAYS})
    return found


def fill(stub: str, bodies: list[str]) -> str:
    """The stub with each `# YOUR CODE HERE` / `raise NotImplementedError()` replaced by the next body, indented."""
    pattern = re.compile(r"^([ \t]*)# YOUR CODE HERE\n[ \t]*raise NotImplementedError\(\)", re.M)
    parts = iter(bodies)

    def body(match: re.Match) -> str:
        indent = match.group(1)
        return "\n".join(indent + line if line.strip() else "" for line in next(parts).strip("\n").split("\n"))
    return pattern.sub(body, stub)


def _assigned_name(step: str) -> str | None:
    found = re.match(r"\s*([A-Za-z_]\w*)\s*(?:,\s*\w+\s*)*=[^=]", step.split("\n")[-1])
    return found.group(1) if found and not step.split("\n")[-1].startswith(" ") else None


def _balanced(line: str) -> bool:
    """The line opens as many brackets as it closes (it is a whole statement)."""
    return sum(line.count(c) for c in "([{") == sum(line.count(c) for c in ")]}")


def in_own_words(step: str, rng: random.Random, chance: float = 0.35) -> str:
    """`step` with some of its lines written the student's own way: an assignment annotated or its value in
    brackets, a returned value named first. Two honest students who chose the same way of a step still differ
    here and there, as two people writing the same idea do."""
    out = []
    for line in step.split("\n"):
        indent = line[:len(line) - len(line.lstrip())]
        assignment = re.match(r"^(\s*)([A-Za-z_][\w.]*) = (.+[^:,(\[{\\])$", line)
        returned = re.match(r"^(\s*)return (.+[^:,(\[{\\])$", line)
        if not _balanced(line):
            pass
        elif assignment and rng.random() < chance:
            _, name, value = assignment.groups()
            line = rng.choice([f"{indent}{name}: torch.Tensor = {value}", f"{indent}{name} = ({value})"])
        elif returned and rng.random() < chance and "," not in returned.group(2):
            out.append(f"{indent}result = {returned.group(2)}")
            line = f"{indent}return result"
        out.append(line)
    return "\n".join(out)


def written(grade_id: str, rng: random.Random, style: dict, first_ways: bool = False) -> list[str]:
    """The bodies of one student's answer to `grade_id`: one way of every step, in the student's style."""
    bodies = []
    for slot in WAYS[grade_id].strip("\n").split(SLOT):
        lines = []
        for step in slot.split(STEP):
            ways = step.split(WAY)
            chosen = ways[0] if first_ways else in_own_words(rng.choice(ways), rng)
            if style.get("comments") and rng.random() < 0.5:
                lines.append(rng.choice(COMMENTS))
            lines.append(chosen)
            name = _assigned_name(chosen)
            if style.get("prints") and name:
                lines.append(rng.choice(PRINTS).format(name=name))
            if style.get("blank") and rng.random() < 0.4:
                lines.append("")
        bodies.append("\n".join(lines))
    return bodies


def course_solutions() -> dict[str, str]:
    """grade_id -> the course's own solution cell (the source notebook's, nbgrader's markers removed)."""
    found = {}
    for assignment in NOTEBOOKS:
        notebook = nbformat.read(notebook_path(SOURCE, assignment), as_version=4)
        for grade_id, code in solution_code(notebook).items():
            found[grade_id] = "\n".join(line for line in code.split("\n") if "### BEGIN SOLUTION" not in line
                                        and "### END SOLUTION" not in line)
    return found


def public_files() -> dict[str, str]:
    """file name -> the code of the public files an instructor passes with --reference."""
    all_stubs = stubs()
    tutorial = fill(all_stubs[TUTORIAL_LAYER[0]][1], TUTORIAL_LAYER[1].strip("\n").split(SLOT))
    gpt = "\n\n\n".join(fill(all_stubs[g][1], code.strip("\n").split(SLOT)) for g, code in MINIMAL_GPT.items())
    header = "import math\n\nimport torch\nfrom torch import nn\nfrom torch.nn import functional as F\n\n\n"
    return {"layers_tutorial.py": header + tutorial + "\n", "minimal_gpt.py": header + gpt + "\n"}


def honest_class(seed: int) -> dict[str, dict[str, str]]:
    """student -> grade_id -> code of the 24 honest students (and the two who share the tutorial's layer)."""
    rng = random.Random(seed)
    all_stubs = stubs()
    course = course_solutions()
    students: dict[str, dict[str, str]] = {}
    kinds = [("course", 1), ("mixed", 12), ("printer", 4), ("idiom", 5), ("tutorial", 2)]
    for kind, count in kinds:
        for number in range(count):
            name = f"{kind}_{'ab'[number]}" if kind == "tutorial" else f"{kind}_{number + 1:02d}"
            style = {"comments": rng.random() < 0.5, "blank": rng.random() < 0.5, "prints": kind == "printer"}
            habits = habits_of(rng)
            cells = {}
            for grade_id, (_, stub) in all_stubs.items():
                if kind == "course":
                    cells[grade_id] = _commented(course[grade_id], rng)
                    continue
                idiom = kind == "idiom" and grade_id in SHORT_EXERCISES
                code = fill(stub, written(grade_id, rng, {} if idiom else style, first_ways=idiom))
                cells[grade_id] = code if idiom else with_habits(code, habits)
            if kind == "tutorial":
                cells[TUTORIAL_LAYER[0]] = fill(all_stubs[TUTORIAL_LAYER[0]][1],
                                                TUTORIAL_LAYER[1].strip("\n").split(SLOT))
            students[name] = cells
    return students


def _commented(code: str, rng: random.Random) -> str:
    """`code` with a comment of the student's own above a few of its lines."""
    lines = code.split("\n")
    out = []
    for line in lines:
        if line.strip() and not line.strip().startswith(("def ", "class ", "@", '"""')) and rng.random() < 0.15:
            out.append(line[:len(line) - len(line.lstrip())] + rng.choice(COMMENTS))
        out.append(line)
    return "\n".join(out)


# ---- the disguises of this corpus's copiers


def _names_assigned(code: str) -> set[str]:
    tree = ast.parse(code)
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names - {"self"}


def respelled(code: str) -> str:
    """Every local name spelled anew (`scores` -> `scoresVal`), attributes and keyword arguments kept."""
    names = _names_assigned(code)
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    lines = code.split("\n")
    depth, level = [], 0
    for token in tokens:
        level += token.string in ("(", "[", "{") and token.type == tokenize.OP
        level -= token.string in (")", "]", "}") and token.type == tokenize.OP
        depth.append(level)
    for i in reversed(range(len(tokens))):
        token = tokens[i]
        if token.type != tokenize.NAME or token.string not in names or (i and tokens[i - 1].string == "."):
            continue
        if i + 1 < len(tokens) and tokens[i + 1].string == "=" and depth[i] > 0:
            continue
        row, start = token.start
        line = lines[row - 1]
        lines[row - 1] = line[:start] + token.string + "Val" + line[token.end[1]:]
    return "\n".join(lines)


def restyled(code: str) -> str:
    """Comments dropped or replaced, a blank line after every statement block, spaces inside brackets."""
    out = []
    for line in code.split("\n"):
        stripped = line.strip()
        if stripped.startswith("#"):
            out.append(line.replace(stripped, "# (my note)"))
            continue
        if not stripped.startswith(('"""', "def ", "class ", "@")):
            line = line.replace("(", "( ").replace(")", " )").replace("[", "[ ").replace("]", " ]")
        out.append(line)
        if stripped.startswith("return"):
            out.append("")
    return "\n".join(out)


def methods_swapped(code: str) -> str:
    """A class's methods in the other order; a function's independent first two statements swapped."""
    tree = ast.parse(code)
    lines = code.split("\n")
    node = tree.body[-1]
    methods = [m for m in node.body if isinstance(m, ast.FunctionDef)] if isinstance(node, ast.ClassDef) else []
    if len(methods) >= 2:
        spans = [(m.lineno - 1, m.end_lineno) for m in methods]
        pieces = [lines[a:b] for a, b in spans]
        head = lines[:spans[0][0]]
        rest = lines[spans[-1][1]:]
        swapped = [piece + [""] for piece in reversed(pieces)]
        return "\n".join(head + [line for piece in swapped for line in piece] + rest)
    return code


SPARE_HELPER = "\n\n\ndef _spare(items):\n    kept = [i for i in items if i]\n    return len(kept)\n"


def padded(code: str, dead: str = "_checked = isinstance(None, object)", helper: str = SPARE_HELPER) -> str:
    """A dead statement at the top of every function body and an unused helper at the end (each copier its own:
    the same dead code in two copies would be a passage those two share)."""
    tree = ast.parse(code)
    lines = code.split("\n")
    inserts = []
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        body = function.body
        first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            else body[0]
        inserts.append((first.lineno - 1, "\n".join(" " * first.col_offset + part for part in dead.split("\n"))))
    for at, line in sorted(inserts, reverse=True):
        lines.insert(at, line)
    return "\n".join(lines) + helper


def methods_rotated(code: str) -> str:
    """A class's first method moved to its end."""
    tree = ast.parse(code)
    lines = code.split("\n")
    node = tree.body[-1]
    methods = [m for m in node.body if isinstance(m, ast.FunctionDef)] if isinstance(node, ast.ClassDef) else []
    if len(methods) < 2:
        return code
    first, last = methods[0], methods[-1]
    moved = lines[first.lineno - 1:first.end_lineno]
    return "\n".join(lines[:first.lineno - 1] + lines[first.end_lineno:last.end_lineno] + [""] + moved
                     + lines[last.end_lineno:])


def all_disguises(code: str) -> str:
    return padded(methods_rotated(restyled(respelled(code))), "if not True:\n    raise SystemExit",
                  "\n\n\nclass _Later:\n    note = 'kept'\n")


# copier -> (honest student copied, disguise, the exercises copied: None for all)
COPIERS = {
    "copy_verbatim": ("mixed_01", None, None),
    "copy_respelled": ("mixed_02", respelled, None),
    "copy_restyled": ("printer_01", restyled, None),
    "copy_swapped": ("mixed_03", methods_swapped, None),
    "copy_padded": ("course_01", padded, None),
    "copy_all_disguises": ("mixed_04", all_disguises, None),
    "copy_partial": ("mixed_05", respelled, ("masked_attention", "multi_head_attention", "evaluate")),
}
PUBLIC_COPIER = "copy_of_minimal_gpt"  # its own answers, and minimal_gpt.py's for the exercises the file covers


def build_class(root: Path, seed: int) -> dict[str, str]:
    """The class of `seed` handed in under `root` (which gets the release notebooks); returns copier -> the
    student copied (the public copier is absent: its original is a reference file)."""
    if not (root / "release").exists():
        shutil.copytree(RELEASE, root / "release")
    honest = honest_class(seed)
    for student, cells in honest.items():
        write_hand_in(root, student, cells)
    rng = random.Random(seed + 1)
    all_stubs = stubs()
    for copier, (original, disguise, exercises) in COPIERS.items():
        cells = {}
        for grade_id, code in honest[original].items():
            if exercises is None or grade_id in exercises:
                cells[grade_id] = disguise(code) if disguise else code
            else:
                cells[grade_id] = with_habits(fill(all_stubs[grade_id][1], written(grade_id, rng, {"comments": True})),
                                              habits_of(rng))
        write_hand_in(root, copier, cells)
    habits = habits_of(rng)
    own = {g: with_habits(fill(stub, written(g, rng, {"blank": True})), habits) for g, (_, stub) in all_stubs.items()}
    own.update({g: restyled(fill(all_stubs[g][1], code.strip("\n").split(SLOT))) for g, code in MINIMAL_GPT.items()})
    write_hand_in(root, PUBLIC_COPIER, own)
    return {copier: original for copier, (original, _, _) in COPIERS.items()}


def write_hand_in(root: Path, student: str, cells: dict[str, str]) -> None:
    """The release notebooks with the solution cells `cells` covers filled in, handed in as `student`."""
    for assignment in NOTEBOOKS:
        notebook = nbformat.read(notebook_path(root / "release", assignment), as_version=4)
        filled = False
        for cell in notebook.cells:
            grade_id = nbgrader_metadata(cell).get("grade_id")
            if cell.cell_type == "code" and nbgrader_metadata(cell).get("solution") and grade_id in cells:
                cell.source, filled = cells[grade_id], True
        if filled:
            target = notebook_path(root / "submitted" / student, assignment)
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, target)


def write_references(folder: Path) -> Path:
    """The public files as an instructor keeps them, in `folder/public/`."""
    public = folder / "public"
    public.mkdir(parents=True, exist_ok=True)
    for name, code in public_files().items():
        (public / name).write_text(code)
    return public


def is_copy_pair(first: str, second: str, copies: dict[str, str]) -> bool:
    """One of the two copied the other."""
    return copies.get(first) == second or copies.get(second) == first


def is_copied_from(student: str, reference: str) -> bool:
    """The student handed in a public file's code for more than one exercise."""
    return student == PUBLIC_COPIER and reference == "public/minimal_gpt.py"
