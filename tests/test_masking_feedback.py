"""03's masked_attention check names more mistakes than wrong numbers would: when the values differ from the stored
ones and match no known mistake, the check runs its property steps quietly and adds the first that fails (the
mechanism 02's attention check uses, `course.checks.compare.with_reason`)."""
import pytest

from autograder.authoring.mistakes import for_exercise
from course.checks import check_masked_attention
from course.checks.report import CheckFailed
from tests.mutants import masking as listing


def _feedback(impl) -> str:
    with pytest.raises(CheckFailed) as failure:
        check_masked_attention(impl)
    return str(failure.value)


@pytest.mark.parametrize("impl", list(listing.NAMED), ids=lambda impl: impl.__name__)
def test_the_feedback_names_the_mutant(impl, capsys):
    assert listing.NAMED[impl] in _feedback(impl)


def test_wrong_numbers_are_followed_by_the_first_failing_property(capsys):
    message = _feedback(listing.attention_softmax_dim_1)
    values, further = message.split("\n  A further check says why: ")
    assert "matches the stored values" in values and "differs from the expected values" in values
    assert further.startswith("masked keys get weight exactly 0; the rest sum to 1: no. The weights sum to 1 over "
                              "the queries")
    assert "✔" not in capsys.readouterr().out, "the property steps run quietly after wrong values"


def test_a_known_mistake_is_named_alone():
    fill_with_zero = next(known for known in for_exercise("masked_attention") if known.id.endswith("fill_with_zero"))
    message = _feedback(fill_with_zero.impl)
    assert fill_with_zero.message in message and "A further check" not in message


def test_an_input_changed_in_place_is_named_by_its_own_step(capsys):
    """The property steps call the student's function on copies, so an input changed in place is not mistaken for
    a wrong mask or a wrong result."""
    message = _feedback(listing.attention_inverts_mask_in_place)
    assert message.startswith("masked_attention: leaves Q, K, V and the mask unchanged")
