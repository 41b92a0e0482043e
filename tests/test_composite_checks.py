"""A composite exercise's check judges how it joins its parts, with stand-ins in their places, as its hidden test
does (issue 25.2): a part still unwritten in the notebook costs points in its own check only, not again in the
block's. Here 04's TransformerBlock and 05's DecoderBlock are the reference's wiring in a notebook whose
MultiHeadAttention, FeedForward and LayerNorm are still the stubs."""
from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from autograder.authoring.hidden import attention_block as hidden_04
from autograder.authoring.hidden import transformer as hidden_05
from autograder.authoring.reference.attention_block import TransformerBlock
from autograder.authoring.reference.transformer import DecoderBlock
from course.checks import check_decoder_block, check_transformer_block


class _Stub(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        raise NotImplementedError()


def in_a_notebook_with_stubs(block_class):
    """`block_class` defined again in a namespace of its own whose MultiHeadAttention, FeedForward and LayerNorm are
    the release's stubs (a notebook where only the block is written)."""
    namespace = {"torch": torch, "nn": nn, "MultiHeadAttention": _Stub, "FeedForward": _Stub, "LayerNorm": _Stub,
                 "__name__": "notebook"}
    exec(compile(inspect.getsource(block_class), "<notebook cell>", "exec"), namespace)
    return namespace[block_class.__name__]


@pytest.mark.parametrize("block, check, hidden", [(TransformerBlock, check_transformer_block, hidden_04.test_transformer_block),
                                                  (DecoderBlock, check_decoder_block, hidden_05.test_decoder_block)],
                         ids=["TransformerBlock", "DecoderBlock"])
def test_a_block_earns_its_points_while_its_parts_are_still_stubs(block, check, hidden, capsys):
    written = in_a_notebook_with_stubs(block)
    with pytest.raises(NotImplementedError):
        written(8, 2, 16)  # the notebook itself cannot build it yet
    check(written)
    assert "all checks passed" in capsys.readouterr().out
    hidden(written)


def test_generate_cached_earns_its_points_while_forward_with_cache_is_still_the_stub(capsys):
    """05's generate_cached reads forward_with_cache from its notebook: its check and hidden test put a stand-in there
    (course.checks.transformer.RecomputingForwardWithCache), so a notebook whose forward_with_cache is still the stub
    loses those points in 5a only. The check also compares it with the notebook's own generate."""
    from autograder.authoring.reference.transformer import generate, generate_cached
    from course.checks import check_generate_cached
    from course.checks.transformer import toy_model
    from course.fixtures import load

    def forward_with_cache(model, tokens, cache=None):
        raise NotImplementedError()

    namespace = {"torch": torch, "nn": nn, "forward_with_cache": forward_with_cache, "__name__": "notebook"}
    for function in (generate, generate_cached):
        exec(compile(inspect.getsource(function), "<notebook cell>", "exec"), namespace)
    written = namespace["generate_cached"]
    model = toy_model(load("transformer")["generate_cached"])
    with pytest.raises(NotImplementedError):
        written(model, torch.zeros(1, 1, dtype=torch.long), 1)  # the notebook itself cannot run it yet
    check_generate_cached(written)
    shown = capsys.readouterr().out
    assert "writes the tokens of your generate on cpu" in shown and "all checks passed" in shown
    assert namespace["forward_with_cache"] is forward_with_cache, "the stand-in is gone once the check is done"
    hidden_05.test_generate_cached(written)
