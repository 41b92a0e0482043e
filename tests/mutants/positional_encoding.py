"""Mutants and variants for notebook 01.

The layer's check and hidden test run it on a stand-in table: a correct layer over any wrong or unwritten
`positional_encoding` of the same notebook gets full points, and a wrong layer over one still loses them."""
import math

import torch
from torch import nn

from autograder.authoring.mistakes import for_exercise
from autograder.authoring.mistakes.positional_encoding import EmbeddingWithTable
from autograder.authoring.reference.positional_encoding import positional_encoding as reference_pe


def pe_base_1000(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    angle = position / 1000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(angle)
    table[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return table


def pe_even_d_model_only(max_len, d_model):
    position = torch.arange(max_len, dtype=torch.float32)[:, None]
    angle = position / 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
    return torch.stack([torch.sin(angle), torch.cos(angle)], dim=-1).reshape(max_len, -1)  # odd: one column too many


def pe_transposed(max_len, d_model):
    return reference_pe(d_model, max_len).T if max_len != d_model else reference_pe(max_len, d_model).T


def pe_float64(max_len, d_model):
    return reference_pe(max_len, d_model).double()


def pe_loops(max_len, d_model):
    table = torch.zeros(max_len, d_model)
    for p in range(max_len):
        for col in range(d_model):
            frequency = 1 / 10000 ** ((col - col % 2) / d_model)
            table[p, col] = math.sin(p * frequency) if col % 2 == 0 else math.cos(p * frequency)
    return table


def pe_exp_log(max_len, d_model):
    position = torch.arange(max_len).float().unsqueeze(1)
    frequency = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    table = torch.zeros(max_len, d_model)
    table[:, 0::2] = torch.sin(position * frequency)
    table[:, 1::2] = torch.cos(position * frequency)[:, : d_model // 2]
    return table


class WithCourseInit(EmbeddingWithTable):
    """The correct __init__, the course's initialisation included: mutants below differ in one thing only."""

    def __init__(self, vocab_size, d_model, max_len):
        super().__init__(vocab_size, d_model, max_len)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)


class embedding_no_length_check(WithCourseInit):
    def forward(self, tokens):
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.shape[-1]]


class embedding_table_not_a_buffer(nn.Module):  # the table stays on the CPU in float32 whatever .to() says
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)  # the course's init: one mistake at a time
        self.d_model, self.max_len = d_model, max_len
        self.table = reference_pe(max_len, d_model)

    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError("too long")
        out = self.embed(tokens) * math.sqrt(self.d_model) + self.table[: tokens.shape[-1]].to(tokens.device)
        return out.float()


class embedding_table_made_on_the_cpu(WithCourseInit):  # made in forward, never moved: right only on the CPU alone
    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError("too long")
        return self.embed(tokens) * math.sqrt(self.d_model) + reference_pe(tokens.shape[-1], self.d_model)


class embedding_rejects_max_len(WithCourseInit):  # `>=` where `>` belongs: exactly max_len tokens raise
    def forward(self, tokens):
        if tokens.shape[-1] >= self.max_len:
            raise ValueError(f"sequence longer than max_len={self.max_len}")
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.shape[-1]]


class embedding_trains_the_table(nn.Module):  # the table is an nn.Parameter: the optimiser would change it
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)  # the course's init: one mistake at a time
        self.d_model, self.max_len = d_model, max_len
        self.pe = nn.Parameter(reference_pe(max_len, d_model))

    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError(f"sequence longer than max_len={self.max_len}")
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.shape[-1]]


class embedding_persistent_buffer(WithCourseInit):  # correct: the table saved in the state dict as well
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__(vocab_size, d_model, max_len)
        self.register_buffer("pe", reference_pe(max_len, d_model))

    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError(f"sequence longer than max_len={self.max_len}")
        return self.embed(tokens) * self.d_model ** 0.5 + self.pe[: tokens.shape[-1]]


class embedding_default_init(EmbeddingWithTable):  # nn.Embedding's default N(0, 1) kept: positions are drowned
    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError(f"sequence longer than max_len={self.max_len}")
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.shape[-1]]


class embedding_std_one_over_d_model(embedding_default_init):  # 1/d_model where 1/sqrt(d_model) belongs
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__(vocab_size, d_model, max_len)
        nn.init.normal_(self.embed.weight, std=1 / d_model)


class embedding_given_weight(nn.Module):  # correct: the table handed to nn.Embedding ready-made, uniform
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        bound = math.sqrt(3 / d_model)  # a uniform(-b, b) has standard deviation b / sqrt(3) = 1/sqrt(d_model)
        self.embed = nn.Embedding(vocab_size, d_model, _weight=torch.empty(vocab_size, d_model).uniform_(-bound, bound))
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("pe", reference_pe(max_len, d_model), persistent=False)

    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError(f"sequence longer than max_len={self.max_len}")
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.shape[-1]]


class embedding_truncated_normal(embedding_given_weight):  # correct: a truncated normal of that scale (std 0.88 of it)
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__(vocab_size, d_model, max_len)
        std = d_model ** -0.5
        nn.init.trunc_normal_(self.embed.weight, std=std, a=-2 * std, b=2 * std)


class embedding_without_max_len(nn.Module):  # the stub's `self.max_len` deleted: generate (05) cannot crop
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, std=d_model ** -0.5)  # the course's init: one mistake at a time
        self.d_model, self.limit = d_model, max_len
        self.register_buffer("pe", reference_pe(max_len, d_model), persistent=False)

    def forward(self, tokens):
        if tokens.shape[-1] > self.limit:
            raise ValueError(f"sequence longer than max_len={self.limit}")
        return self.embed(tokens) * math.sqrt(self.d_model) + self.pe[: tokens.shape[-1]]


class embedding_loops_variant(nn.Module):  # looks up each id read on the host, one at a time
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        with torch.no_grad():
            self.embed.weight.data.normal_(0, d_model ** -0.5)  # the older spelling of the same initialisation
        self.d_model, self.max_len = d_model, max_len
        self.register_buffer("pe", reference_pe(max_len, d_model), persistent=False)

    def forward(self, tokens):
        length = int(tokens.shape[-1])
        if length > self.max_len:
            raise ValueError(f"{length} tokens, but max_len is {self.max_len}")
        rows = [self.embed.weight[token] for token in tokens.reshape(-1).tolist()]
        looked_up = torch.stack(rows).reshape(*tokens.shape, self.d_model)
        return looked_up * math.sqrt(float(self.d_model)) + self.pe[:length]


def pe_list_variant(max_len, d_model):  # Python numbers row by row, then one tensor
    rows = [[math.sin(p / 10000 ** (col / d_model)) if col % 2 == 0 else math.cos(p / 10000 ** ((col - 1) / d_model))
             for col in range(d_model)] for p in range(max_len)]
    return torch.tensor(rows, dtype=torch.get_default_dtype()).reshape(max_len, d_model)


def pe_not_written(max_len, d_model):
    raise NotImplementedError()


# ---------------------------------------------------------------- offset_rotation

def _frequencies(d_model, dtype=torch.float64):
    return 10000.0 ** (-torch.arange(0, d_model, 2, dtype=dtype) / d_model)


def _finish(rotation, dtype, device):
    return rotation.to(dtype=torch.get_default_dtype() if dtype is None else dtype, device=device)


def _blocks(k, d_model, block):
    """The matrix with block(angle) on the diagonal, one 2 x 2 block per pair, float64 on the CPU."""
    if d_model % 2:
        raise ValueError("odd d_model")
    return torch.block_diag(*[block(angle) for angle in (k * _frequencies(d_model)).tolist()])


def rotation_block(angle):
    return torch.tensor([[math.cos(angle), math.sin(angle)], [-math.sin(angle), math.cos(angle)]], dtype=torch.float64)


def rot_ignores_dtype(k, d_model, dtype=None, device=None):  # always float32
    return _blocks(k, d_model, rotation_block).float().to(device)


def rot_ignores_device(k, d_model, dtype=None, device=None):  # stays on the CPU
    return _finish(_blocks(k, d_model, rotation_block), dtype, None)


def rot_default_float64(k, d_model, dtype=None, device=None):  # dtype=None should mean the default dtype
    return _blocks(k, d_model, rotation_block).to(dtype=dtype or torch.float64, device=device)


def rot_odd_padded(k, d_model, dtype=None, device=None):  # odd d_model: a 1 for the lone sine, no ValueError
    even = d_model - d_model % 2
    rotation = torch.eye(d_model, dtype=torch.float64)
    rotation[:even, :even] = _blocks(k, even, rotation_block)
    return _finish(rotation, dtype, device)


def rot_float32_angles(k, d_model, dtype=None, device=None):  # angles in float32: large k drifts
    if d_model % 2:
        raise ValueError("odd d_model")
    angles = k * _frequencies(d_model, torch.float32)
    return _finish(torch.block_diag(*[rotation_block(a) for a in angles.tolist()]), dtype, device)


def rot_cos_only(k, d_model, dtype=None, device=None):  # the sines forgotten: a scaling, not a rotation
    return _finish(_blocks(k, d_model, lambda a: torch.diag(torch.tensor([math.cos(a)] * 2, dtype=torch.float64))),
                   dtype, device)


def rot_sin_cos_swapped(k, d_model, dtype=None, device=None):  # sin where cos belongs and back
    return _finish(_blocks(k, d_model, lambda a: torch.tensor([[math.sin(a), math.cos(a)], [-math.cos(a), math.sin(a)]],
                                                              dtype=torch.float64)), dtype, device)


def rot_loops(k, d_model, dtype=None, device=None):  # correct: entry by entry
    if d_model % 2 == 1:
        raise ValueError(f"d_model must be even, got {d_model}")
    rotation = torch.zeros(d_model, d_model, dtype=torch.float64)
    for i in range(d_model // 2):
        angle = k / 10000 ** (2 * i / d_model)
        rotation[2 * i, 2 * i] = math.cos(angle)
        rotation[2 * i, 2 * i + 1] = math.sin(angle)
        rotation[2 * i + 1, 2 * i] = -math.sin(angle)
        rotation[2 * i + 1, 2 * i + 1] = math.cos(angle)
    return _finish(rotation, dtype, device)


def rot_block_diag(k, d_model, dtype=None, device=None):  # correct: torch.block_diag of 2 x 2 blocks
    return _finish(_blocks(k, d_model, rotation_block), dtype, device)


def rot_complex(k, d_model, dtype=None, device=None):  # correct: each pair's turn as a complex number
    if d_model % 2:
        raise ValueError("an odd d_model leaves a sine without its cosine")
    turn = torch.polar(torch.ones(d_model // 2, dtype=torch.float64), k * _frequencies(d_model))
    c, s = torch.diag(turn.real), torch.diag(turn.imag)
    rotation = torch.stack([torch.stack([c, s], dim=-1), torch.stack([-s, c], dim=-1)], dim=1)  # (pair, 2, pair, 2)
    return _finish(rotation.reshape(d_model, d_model), dtype, device)


def rot_matrix_power(k, d_model, dtype=None, device=None):  # correct: one step, taken k times
    return _finish(torch.linalg.matrix_power(_blocks(1, d_model, rotation_block), k), dtype, device)


NEEDS_SECOND_DEVICE = {rot_ignores_device, embedding_table_made_on_the_cpu}


# ---------------------------------------------------------------- one mistake, one cost

# The notebook's own layer, defined the way a notebook defines it: its methods read `positional_encoding` from the
# namespace they were defined in. One calls it in __init__ (a buffer), the other in forward.
_LAYERS = {
    "buffer": """
class Layer(nn.Module):
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        nn.init.normal_(self.embed.weight, mean=0.0, std=1 / math.sqrt(d_model))
        self.register_buffer("pe", positional_encoding(max_len, d_model), persistent=False)

    def forward(self, tokens):
        if tokens.shape[-1] > self.max_len:
            raise ValueError("longer than max_len")
        return self.embed(tokens) * SCALE(self.d_model) + self.pe[: tokens.shape[-1]]
""",
    "forward": """
class Layer(nn.Module):
    def __init__(self, vocab_size, d_model, max_len):
        super().__init__()
        self.d_model, self.max_len = d_model, max_len
        self.embed = nn.Embedding(vocab_size, d_model)
        self.embed.weight.data.normal_(0, d_model ** -0.5)

    def forward(self, tokens):
        T = tokens.shape[-1]
        if T > self.max_len:
            raise ValueError("longer than max_len")
        table = positional_encoding(T, self.d_model).to(self.embed.weight)
        return self.embed(tokens) * SCALE(self.d_model) + table
""",
}


def layer_over(encoding, *, scaled: bool = True, calls_it_in: str = "buffer") -> type:
    """A layer defined in a notebook whose `positional_encoding` is `encoding`; `scaled=False` forgets sqrt(d_model)."""
    namespace = {"__name__": "__main__", "nn": nn, "math": math, "positional_encoding": encoding, "SCALE": math.sqrt if scaled else (lambda d: 1.0)}
    exec(_LAYERS[calls_it_in], namespace)  # noqa: S102: the test's stand-in for a notebook cell
    layer = namespace["Layer"]
    layer.__name__ = f"{'layer' if scaled else 'unscaled_layer'}_{calls_it_in}_over_{encoding.__name__}"
    return layer


WRONG_ENCODINGS = [known.impl for known in for_exercise("positional_encoding")] + [
    pe_base_1000, pe_even_d_model_only, pe_transposed, pe_float64, pe_not_written]

MUTANTS = [
    ("positional_encoding", pe_base_1000),
    ("positional_encoding", pe_even_d_model_only),
    ("positional_encoding", pe_transposed),
    ("positional_encoding", pe_float64),
    ("offset_rotation", rot_ignores_dtype),
    ("offset_rotation", rot_ignores_device),
    ("offset_rotation", rot_default_float64),
    ("offset_rotation", rot_odd_padded),
    ("offset_rotation", rot_float32_angles),
    ("offset_rotation", rot_cos_only),
    ("offset_rotation", rot_sin_cos_swapped),
    ("TokenAndPositionEmbedding", embedding_no_length_check),
    ("TokenAndPositionEmbedding", embedding_table_not_a_buffer),
    ("TokenAndPositionEmbedding", embedding_rejects_max_len),
    ("TokenAndPositionEmbedding", embedding_trains_the_table),
    ("TokenAndPositionEmbedding", embedding_without_max_len),
    ("TokenAndPositionEmbedding", embedding_default_init),
    ("TokenAndPositionEmbedding", embedding_std_one_over_d_model),
    ("TokenAndPositionEmbedding", embedding_table_made_on_the_cpu),
] + [("TokenAndPositionEmbedding", layer_over(wrong, scaled=False, calls_it_in=where))
     for wrong in WRONG_ENCODINGS for where in _LAYERS]

VARIANTS = [
    ("positional_encoding", pe_loops),
    ("positional_encoding", pe_exp_log),
    ("positional_encoding", pe_list_variant),
    ("offset_rotation", rot_loops),
    ("offset_rotation", rot_block_diag),
    ("offset_rotation", rot_complex),
    ("offset_rotation", rot_matrix_power),
    ("TokenAndPositionEmbedding", embedding_persistent_buffer),
    ("TokenAndPositionEmbedding", embedding_loops_variant),
    ("TokenAndPositionEmbedding", embedding_given_weight),
    ("TokenAndPositionEmbedding", embedding_truncated_normal),
] + [("TokenAndPositionEmbedding", layer_over(wrong, calls_it_in=where)) for wrong in WRONG_ENCODINGS for where in _LAYERS]
