"""Visible checks for notebook 01: `positional_encoding` and `TokenAndPositionEmbedding`."""
from __future__ import annotations

import torch
from torch import nn

from course.checks.compare import expect_tensor, expect_values, is_close
from course.checks.report import assert_written, fail, run_steps
from course.checks.stand_ins import earlier_pieces_replaced, notebook_globals
from course.device import available_devices, supported_dtypes
from course.fixtures import load

# The starting scale of the token embedding: its weights must start with standard deviation 1/sqrt(d_model), measured
# on a table of INIT_VOCAB rows at the fixture's d_model. A sample of that size (12,000 entries at d_model 6) has a
# standard deviation within 1% of the true one, so a tolerance of 20% fails no correct initialisation (normal,
# truncated normal, uniform of that standard deviation) and every one of another scale: PyTorch's default (1) is
# sqrt(d_model) times too large.
INIT_VOCAB = 2000
INIT_TOLERANCE = 0.2


def check_positional_encoding(positional_encoding) -> None:
    """Shape, dtype and stored values of `positional_encoding(max_len, d_model)`, odd `d_model` included."""
    fixture = load("positional_encoding")["positional_encoding"]

    def case(index: int):
        def step():
            c = fixture["cases"][index]
            out = positional_encoding(**c["args"])
            expect_tensor("The encoding", out, shape=c["expected"].shape, dtype=torch.get_default_dtype())
            expect_values("The encoding", out, c["expected"], torch.float32, c["mistakes"])
        return step

    def rows_differ():
        pe = positional_encoding(32, 8)
        if torch.unique(pe.detach(), dim=0).shape[0] != 32:
            fail("Two positions got the same encoding: every row must be different so the model can tell positions apart.")

    steps = [(f"matches the stored values for max_len={c['args']['max_len']}, d_model={c['args']['d_model']}", case(i))
             for i, c in enumerate(fixture["cases"])]
    run_steps("positional_encoding", steps + [("every position gets its own encoding", rows_differ)])


def check_offset_rotation(offset_rotation) -> None:
    """Odd d_model refused; stored matrices (naming known mistakes); shape, dtype and device on every device in
    float32 and float64; then the properties: PE[p + k] = M_k PE[p] on a stored table, M_0 = I, orthogonality and
    M_a M_b = M_(a+b)."""
    fixture = load("positional_encoding")["offset_rotation"]
    table = fixture["table"]  # float64 rows of the sinusoidal table, stored: a mistake in yours costs once
    d_model = table.shape[1]

    def rotation(k: int, size: int = d_model) -> torch.Tensor:
        out = offset_rotation(k, size, dtype=torch.float64)
        expect_tensor(f"offset_rotation({k}, {size}, dtype=torch.float64)", out, shape=(size, size),
                      dtype=torch.float64)
        return out.detach().to("cpu")

    def odd_refused():
        try:
            offset_rotation(1, 5)
        except ValueError:
            return
        fail("offset_rotation(1, 5) should raise a ValueError: with an odd d_model the last column is a sine with "
             "no cosine partner, and no matrix can move it k positions along by itself.")

    def case(c):
        def step():
            what = f"offset_rotation({c['args']['k']}, {c['args']['d_model']}, dtype=torch.float64)"
            out = offset_rotation(**c["args"], dtype=torch.float64)
            expect_tensor(what, out, shape=c["expected"].shape, dtype=torch.float64)
            expect_values(what, out, c["expected"], torch.float64, c["mistakes"])
        return step

    def default_dtype():
        out = offset_rotation(2, 4)
        expect_tensor("offset_rotation(2, 4)", out, shape=(4, 4), dtype=torch.get_default_dtype())

    def on(device: torch.device, dtype: torch.dtype):
        def step():
            c = fixture["cases"][0]
            what = f"offset_rotation({c['args']['k']}, {c['args']['d_model']}, dtype={dtype}, device={device.type!r})"
            out = offset_rotation(**c["args"], dtype=dtype, device=device)
            expect_tensor(what, out, shape=c["expected"].shape, dtype=dtype, device=device)
            expect_values(what, out, c["expected"], dtype, c["mistakes"])
        return step

    def moves_rows():
        for k in (1, 4, 17, -6):
            moved = table[20:40] @ rotation(k).T  # row p becomes M_k @ PE[p]
            if is_close(moved, table[20 + k:40 + k], torch.float64):
                continue
            hint = ""
            if is_close(moved, table[20 - k:40 - k], torch.float64):
                hint = (" It gives PE[p - k] instead: your blocks turn the wrong way (each is the transpose of what "
                        "it should be; the minus sign belongs in the cosine's row).")
            fail(f"M_k @ PE[p] should be PE[p + k] for every p; with k = {k} it is not (p = 20 to 39, on the stored "
                 f"sinusoidal table with d_model = {d_model}).{hint}")

    def zero_is_identity():
        found = rotation(0)
        if not is_close(found, torch.eye(d_model, dtype=torch.float64), torch.float64):
            fail(f"offset_rotation(0, {d_model}) should be the identity: moving 0 positions changes nothing.")

    def orthogonal():
        for k in (3, -11):
            m = rotation(k)
            if not is_close(m @ m.T, torch.eye(d_model, dtype=torch.float64), torch.float64):
                fail(f"M_k times its transpose should be the identity (k = {k}): a rotation keeps every length. "
                     "Each block needs cos(kw) on its diagonal and +sin(kw), -sin(kw) off it, and zeros outside.")

    def adds_offsets():
        for a, b in ((2, 5), (7, -3), (-4, -9)):
            if not is_close(rotation(a) @ rotation(b), rotation(a + b), torch.float64):
                fail(f"Moving {b} then {a} positions should be moving {a + b}: M_{a} @ M_{b} should equal "
                     f"M_{a + b}, and it does not.")

    steps = [("raises ValueError for an odd d_model", odd_refused)]
    steps += [(f"matches the stored matrix for k={c['args']['k']}, d_model={c['args']['d_model']}", case(c))
              for c in fixture["cases"]]
    steps += [("returns the default dtype when none is given", default_dtype)]
    steps += [(f"matches on {d.type} in {str(t).removeprefix('torch.')}", on(d, t))
              for d in available_devices() for t in supported_dtypes(d)]
    steps += [("moves every row of the table k positions along: PE[p + k] = M_k @ PE[p]", moves_rows),
              ("M_0 is the identity", zero_is_identity),
              ("is a rotation: M_k @ M_k.T = I", orthogonal),
              ("adds offsets: M_a @ M_b = M_(a+b)", adds_offsets)]
    run_steps("offset_rotation", steps)


def stored_encoding(fixture: dict, own_positional_encoding):
    """A stand-in for the notebook's `positional_encoding`: the stored table where it covers the request (the sizes
    this check uses), the student's own function anywhere else."""
    table = fixture["encoding"]

    def positional_encoding(max_len: int, d_model: int) -> torch.Tensor:
        if d_model == table.shape[1] and max_len <= table.shape[0]:
            return table[:max_len].to(torch.get_default_dtype(), copy=True)  # a copy: the fixture is shared
        return own_positional_encoding(max_len, d_model)
    return positional_encoding


def stored_encoding_in_place_of_yours(TokenAndPositionEmbedding, fixture: dict):
    """A context in which the layer reads the stored table in place of the notebook's `positional_encoding`, which
    has its own check: a mistake there does not fail this one too."""
    own = notebook_globals(TokenAndPositionEmbedding).get("positional_encoding")
    return earlier_pieces_replaced(TokenAndPositionEmbedding, positional_encoding=stored_encoding(fixture, own))


def check_token_and_position_embedding(TokenAndPositionEmbedding) -> None:
    """Submodule, shapes, the sqrt(d_model) scaling, every device and dtype, the starting scale of the embedding,
    the full length and the max_len error.
    The layer runs on the stored table in place of your `positional_encoding` (checked above)."""
    fixture = load("positional_encoding")["TokenAndPositionEmbedding"]
    init = fixture["init"]

    def build(device=torch.device("cpu"), dtype=torch.float32) -> nn.Module:
        module = TokenAndPositionEmbedding(**init).to(device=device, dtype=dtype)
        if not isinstance(getattr(module, "embed", None), nn.Embedding):
            fail("The module needs a submodule `self.embed = nn.Embedding(vocab_size, d_model)`.")
        expect_tensor("embed.weight", module.embed.weight, shape=fixture["weight"].shape)
        with torch.no_grad():
            module.embed.weight.copy_(fixture["weight"])
        return module

    def values_on(device: torch.device, dtype: torch.dtype):
        def step():
            module = build(device, dtype)
            for c in fixture["cases"]:
                what = f"The output for tokens of shape {tuple(c['tokens'].shape)}"
                try:
                    out = module(c["tokens"].to(device))
                except ValueError as exc:
                    fail(f"{c['tokens'].shape[-1]} tokens with max_len={init['max_len']} raised ValueError({exc}). "
                         "Only a sequence longer than max_len has no encoding: compare with `>`, not `>=`.")
                expect_tensor(what, out, shape=c["expected"].shape, dtype=dtype, device=device)
                # float32 tolerance in both dtypes: the table is built in the default dtype, then converted.
                expect_values(what, out, c["expected"], torch.float32, c["mistakes"])
        return step

    def starts_small():
        d_model = init["d_model"]
        module = TokenAndPositionEmbedding(INIT_VOCAB, d_model, init["max_len"])
        weight = getattr(getattr(module, "embed", None), "weight", None)
        if not isinstance(weight, torch.Tensor) or weight.numel() < 2:
            fail("The module needs a submodule `self.embed = nn.Embedding(vocab_size, d_model)`.")
        found, wanted = weight.detach().double().std().item(), d_model ** -0.5
        if abs(found / wanted - 1) <= INIT_TOLERANCE:
            return
        low, high = (1 - INIT_TOLERANCE) * wanted, (1 + INIT_TOLERANCE) * wanted
        which = " (PyTorch's default for nn.Embedding is 1)" if abs(found - 1) <= INIT_TOLERANCE else ""
        fail(f"A new layer's `embed.weight` ({INIT_VOCAB} x {d_model}) starts with standard deviation {found:.3f}"
             f"{which}. It should start at 1/sqrt(d_model) = {wanted:.3f} (accepted: {low:.3f} to {high:.3f}), so that "
             "after the scaling by sqrt(d_model) a token's vector has about the length of its position's. Right "
             "after making the embedding, redraw its weights in place: `nn.init.normal_` on `self.embed.weight` "
             "with mean 0 and `std` 1/sqrt(d_model).")

    def only_embed_is_trained():
        trained = [name for name, p in build().named_parameters() if p.requires_grad and not name.startswith("embed.")]
        if trained:
            fail(f"{', '.join(trained)} would be trained as a parameter. The positional table is fixed: register it "
                 "with `self.register_buffer(\"pe\", ..., persistent=False)`, which moves with .to() but is not trained.")

    def too_long():
        module = build()
        tokens = torch.zeros(1, init["max_len"] + 1, dtype=torch.long)
        try:
            module(tokens)
        except ValueError:
            return
        except (IndexError, RuntimeError) as exc:
            fail(f"A sequence longer than max_len raised {type(exc).__name__}; raise a ValueError "
                 "that says the sequence is longer than max_len.")
        fail("A sequence longer than max_len should raise a ValueError that says so.")

    steps = [("has an `embed` submodule of the right size", build)]
    steps += [(f"matches the stored values on {d.type} in {str(t).removeprefix('torch.')} (max_len tokens included)",
               values_on(d, t)) for d in available_devices() for t in supported_dtypes(d)]
    def keeps_max_len():
        found = getattr(build(), "max_len", None)
        if found != init["max_len"]:
            fail(f"`self.max_len` is {found!r}, not {init['max_len']}: keep `self.max_len = max_len` as the stub gives "
                 "it. `generate` (notebook 05) and `sample` (notebook 07) read `model.embedding.max_len` to crop "
                 "the context.")

    steps += [("starts the token embedding at standard deviation 1/sqrt(d_model)", starts_small),
              ("trains the embedding only (the positional table is a buffer)", only_embed_is_trained),
              ("keeps `max_len`", keeps_max_len),
              ("raises ValueError for a sequence longer than max_len", too_long)]
    with stored_encoding_in_place_of_yours(TokenAndPositionEmbedding, fixture):
        run_steps("TokenAndPositionEmbedding", steps)


def written_positional_encoding(positional_encoding) -> None:
    assert_written("positional_encoding", lambda: positional_encoding(4, 4))


def written_token_and_position_embedding(TokenAndPositionEmbedding) -> None:
    fixture = load("positional_encoding")["TokenAndPositionEmbedding"]
    with stored_encoding_in_place_of_yours(TokenAndPositionEmbedding, fixture):
        assert_written("TokenAndPositionEmbedding",
                       lambda: TokenAndPositionEmbedding(**fixture["init"])(fixture["cases"][0]["tokens"]))


def written_offset_rotation(offset_rotation) -> None:
    assert_written("offset_rotation", lambda: offset_rotation(1, 4))
