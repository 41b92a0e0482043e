"""The checks load stored weights by parameter name: each message names the right side, and whatever is not a
parameter (buffers, persistent or not; submodules without parameters; plain attributes) is the student's own."""
import pytest
import torch
from torch import nn

from course.checks.attention_block import load_weights
from course.checks.report import CheckFailed


class Projections(nn.Module):
    def __init__(self, bias: bool = True, extra: bool = False):
        super().__init__()
        self.W_q = nn.Linear(4, 4, bias=bias)
        if extra:
            self.gate = nn.Parameter(torch.ones(4))


STATE = {name: torch.randn(p.shape, dtype=torch.float64) for name, p in Projections().named_parameters()}


def test_a_parameter_the_module_lacks_is_named_as_missing_from_the_module():
    with pytest.raises(CheckFailed) as failure:
        load_weights(Projections(bias=False), STATE)
    assert "Expected but not in your module: W_q.bias." in str(failure.value)
    assert "In your module but not expected" not in str(failure.value)


def test_a_parameter_only_the_module_has_is_named_as_unexpected():
    with pytest.raises(CheckFailed) as failure:
        load_weights(Projections(extra=True), STATE)
    assert "In your module but not expected: gate." in str(failure.value)
    assert "Expected but not in your module" not in str(failure.value)


def test_a_parameter_of_another_shape_is_named_with_both_shapes():
    with pytest.raises(CheckFailed) as failure:
        load_weights(Projections(), {**STATE, "W_q.weight": torch.zeros(4, 3)})
    assert "W_q.weight has shape (4, 4), but (4, 3) was expected" in str(failure.value)


def test_buffers_submodules_without_parameters_and_attributes_are_the_students_own():
    module = Projections().double()
    module.register_buffer("IGNORE", torch.tensor(-1e5))  # ARENA's persistent buffer
    module.register_buffer("cache", torch.zeros(2), persistent=False)
    module.softmax, module.note = nn.Softmax(dim=-1), "mine"
    load_weights(module, STATE)
    assert torch.equal(module.W_q.weight.detach(), STATE["W_q.weight"])
    assert module.IGNORE.item() == -1e5
