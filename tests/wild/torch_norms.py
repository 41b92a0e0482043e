"""Issue 25.2: blocks built from torch's own `nn.LayerNorm` with another epsilon (1e-12, as in
https://github.com/hyunwoongko/transformer's LayerNorm), the wiring exact. A composite exercise is graded on how it
joins its parts, so both blocks must earn every point: the TransformerBlock of 04 did, while 05's DecoderBlock saw
"all checks passed" and then scored 0/1 and 0/2 (its hidden test ran the student's own norms). Names used but not
defined in the cell (`masked_attention`) are the notebook's own; 04's MultiHeadAttention and FeedForward are the loop
solutions of tests/wild/loops.py (a block built on the stubs would be "not written yet").
"""
import torch
from torch import nn

from tests.wild import Student
from tests.wild.loops import FeedForward, MultiHeadAttention  # 04's parts, so that its blocks are not built on stubs

SOURCE = "this project, issue 25.2 (torch's nn.LayerNorm with eps=1e-12 in the blocks)"
IMPORTS = "import torch\nfrom torch import nn"


# torch's nn.LayerNorm with eps=1e-12 for norm1 and norm2; post-norm or pre-norm as the exercise says.
class TransformerBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-12)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-12)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout(self.attn(h, h, mask)[0])
            return x + self.dropout(self.ff(self.norm2(x)))
        x = self.norm1(x + self.dropout(self.attn(x, x, mask)[0]))
        return self.norm2(x + self.dropout(self.ff(x)))


# torch's nn.LayerNorm with eps=1e-12 for norm1, norm2 and norm3: the case of issue 25.2.
class DecoderBlock(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super().__init__()
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-12)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-12)
        self.norm3 = nn.LayerNorm(d_model, eps=1e-12)
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


STUDENTS = {
    "torch_norms": Student(SOURCE, IMPORTS, {
        "multi_head_attention": [MultiHeadAttention],
        "feed_forward": [FeedForward],
        "transformer_block": [TransformerBlock],
        "decoder_block": [DecoderBlock],
    }),
}
