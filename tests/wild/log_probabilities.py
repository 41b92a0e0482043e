"""Issue 25.3 and 25.4: models that return log-probabilities, and a softmax forced to float32.

Student `log_probabilities` ends both of notebook 05's models as the Annotated Transformer's `Generator` does,
`log_softmax(proj(x), dim=-1)`: log-probabilities are the logits less one constant per position (the same softmax,
cross-entropy, argmax and samples), so the spec judges logits up to such a constant and every point is earned. Its
`generate` reads them as logits, as any correct generate may. Student `float32_softmax` computes attention's softmax
in float32 whatever its inputs (`softmax(..., dtype=torch.float32)`): a float64 result with float32's precision,
which rightly loses the points of attention. Names used but not defined here (`TokenAndPositionEmbedding`,
`TransformerBlock`, `LayerNorm`, `MultiHeadAttention`, `FeedForward`, `causal_mask`, `padding_mask`,
`DecoderBlock`) are the notebook's own.
"""
import math

import torch
from torch import nn
from torch.nn import functional as F

from tests.wild import Student, mistake

SOURCE = ("harvardnlp/annotated-transformer, the_annotated_transformer.py: `Generator` (log_softmax of the head); "
          "this project, issue 25 (a softmax forced to float32)")
IMPORTS = "import math\n\nimport torch\nfrom torch import nn\nfrom torch.nn import functional as F"


# ---- 05: both models end with the Annotated Transformer's Generator (log-probabilities)

# The head as the Annotated Transformer's `Generator` ("Define standard linear + softmax generation step"):
# log_softmax(proj(x), dim=-1), with proj named lm_head as the exercise asks.
class DecoderOnlyTransformer(nn.Module):
    def __init__(self, vocab_size, d_model, n_heads, d_ff, n_layers, max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.embedding = TokenAndPositionEmbedding(vocab_size, d_model, max_len)  # noqa: F821
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)  # noqa: F821
                                     for _ in range(n_layers)])
        self.norm_final = LayerNorm(d_model) if norm_first else nn.Identity()  # noqa: F821
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, tokens):
        mask = causal_mask(tokens.shape[-1], device=tokens.device)  # noqa: F821
        x = self.dropout(self.embedding(tokens))
        for block in self.blocks:
            x = block(x, mask)
        return F.log_softmax(self.lm_head(self.norm_final(x)), dim=-1)  # log-probabilities


class DecoderBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)  # noqa: F821
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)  # noqa: F821
        self.ff = FeedForward(d_model, d_ff, dropout)  # noqa: F821
        self.norm1, self.norm2, self.norm3 = LayerNorm(d_model), LayerNorm(d_model), LayerNorm(d_model)  # noqa: F821
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


# The same head as DecoderOnlyTransformer's.
class EncoderDecoderTransformer(nn.Module):
    def __init__(self, src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_encoder_layers, n_decoder_layers,
                 max_len, dropout=0.0, norm_first=True):
        super().__init__()
        self.src_embedding = TokenAndPositionEmbedding(src_vocab_size, d_model, max_len)  # noqa: F821
        self.tgt_embedding = TokenAndPositionEmbedding(tgt_vocab_size, d_model, max_len)  # noqa: F821
        self.encoder = nn.ModuleList([TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)  # noqa: F821
                                      for _ in range(n_encoder_layers)])
        self.decoder = nn.ModuleList([DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)
                                      for _ in range(n_decoder_layers)])
        self.encoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()  # noqa: F821
        self.decoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()  # noqa: F821
        self.lm_head = nn.Linear(d_model, tgt_vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, tgt, src_lengths=None):
        src_mask = None if src_lengths is None else padding_mask(src_lengths, src.shape[-1])  # noqa: F821
        memory = self.dropout(self.src_embedding(src))
        for block in self.encoder:
            memory = block(memory, src_mask)
        memory = self.encoder_norm(memory)
        x = self.dropout(self.tgt_embedding(tgt))
        tgt_mask = causal_mask(tgt.shape[-1], device=tgt.device)  # noqa: F821
        for block in self.decoder:
            x = block(x, memory, tgt_mask, src_mask)
        return F.log_softmax(self.lm_head(self.decoder_norm(x)), dim=-1)  # log-probabilities


def generate(model, prompt, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    was_training = model.training
    model.eval()
    tokens = prompt
    with torch.no_grad():
        for _ in range(max_new_tokens):
            scores = model(tokens[:, -model.embedding.max_len:])[:, -1, :]  # logits or log-probabilities alike
            if temperature == 0:
                choice = scores.argmax(dim=-1, keepdim=True)
            else:
                scores = scores / temperature
                if top_k is not None and top_k < scores.shape[-1]:
                    kth = torch.topk(scores, top_k, dim=-1).values[:, -1:]
                    scores = scores.masked_fill(scores < kth, float("-inf"))
                choice = torch.multinomial(F.softmax(scores, dim=-1), 1, generator=generator)
            tokens = torch.cat([tokens, choice], dim=1)
    model.train(was_training)
    return tokens


# ---- 02: a softmax forced to float32

def attention(Q, K, V):
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.shape[-1])
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(Q.dtype)  # "float32 is enough for a softmax"
    return weights @ V, weights


STUDENTS = {
    "log_probabilities": Student(SOURCE, IMPORTS, {
        "decoder_only_transformer": [DecoderOnlyTransformer],
        "decoder_block": [DecoderBlock],
        "encoder_decoder_transformer": [EncoderDecoderTransformer],
        "generate": [generate],
    }),
    "float32_softmax": Student(SOURCE, IMPORTS, {"attention": [attention]}, mistakes={
        "attention": mistake("the softmax runs in float32 for float64 inputs: the weights carry float32's precision "
                             "(about 7 digits), far outside float64's tolerance",
                             "check_attention", "hidden_attention"),
    }),
}
