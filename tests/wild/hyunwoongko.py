"""A community implementation: Hyunwoong Ko's "transformer", https://github.com/hyunwoongko/transformer
(models/embedding/*.py, models/layers/*.py, models/blocks/*.py, models/model/transformer.py), Apache-2.0 licence.

Adapted to the exercise API only where it differs: gamma, beta are weight, bias and eps defaults to the API's
1e-5 (the repository's 1e-12); w_q, w_k, w_v, w_concat are W_q, W_k, W_v, W_o; linear1, linear2 are fc1, fc2;
attention, ffn are attn, ff; `k.size()` and `transpose(2, 3)` take any leading axes; masks of up to 3 dimensions get
the head axis (the repository builds 4-D ones); the attention modules return their weights; pre-norm is added for
norm_first=True with final norms; the embedding has the max_len ValueError; the source mask comes from lengths.
Its own choices stay: the `encoding` table with `requires_grad = False`, the padding_idx=1 token embedding, token
and position embeddings added without the sqrt(d_model) scale, `masked_fill(mask == 0, -10000)`, `nn.Softmax(dim=-1)`,
`var(unbiased=False)`, `split` / `concat`, `torch.tril(...).type(torch.ByteTensor)`.
"""
import math

import torch
from torch import nn

from tests.wild import Student, mistake

SOURCE = "https://github.com/hyunwoongko/transformer (models/)"
IMPORTS = "import math\n\nimport torch\nfrom torch import nn"


# hyunwoongko/transformer, models/embedding/positional_encoding.py: `PositionalEncoding.__init__`'s encoding.
def positional_encoding(max_len, d_model, device=None):
    # same size with input matrix (for adding with input matrix)
    encoding = torch.zeros(max_len, d_model, device=device)
    encoding.requires_grad = False  # we don't need to compute gradient

    pos = torch.arange(0, max_len, device=device)
    pos = pos.float().unsqueeze(dim=1)
    # 1D => 2D unsqueeze to represent word's position

    _2i = torch.arange(0, d_model, step=2, device=device).float()
    # 'i' means index of d_model (e.g. embedding size = 50, 'i' = [0,50])
    # "step=2" means 'i' multiplied with two (same with 2 * i)

    encoding[:, 0::2] = torch.sin(pos / (10000 ** (_2i / d_model)))
    encoding[:, 1::2] = torch.cos(pos / (10000 ** (_2i / d_model)))
    # compute positional encoding to consider positional information of words
    return encoding


# hyunwoongko/transformer, models/embedding/transformer_embedding.py: `TransformerEmbedding` with `TokenEmbedding`
# (nn.Embedding with padding_idx=1) as embed and `PositionalEncoding.forward` (the dropout left out; the max_len
# ValueError added).
class TokenAndPositionEmbedding(nn.Module):
    """
    token embedding + positional encoding (sinusoid)
    positional encoding can give positional information to network
    """

    def __init__(self, vocab_size, d_model, max_len):
        super(TokenAndPositionEmbedding, self).__init__()
        self.embed = nn.Embedding(vocab_size, d_model, padding_idx=1)
        self.register_buffer("encoding", positional_encoding(max_len, d_model), persistent=False)
        self.max_len = max_len

    def forward(self, x):
        seq_len = x.size(-1)
        if seq_len > self.max_len:
            raise ValueError(f"seq_len {seq_len} > max_len {self.max_len}")
        tok_emb = self.embed(x)
        pos_emb = self.encoding[:seq_len, :]
        return tok_emb + pos_emb


# hyunwoongko/transformer, models/layers/scale_dot_product_attention.py: `ScaleDotProductAttention.forward`,
# unmasked.
def attention(q, k, v):
    # 1. dot product Query with Key^T to compute similarity
    d_tensor = k.size(-1)
    k_t = k.transpose(-2, -1)  # transpose
    score = (q @ k_t) / math.sqrt(d_tensor)  # scaled dot product

    # 2. pass them softmax to make [0, 1] range
    score = nn.Softmax(dim=-1)(score)

    # 3. multiply with Value
    v = score @ v

    return v, score


# hyunwoongko/transformer, models/model/transformer.py: `make_trg_mask`'s trg_sub_mask, for T_q queries that are
# the last of T_k positions.
def causal_mask(T_q, T_k=None, device=None):
    T_k = T_q if T_k is None else T_k
    trg_sub_mask = torch.tril(torch.ones(T_q, T_k), diagonal=T_k - T_q).type(torch.ByteTensor).to(device)
    return trg_sub_mask.bool()


# hyunwoongko/transformer, models/model/transformer.py: `make_src_mask`, `(src != self.src_pad_idx).unsqueeze(1)`,
# with the pad positions read from the lengths.
def padding_mask(lengths, T):
    src = torch.arange(T, device=lengths.device).expand(lengths.size(0), T)
    src_mask = (src < lengths.unsqueeze(1)).unsqueeze(1)
    return src_mask


# hyunwoongko/transformer, models/layers/scale_dot_product_attention.py: `ScaleDotProductAttention`.
class ScaleDotProductAttention(nn.Module):
    """
    compute scale dot product attention

    Query : given sentence that we focused on (decoder)
    Key : every sentence to check relationship with Qeury(encoder)
    Value : every sentence same with Key (encoder)
    """

    def __init__(self):
        super(ScaleDotProductAttention, self).__init__()
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, q, k, v, mask=None, e=1e-12):
        # input is 4 dimension tensor
        # [batch_size, head, length, d_tensor]
        d_tensor = k.size(-1)

        # 1. dot product Query with Key^T to compute similarity
        k_t = k.transpose(-2, -1)  # transpose
        score = (q @ k_t) / math.sqrt(d_tensor)  # scaled dot product

        # 2. apply masking (opt)
        if mask is not None:
            score = score.masked_fill(mask == 0, -10000)

        # 3. pass them softmax to make [0, 1] range
        score = self.softmax(score)

        # 4. multiply with Value
        v = score @ v

        return v, score


# hyunwoongko/transformer, models/layers/scale_dot_product_attention.py: `ScaleDotProductAttention.forward`.
def masked_attention(q, k, v, mask=None):
    return ScaleDotProductAttention()(q, k, v, mask)


# hyunwoongko/transformer, models/layers/multi_head_attention.py: `MultiHeadAttention`.
class MultiHeadAttention(nn.Module):

    def __init__(self, d_model, n_heads, dropout=0.0):
        super(MultiHeadAttention, self).__init__()
        if d_model % n_heads != 0:
            raise ValueError("d_model must be divisible by n_heads")
        self.n_heads = n_heads
        self.attention = ScaleDotProductAttention()
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)

    def forward(self, x_q, x_kv=None, mask=None):
        q, k = x_q, x_q if x_kv is None else x_kv
        v = k
        if mask is not None and mask.dim() <= 3:
            mask = mask.unsqueeze(-3)
        # 1. dot product with weight matrices
        q, k, v = self.W_q(q), self.W_k(k), self.W_v(v)

        # 2. split tensor by number of heads
        q, k, v = self.split(q), self.split(k), self.split(v)

        # 3. do scale dot product to compute similarity
        out, attention = self.attention(q, k, v, mask=mask)

        # 4. concat and pass to linear layer
        out = self.concat(out)
        out = self.W_o(out)

        return out, attention

    def split(self, tensor):
        """
        split tensor by number of head

        :param tensor: [batch_size, length, d_model]
        :return: [batch_size, head, length, d_tensor]
        """
        batch_size, length, d_model = tensor.size()

        d_tensor = d_model // self.n_heads
        tensor = tensor.view(batch_size, length, self.n_heads, d_tensor).transpose(1, 2)
        # it is similar with group convolution (split by number of heads)

        return tensor

    def concat(self, tensor):
        """
        inverse function of self.split(tensor : torch.Tensor)

        :param tensor: [batch_size, head, length, d_tensor]
        :return: [batch_size, length, d_model]
        """
        batch_size, head, length, d_tensor = tensor.size()
        d_model = head * d_tensor

        tensor = tensor.transpose(1, 2).contiguous().view(batch_size, length, d_model)
        return tensor


# hyunwoongko/transformer, models/layers/layer_norm.py: `LayerNorm`.
class LayerNorm(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super(LayerNorm, self).__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        # '-1' means last dimension.

        out = (x - mean) / torch.sqrt(var + self.eps)
        out = self.weight * out + self.bias
        return out


# hyunwoongko/transformer, models/layers/position_wise_feed_forward.py: `PositionwiseFeedForward`.
class FeedForward(nn.Module):

    def __init__(self, d_model, d_ff, dropout=0.0):
        super(FeedForward, self).__init__()
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.relu = nn.ReLU()
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, x):
        x = self.fc1(x)
        x = self.relu(x)
        x = self.dropout(x)
        x = self.fc2(x)
        return x


# hyunwoongko/transformer, models/blocks/encoder_layer.py: `EncoderLayer` (pre-norm added).
class TransformerBlock(nn.Module):

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super(TransformerBlock, self).__init__()
        self.attn = MultiHeadAttention(d_model=d_model, n_heads=n_heads)
        self.norm1 = LayerNorm(d_model=d_model)
        self.dropout1 = nn.Dropout(p=dropout)

        self.ff = FeedForward(d_model=d_model, d_ff=d_ff, dropout=dropout)
        self.norm2 = LayerNorm(d_model=d_model)
        self.dropout2 = nn.Dropout(p=dropout)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        src_mask = mask
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout1(self.attn(h, h, mask=src_mask)[0])
            return x + self.dropout2(self.ff(self.norm2(x)))
        # 1. compute self attention
        _x = x
        x = self.attn(x, x, mask=src_mask)[0]

        # 2. add and norm
        x = self.dropout1(x)
        x = self.norm1(x + _x)

        # 3. positionwise feed forward network
        _x = x
        x = self.ff(x)

        # 4. add and norm
        x = self.dropout2(x)
        x = self.norm2(x + _x)
        return x


# hyunwoongko/transformer, models/blocks/decoder_layer.py: `DecoderLayer` (self_attention, enc_dec_attention, ffn
# -> self_attn, cross_attn, ff; pre-norm added).
class DecoderBlock(nn.Module):

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super(DecoderBlock, self).__init__()
        self.self_attn = MultiHeadAttention(d_model=d_model, n_heads=n_heads)
        self.norm1 = LayerNorm(d_model=d_model)
        self.dropout1 = nn.Dropout(p=dropout)

        self.cross_attn = MultiHeadAttention(d_model=d_model, n_heads=n_heads)
        self.norm2 = LayerNorm(d_model=d_model)
        self.dropout2 = nn.Dropout(p=dropout)

        self.ff = FeedForward(d_model=d_model, d_ff=d_ff, dropout=dropout)
        self.norm3 = LayerNorm(d_model=d_model)
        self.dropout3 = nn.Dropout(p=dropout)
        self.norm_first = norm_first

    def forward(self, dec, memory, self_mask=None, memory_mask=None):
        enc, trg_mask, src_mask = memory, self_mask, memory_mask
        if self.norm_first:
            h = self.norm1(dec)
            x = dec + self.dropout1(self.self_attn(h, h, mask=trg_mask)[0])
            x = x + self.dropout2(self.cross_attn(self.norm2(x), enc, mask=src_mask)[0])
            return x + self.dropout3(self.ff(self.norm3(x)))
        # 1. compute self attention
        _x = dec
        x = self.self_attn(dec, dec, mask=trg_mask)[0]

        # 2. add and norm
        x = self.dropout1(x)
        x = self.norm1(x + _x)

        if enc is not None:
            # 3. compute encoder - decoder attention
            _x = x
            x = self.cross_attn(x, enc, mask=src_mask)[0]

            # 4. add and norm
            x = self.dropout2(x)
            x = self.norm2(x + _x)

        # 5. positionwise feed forward network
        _x = x
        x = self.ff(x)

        # 6. add and norm
        x = self.dropout3(x)
        x = self.norm3(x + _x)
        return x


# hyunwoongko/transformer, models/model/transformer.py with models/model/encoder.py and decoder.py: `Transformer`
# (the course's embeddings; src_lengths for src_pad_idx; linear -> lm_head; final norms added for pre-norm).
class EncoderDecoderTransformer(nn.Module):

    def __init__(self, src_vocab_size, tgt_vocab_size, d_model, n_heads, d_ff, n_encoder_layers,
                 n_decoder_layers, max_len, dropout=0.0, norm_first=True):
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
        self.drop_out = nn.Dropout(p=dropout)

    def forward(self, src, tgt, src_lengths=None):
        trg = tgt
        src_mask = self.make_src_mask(src, src_lengths)
        trg_mask = self.make_trg_mask(trg)
        enc_src = self.drop_out(self.src_embedding(src))
        for layer in self.encoder:
            enc_src = layer(enc_src, src_mask)
        enc_src = self.encoder_norm(enc_src)
        trg = self.drop_out(self.tgt_embedding(trg))
        for layer in self.decoder:
            trg = layer(trg, enc_src, trg_mask, src_mask)
        output = self.lm_head(self.decoder_norm(trg))
        return output

    def make_src_mask(self, src, src_lengths):
        if src_lengths is None:
            return None
        return padding_mask(src_lengths, src.shape[1])

    def make_trg_mask(self, trg):
        trg_len = trg.shape[1]
        trg_sub_mask = torch.tril(torch.ones(trg_len, trg_len)).type(torch.ByteTensor).to(trg.device)
        return trg_sub_mask == 1


_MASKED_ROW = ("masked_fill(mask == 0, -10000) gives a query with no allowed key uniform weights over the masked "
               "keys (and lets a masked key through when real scores fall below -10000)")

STUDENTS = {
    "hyunwoongko": Student(SOURCE, IMPORTS, {
        "positional_encoding": [positional_encoding],
        "token_and_position_embedding": [TokenAndPositionEmbedding],
        "attention": [attention],
        "causal_mask": [causal_mask],
        "padding_mask": [padding_mask],
        "masked_attention": [ScaleDotProductAttention, masked_attention],
        "multi_head_attention": [ScaleDotProductAttention, MultiHeadAttention],
        "layer_norm": [LayerNorm],
        "feed_forward": [FeedForward],
        "transformer_block": [TransformerBlock],
        "decoder_block": [DecoderBlock],
        "encoder_decoder_transformer": [EncoderDecoderTransformer],
    }, mistakes={
        "positional_encoding": mistake("encoding[:, 1::2] = cos(...) cannot take an odd d_model",
                                       "check_positional_encoding", "hidden_positional_encoding"),
        "token_and_position_embedding": mistake("TransformerEmbedding adds token and position embeddings without "
                                                "the paper's sqrt(d_model) scale",
                                                "check_token_and_position_embedding",
                                                "hidden_token_and_position_embedding"),
        "masked_attention": mistake(_MASKED_ROW, "check_masked_attention", "hidden_masked_attention"),
    }),
}
