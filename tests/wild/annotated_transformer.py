"""The Annotated Transformer (Harvard NLP): https://github.com/harvardnlp/annotated-transformer,
the_annotated_transformer.py (2022 version: Rush, Huang, Subramanian, Sulem, Qu, Biderman), MIT licence.

Adapted to the exercise API only where it differs: the course's names (W_q ... W_o, fc1/fc2, norm1/norm2,
weight/bias, lm_head), masks of any rank, leading batch axes, the max_len ValueError, and norm_first (the Annotated
Transformer is pre-norm only). Its own choices stay: `masked_fill(mask == 0, -1e9)`, the unbiased `x.std()` in its
LayerNorm with eps added to the std, the exp/log form of the frequencies, the persistent `pe` buffer, the pre-norm
`SublayerConnection`, the decoder layer's `sublayer` calls.
"""
import copy
import math

import torch
from torch import nn

from tests.wild import Student, mistake

SOURCE = "https://github.com/harvardnlp/annotated-transformer (the_annotated_transformer.py)"
IMPORTS = "import copy\nimport math\n\nimport torch\nfrom torch import nn"


# harvardnlp/annotated-transformer, the_annotated_transformer.py: the table of `PositionalEncoding.__init__`.
def positional_encoding(max_len, d_model):
    pe = torch.zeros(max_len, d_model)
    position = torch.arange(0, max_len).unsqueeze(1)
    div_term = torch.exp(
        torch.arange(0, d_model, 2) * -(math.log(10000.0) / d_model)
    )
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    return pe


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `Embeddings` and `PositionalEncoding` in one
# module (lut -> embed, the max_len ValueError added, any leading batch axes: x.size(-2)).
class TokenAndPositionEmbedding(nn.Module):
    def __init__(self, vocab_size, d_model, max_len):
        super(TokenAndPositionEmbedding, self).__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.d_model = d_model
        self.max_len = max_len
        pe = positional_encoding(max_len, d_model)
        self.register_buffer("pe", pe)

    def forward(self, x):
        if x.size(-1) > self.max_len:
            raise ValueError(f"sequence length {x.size(-1)} is longer than max_len {self.max_len}")
        x = self.embed(x) * math.sqrt(self.d_model)
        x = x + self.pe[: x.size(-2)].requires_grad_(False)
        return x


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `attention` without a mask.
def attention(query, key, value):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `subsequent_mask`, for T_q queries against T_k
# keys (the diagonal moved by T_k - T_q) on `device`.
def causal_mask(T_q, T_k=None, device=None):
    "Mask out subsequent positions."
    T_k = T_q if T_k is None else T_k
    attn_shape = (T_q, T_k)
    subsequent_mask = torch.triu(torch.ones(attn_shape, device=device), diagonal=T_k - T_q + 1).type(
        torch.uint8
    )
    return subsequent_mask == 0


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `Batch.__init__`'s
# `(src != pad).unsqueeze(-2)`, with the pad positions read from the lengths.
def padding_mask(lengths, T):
    src = torch.arange(T, device=lengths.device).unsqueeze(0).expand(len(lengths), T)
    pad = lengths.unsqueeze(-1)
    return (src < pad).unsqueeze(-2)


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `attention` (dropout left out).
def masked_attention(query, key, value, mask=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    return torch.matmul(p_attn, value), p_attn


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `attention`, as `MultiHeadedAttention` calls it.
def scaled_dot_product(query, key, value, mask=None, dropout=None):
    "Compute 'Scaled Dot Product Attention'"
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `MultiHeadedAttention` (its four `linears` named
# W_q, W_k, W_v, W_o; a mask of up to 3 dimensions gets the head axis, a 4-dimensional one is used as it is; the
# weights returned instead of kept in self.attn).
class MultiHeadAttention(nn.Module):
    def __init__(self, d_model, n_heads, dropout=0.0):
        "Take in model size and number of heads."
        super(MultiHeadAttention, self).__init__()
        if d_model % n_heads != 0:
            raise ValueError("d_model must be divisible by n_heads")
        # We assume d_v always equals d_k
        self.d_k = d_model // n_heads
        self.h = n_heads
        self.W_q, self.W_k, self.W_v, self.W_o = [copy.deepcopy(nn.Linear(d_model, d_model)) for _ in range(4)]
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x_q, x_kv=None, mask=None):
        query = x_q
        key = value = x_q if x_kv is None else x_kv
        if mask is not None and mask.dim() <= 3:
            # Same mask applied to all h heads.
            mask = mask.unsqueeze(-3)
        nbatches = query.size(0)

        # 1) Do all the linear projections in batch from d_model => h x d_k
        query, key, value = [
            lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
            for lin, x in zip((self.W_q, self.W_k, self.W_v), (query, key, value))
        ]

        # 2) Apply attention on all the projected vectors in batch.
        x, attn = scaled_dot_product(query, key, value, mask=mask, dropout=self.dropout)

        # 3) "Concat" using a view and apply a final linear.
        x = (
            x.transpose(1, 2)
            .contiguous()
            .view(nbatches, -1, self.h * self.d_k)
        )
        del query
        del key
        del value
        return self.W_o(x), attn


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `LayerNorm` (a_2, b_2 named weight, bias).
class LayerNorm(nn.Module):
    "Construct a layernorm module (See citation for details)."

    def __init__(self, d_model, eps=1e-5):
        super(LayerNorm, self).__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, keepdim=True)
        return self.weight * (x - mean) / (std + self.eps) + self.bias


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `PositionwiseFeedForward` (w_1, w_2 -> fc1, fc2).
class FeedForward(nn.Module):
    "Implements FFN equation."

    def __init__(self, d_model, d_ff, dropout=0.0):
        super(FeedForward, self).__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.fc2(self.dropout(self.fc1(x).relu()))


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `EncoderLayer` with its two
# `SublayerConnection`s as a method (their norms named norm1, norm2; post-norm added for norm_first=False).
class TransformerBlock(nn.Module):
    "Encoder is made up of self-attn and feed forward (defined below)"

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super(TransformerBlock, self).__init__()
        self.attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first
        self.size = d_model

    def sublayer(self, x, norm, sublayer):
        "Apply residual connection to any sublayer with the same size."
        if self.norm_first:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))

    def forward(self, x, mask=None):
        "Follow Figure 1 (left) for connections."
        x = self.sublayer(x, self.norm1, lambda x: self.attn(x, x, mask)[0])
        return self.sublayer(x, self.norm2, self.ff)


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `DecoderLayer` (src_attn -> cross_attn,
# feed_forward -> ff; the three `SublayerConnection`s as a method, post-norm added).
class DecoderBlock(nn.Module):
    "Decoder is made of self-attn, src-attn, and feed forward (defined below)"

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super(DecoderBlock, self).__init__()
        self.size = d_model
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout)
        self.ff = FeedForward(d_model, d_ff, dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.norm3 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def sublayer(self, x, norm, sublayer):
        "Apply residual connection to any sublayer with the same size."
        if self.norm_first:
            return x + self.dropout(sublayer(norm(x)))
        return norm(x + self.dropout(sublayer(x)))

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        "Follow Figure 1 (right) for connections."
        m = memory
        x = self.sublayer(x, self.norm1, lambda x: self.self_attn(x, x, self_mask)[0])
        x = self.sublayer(x, self.norm2, lambda x: self.cross_attn(x, m, memory_mask)[0])
        return self.sublayer(x, self.norm3, self.ff)


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `subsequent_mask`.
def subsequent_mask(size):
    "Mask out subsequent positions."
    attn_shape = (1, size, size)
    subsequent_mask = torch.triu(torch.ones(attn_shape), diagonal=1).type(
        torch.uint8
    )
    return subsequent_mask == 0


# harvardnlp/annotated-transformer, the_annotated_transformer.py: `EncoderDecoder` with `Encoder`, `Decoder` and
# `Generator` folded in (generator.proj -> lm_head, returning logits rather than log_softmax; the source mask from
# lengths as `Batch` makes it from pad tokens; the final norms are Identity for norm_first=False).
class EncoderDecoderTransformer(nn.Module):
    """
    A standard Encoder-Decoder architecture. Base for this and many
    other models.
    """

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_encoder_layers, n_decoder_layers,
                 max_len, dropout=0.0, norm_first=True):
        super(EncoderDecoderTransformer, self).__init__()
        c = copy.deepcopy
        self.src_embedding = TokenAndPositionEmbedding(src_vocab_size, d_model, max_len)
        self.tgt_embedding = TokenAndPositionEmbedding(tgt_vocab_size, d_model, max_len)
        self.encoder = nn.ModuleList(
            [c(TransformerBlock(d_model, n_heads, d_ff, dropout, norm_first)) for _ in range(n_encoder_layers)])
        self.decoder = nn.ModuleList(
            [c(DecoderBlock(d_model, n_heads, d_ff, dropout, norm_first)) for _ in range(n_decoder_layers)])
        self.encoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.decoder_norm = LayerNorm(d_model) if norm_first else nn.Identity()
        self.lm_head = nn.Linear(d_model, tgt_vocab_size)
        self.dropout = nn.Dropout(dropout)

    def forward(self, src, tgt, src_lengths=None):
        "Take in and process masked src and target sequences."
        src_mask = None if src_lengths is None else padding_mask(src_lengths, src.size(-1))
        tgt_mask = subsequent_mask(tgt.size(-1)).to(tgt.device)
        return self.lm_head(self.decode(self.encode(src, src_mask), src_mask, tgt, tgt_mask))

    def encode(self, src, src_mask):
        x = self.dropout(self.src_embedding(src))
        for layer in self.encoder:
            x = layer(x, src_mask)
        return self.encoder_norm(x)

    def decode(self, memory, src_mask, tgt, tgt_mask):
        x = self.dropout(self.tgt_embedding(tgt))
        for layer in self.decoder:
            x = layer(x, memory, tgt_mask, src_mask)
        return self.decoder_norm(x)


_MASKED_ROW = ("masked_fill(mask == 0, -1e9) gives a query with no allowed key uniform weights over the masked "
               "keys, where the API asks for zeros in weights and output")

_DEFAULT_INIT = ("nn.Embedding keeps PyTorch's default initialisation (standard deviation 1); the exercise starts it "
                 "at 1/sqrt(d_model), so that a scaled token vector is not sqrt(2 d_model) times longer than its "
                 "position's")

STUDENTS = {
    "annotated_transformer": Student(SOURCE, IMPORTS, {
        "positional_encoding": [positional_encoding],
        "token_and_position_embedding": [TokenAndPositionEmbedding],
        "attention": [attention],
        "causal_mask": [causal_mask],
        "padding_mask": [padding_mask],
        "masked_attention": [masked_attention],
        "multi_head_attention": [scaled_dot_product, MultiHeadAttention],
        "layer_norm": [LayerNorm],
        "feed_forward": [FeedForward],
        "transformer_block": [TransformerBlock],
        "decoder_block": [DecoderBlock],
        "encoder_decoder_transformer": [subsequent_mask, EncoderDecoderTransformer],
    }, mistakes={
        "token_and_position_embedding": mistake(_DEFAULT_INIT, "check_token_and_position_embedding",
                                                "hidden_token_and_position_embedding"),
        "positional_encoding": mistake("pe[:, 1::2] = cos(position * div_term) cannot take an odd d_model: the "
                                       "cosine columns are one fewer than the frequencies",
                                       "check_positional_encoding", "hidden_positional_encoding"),
        "masked_attention": mistake(_MASKED_ROW, "check_masked_attention", "hidden_masked_attention"),
        "layer_norm": mistake("x.std() is the unbiased standard deviation (divides by d_model - 1) and eps is added "
                              "to the std, outside the square root", "check_layer_norm", "hidden_layer_norm"),
    }),
}
