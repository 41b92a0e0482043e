"""A community implementation: Yu-Hsiang Huang's "attention-is-all-you-need-pytorch",
https://github.com/jadore801120/attention-is-all-you-need-pytorch (transformer/Models.py, transformer/SubLayers.py,
transformer/Modules.py, transformer/Layers.py), MIT licence.

Adapted to the exercise API only where it differs: its MultiHeadAttention and PositionwiseFeedForward carry their
own residual connection and nn.LayerNorm, which move out into the blocks (as norm1, norm2, norm3; pre-norm added);
w_qs, w_ks, w_vs, fc are W_q, W_k, W_v, W_o with a bias (the repository has none) and d_k = d_v = d_model //
n_heads; w_1, w_2 are fc1, fc2; slf_attn, enc_attn, pos_ffn are self_attn, cross_attn, ff; `transpose(2, 3)` takes
any leading axes; a mask of up to 3 dimensions gets the head axis (`mask.unsqueeze(1)` in the repository, for 3-D
masks); the position table is 2-D; the embedding's `scale_emb` is on (the paper's sqrt(d_model)) and it has the
max_len ValueError; the pad mask comes from lengths. Its own choices stay: numpy's sinusoid table built with a list
comprehension (`2 * (hid_j // 2) / d_hid`, which takes an odd d_model), `torch.FloatTensor`, q / temperature before
the matmul, `masked_fill(mask == 0, -1e9)`, `1 - torch.triu(...)`.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from tests.wild import Student, mistake

SOURCE = "https://github.com/jadore801120/attention-is-all-you-need-pytorch (transformer/)"
IMPORTS = "import numpy as np\nimport torch\nimport torch.nn as nn\nimport torch.nn.functional as F"


# jadore801120/attention-is-all-you-need-pytorch, transformer/Models.py:
# `PositionalEncoding._get_sinusoid_encoding_table` (2-D: without the unsqueeze(0)).
def positional_encoding(max_len, d_model):
    n_position, d_hid = max_len, d_model
    ''' Sinusoid position encoding table '''
    # TODO: make it with torch instead of numpy

    def get_position_angle_vec(position):
        return [position / np.power(10000, 2 * (hid_j // 2) / d_hid) for hid_j in range(d_hid)]

    sinusoid_table = np.array([get_position_angle_vec(pos_i) for pos_i in range(n_position)])
    sinusoid_table[:, 0::2] = np.sin(sinusoid_table[:, 0::2])  # dim 2i
    sinusoid_table[:, 1::2] = np.cos(sinusoid_table[:, 1::2])  # dim 2i+1

    return torch.FloatTensor(sinusoid_table).reshape(n_position, d_hid)


# jadore801120/attention-is-all-you-need-pytorch, transformer/Models.py: `Encoder.forward`'s src_word_emb, scale_emb
# and position_enc with `PositionalEncoding` (its pos_table buffer 2-D; the max_len ValueError and the stub's
# self.max_len added).
class TokenAndPositionEmbedding(nn.Module):

    def __init__(self, vocab_size, d_model, max_len):
        n_src_vocab, n_position = vocab_size, max_len
        super(TokenAndPositionEmbedding, self).__init__()
        self.embed = nn.Embedding(n_src_vocab, d_model)
        self.d_model = d_model
        self.n_position = n_position
        self.max_len = max_len  # the exercise's stub line, kept
        # Not a parameter
        self.register_buffer('pos_table', positional_encoding(n_position, d_model))

    def forward(self, src_seq):
        if src_seq.size(-1) > self.n_position:
            raise ValueError(f"{src_seq.size(-1)} positions, the table has {self.n_position}")
        enc_output = self.embed(src_seq)
        enc_output = enc_output * self.d_model ** 0.5
        return enc_output + self.pos_table[:src_seq.size(-1)].clone().detach()


# jadore801120/attention-is-all-you-need-pytorch, transformer/Modules.py: `ScaledDotProductAttention`
# (transpose(-2, -1) for transpose(2, 3)).
class ScaledDotProductAttention(nn.Module):
    ''' Scaled Dot-Product Attention '''

    def __init__(self, temperature, attn_dropout=0.0):
        super().__init__()
        self.temperature = temperature
        self.dropout = nn.Dropout(attn_dropout)

    def forward(self, q, k, v, mask=None):

        attn = torch.matmul(q / self.temperature, k.transpose(-2, -1))

        if mask is not None:
            attn = attn.masked_fill(mask == 0, -1e9)

        attn = self.dropout(F.softmax(attn, dim=-1))
        output = torch.matmul(attn, v)

        return output, attn


# jadore801120/attention-is-all-you-need-pytorch, transformer/Modules.py: `ScaledDotProductAttention` with the
# temperature d_k ** 0.5 that `MultiHeadAttention` gives it.
def attention(q, k, v):
    return ScaledDotProductAttention(temperature=q.size(-1) ** 0.5)(q, k, v)


# jadore801120/attention-is-all-you-need-pytorch, transformer/Modules.py: the same, with its mask.
def masked_attention(q, k, v, mask=None):
    return ScaledDotProductAttention(temperature=q.size(-1) ** 0.5)(q, k, v, mask=mask)


# jadore801120/attention-is-all-you-need-pytorch, transformer/Models.py: `get_subsequent_mask`, for T_q queries
# that are the last of T_k positions.
def causal_mask(T_q, T_k=None, device=None):
    ''' For masking out the subsequent info. '''
    len_k = T_q if T_k is None else T_k
    subsequent_mask = (1 - torch.triu(
        torch.ones((T_q, len_k), device=device), diagonal=len_k - T_q + 1)).bool()
    return subsequent_mask


# jadore801120/attention-is-all-you-need-pytorch, transformer/Models.py: `get_pad_mask`, `(seq !=
# pad_idx).unsqueeze(-2)`, with the pad positions read from the lengths.
def padding_mask(lengths, T):
    seq = torch.arange(T, device=lengths.device).repeat(len(lengths), 1)
    return (seq < lengths[:, None]).unsqueeze(-2)


# jadore801120/attention-is-all-you-need-pytorch, transformer/SubLayers.py: `MultiHeadAttention` (the residual and
# layer_norm moved out to the blocks; w_qs, w_ks, w_vs, fc -> W_q, W_k, W_v, W_o with a bias; the mask's head axis
# for masks of up to 3 dimensions).
class MultiHeadAttention(nn.Module):
    ''' Multi-Head Attention module '''

    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__()
        n_head = n_heads
        if d_model % n_head:
            raise ValueError("d_model must be a multiple of n_head")
        d_k = d_v = d_model // n_head

        self.n_head = n_head
        self.d_k = d_k
        self.d_v = d_v

        self.W_q = nn.Linear(d_model, n_head * d_k)
        self.W_k = nn.Linear(d_model, n_head * d_k)
        self.W_v = nn.Linear(d_model, n_head * d_v)
        self.W_o = nn.Linear(n_head * d_v, d_model)

        self.attention = ScaledDotProductAttention(temperature=d_k ** 0.5, attn_dropout=dropout)

    def forward(self, x_q, x_kv=None, mask=None):
        q, k = x_q, x_q if x_kv is None else x_kv
        v = k

        d_k, d_v, n_head = self.d_k, self.d_v, self.n_head
        sz_b, len_q, len_k, len_v = q.size(0), q.size(1), k.size(1), v.size(1)

        # Pass through the pre-attention projection: b x lq x (n*dv)
        # Separate different heads: b x lq x n x dv
        q = self.W_q(q).view(sz_b, len_q, n_head, d_k)
        k = self.W_k(k).view(sz_b, len_k, n_head, d_k)
        v = self.W_v(v).view(sz_b, len_v, n_head, d_v)

        # Transpose for attention dot product: b x n x lq x dv
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

        if mask is not None and mask.dim() <= 3:
            mask = mask.unsqueeze(-3)   # For head axis broadcasting.

        q, attn = self.attention(q, k, v, mask=mask)

        # Transpose to move the head dimension back: b x lq x n x dv
        # Combine the last two dimensions to concatenate all the heads together: b x lq x (n*dv)
        q = q.transpose(1, 2).contiguous().view(sz_b, len_q, -1)
        q = self.W_o(q)
        return q, attn


# jadore801120/attention-is-all-you-need-pytorch, transformer/SubLayers.py: `PositionwiseFeedForward` (w_1, w_2 ->
# fc1, fc2; the residual and layer_norm moved out to the blocks).
class FeedForward(nn.Module):
    ''' A two-feed-forward-layer module '''

    def __init__(self, d_model, d_ff, dropout=0.0):
        d_in, d_hid = d_model, d_ff
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hid)  # position-wise
        self.fc2 = nn.Linear(d_hid, d_in)  # position-wise
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.fc2(F.relu(self.fc1(x)))
        x = self.dropout(x)
        return x


# jadore801120/attention-is-all-you-need-pytorch, transformer/Layers.py: `EncoderLayer` with the sublayers'
# residuals and nn.LayerNorm(eps=1e-6)s as norm1, norm2 (eps 1e-5 as the API's LayerNorm; pre-norm added).
class TransformerBlock(nn.Module):
    ''' Compose with two layers '''

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=False):
        super(TransformerBlock, self).__init__()
        self.attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = nn.LayerNorm(d_model, eps=1e-5)
        self.norm2 = nn.LayerNorm(d_model, eps=1e-5)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, mask=None):
        enc_input, slf_attn_mask = x, mask
        if self.norm_first:
            h = self.norm1(enc_input)
            enc_output = enc_input + self.dropout(self.attn(h, h, mask=slf_attn_mask)[0])
            return enc_output + self.ff(self.norm2(enc_output))
        residual = enc_input
        enc_output, enc_slf_attn = self.attn(enc_input, enc_input, mask=slf_attn_mask)
        enc_output = self.norm1(self.dropout(enc_output) + residual)
        residual = enc_output
        enc_output = self.norm2(self.ff(enc_output) + residual)
        return enc_output


# jadore801120/attention-is-all-you-need-pytorch, transformer/Layers.py: `DecoderLayer` (slf_attn, enc_attn,
# pos_ffn -> self_attn, cross_attn, ff; the sublayers' residuals and LayerNorms as norm1, norm2, norm3; pre-norm
# added).
class DecoderBlock(nn.Module):
    ''' Compose with three layers '''

    def __init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=True):
        super(DecoderBlock, self).__init__()
        self.self_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.cross_attn = MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ff = FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.norm3 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)
        self.norm_first = norm_first

    def forward(self, x, memory, self_mask=None, memory_mask=None):
        dec_input, enc_output, slf_attn_mask, dec_enc_attn_mask = x, memory, self_mask, memory_mask
        if self.norm_first:
            h = self.norm1(dec_input)
            dec_output = dec_input + self.dropout(self.self_attn(h, h, mask=slf_attn_mask)[0])
            h = self.norm2(dec_output)
            dec_output = dec_output + self.dropout(self.cross_attn(h, enc_output, mask=dec_enc_attn_mask)[0])
            return dec_output + self.ff(self.norm3(dec_output))
        dec_output, dec_slf_attn = self.self_attn(dec_input, dec_input, mask=slf_attn_mask)
        dec_output = self.norm1(self.dropout(dec_output) + dec_input)
        residual = dec_output
        dec_output, dec_enc_attn = self.cross_attn(dec_output, enc_output, mask=dec_enc_attn_mask)
        dec_output = self.norm2(self.dropout(dec_output) + residual)
        residual = dec_output
        dec_output = self.norm3(self.ff(dec_output) + residual)
        return dec_output


_DEFAULT_INIT = ("nn.Embedding keeps PyTorch's default initialisation (standard deviation 1); the exercise starts it "
                 "at 1/sqrt(d_model), so that a scaled token vector is not sqrt(2 d_model) times longer than its "
                 "position's")

STUDENTS = {
    "jadore801120": Student(SOURCE, IMPORTS, {
        "positional_encoding": [positional_encoding],
        "token_and_position_embedding": [TokenAndPositionEmbedding],
        "attention": [ScaledDotProductAttention, attention],
        "causal_mask": [causal_mask],
        "padding_mask": [padding_mask],
        "masked_attention": [ScaledDotProductAttention, masked_attention],
        "multi_head_attention": [ScaledDotProductAttention, MultiHeadAttention],
        "feed_forward": [FeedForward],
        "transformer_block": [TransformerBlock],
        "decoder_block": [DecoderBlock],
    }, mistakes={
        "token_and_position_embedding": mistake(_DEFAULT_INIT, "check_token_and_position_embedding",
                                                "hidden_token_and_position_embedding"),
        "masked_attention": mistake("masked_fill(mask == 0, -1e9) gives a query with no allowed key uniform weights "
                                    "over the masked keys, where the API asks for zeros",
                                    "check_masked_attention", "hidden_masked_attention"),
    }),
}
