"""Visible checks for notebook 01: `positional_encoding` and `TokenAndPositionEmbedding`."""
from __future__ import annotations

import torch
from torch import nn

from course.checks.compare import expect_tensor, expect_values
from course.checks.report import assert_written, fail, run_steps
from course.device import available_devices, supported_dtypes
from course.fixtures import load


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


def check_token_and_position_embedding(TokenAndPositionEmbedding) -> None:
    """Submodule, shapes, the sqrt(d_model) scaling, every device and dtype, and the max_len error."""
    fixture = load("positional_encoding")["TokenAndPositionEmbedding"]
    c = fixture["cases"][0]

    def build(device=torch.device("cpu"), dtype=torch.float32) -> nn.Module:
        module = TokenAndPositionEmbedding(**c["init"]).to(device=device, dtype=dtype)
        if not isinstance(getattr(module, "embed", None), nn.Embedding):
            fail("The module needs a submodule `self.embed = nn.Embedding(vocab_size, d_model)`.")
        expect_tensor("embed.weight", module.embed.weight, shape=c["weight"].shape)
        with torch.no_grad():
            module.embed.weight.copy_(c["weight"])
        return module

    def values_on(device: torch.device, dtype: torch.dtype):
        def step():
            out = build(device, dtype)(c["tokens"].to(device))
            expect_tensor("The output", out, shape=c["expected"].shape, dtype=dtype, device=device)
            # float32 tolerance in both dtypes: the table is built in the default dtype, then converted.
            expect_values("The output", out, c["expected"], torch.float32, c["mistakes"])
        return step

    def too_long():
        module = build()
        tokens = torch.zeros(1, c["init"]["max_len"] + 1, dtype=torch.long)
        try:
            module(tokens)
        except ValueError:
            return
        except (IndexError, RuntimeError) as exc:
            fail(f"A sequence longer than max_len raised {type(exc).__name__}; raise a ValueError "
                 "that says the sequence is longer than max_len.")
        fail("A sequence longer than max_len should raise a ValueError that says so.")

    steps = [("has an `embed` submodule of the right size", build)]
    steps += [(f"matches the stored values on {d.type} in {str(t).removeprefix('torch.')}", values_on(d, t))
              for d in available_devices() for t in supported_dtypes(d)]
    steps += [("raises ValueError for a sequence longer than max_len", too_long)]
    run_steps("TokenAndPositionEmbedding", steps)


def written_positional_encoding(positional_encoding) -> None:
    assert_written("positional_encoding", lambda: positional_encoding(4, 4))


def written_token_and_position_embedding(TokenAndPositionEmbedding) -> None:
    assert_written("TokenAndPositionEmbedding",
                   lambda: TokenAndPositionEmbedding(5, 4, 3)(torch.zeros(1, 2, dtype=torch.long)))
