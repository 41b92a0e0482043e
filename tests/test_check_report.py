"""How checks speak: unwritten exercises, failures without tracebacks, errors from the student's own code."""
import warnings

import pytest

from autograder.authoring.hidden import positional_encoding as hidden_01
from autograder.authoring.reference.positional_encoding import positional_encoding
from course.checks import check_attention, check_positional_encoding, written_positional_encoding
from course.checks.report import CheckFailed, NotWrittenYet


def stub(*args, **kwargs):
    raise NotImplementedError()


def test_unwritten_exercise_fails_under_grading(monkeypatch):
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    with pytest.raises(NotWrittenYet, match="not written yet"):
        check_positional_encoding(stub)
    with pytest.raises(NotWrittenYet):
        written_positional_encoding(stub)


def test_unwritten_exercise_says_so_and_lets_the_notebook_run_on(monkeypatch, capsys):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    check_positional_encoding(stub)
    assert "⏳ positional_encoding: not written yet" in capsys.readouterr().out


def test_notimplementederror_from_torch_is_not_mistaken_for_the_stub(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)

    def uses_unsupported_op(Q, K, V):
        raise NotImplementedError("The operator 'aten::foo' is not implemented for 'MPS'")

    with pytest.raises(CheckFailed, match=r"NotImplementedError: The operator 'aten::foo'.*\n  uses_unsupported_op\(Q=<.*\) raised it"):
        check_attention(uses_unsupported_op)


def test_errors_in_student_code_say_where_and_keep_their_traceback():
    def broken(max_len, d_model):
        return undefined_name  # noqa: F821

    with pytest.raises(CheckFailed) as failure:
        check_positional_encoding(broken)
    message = failure.value.args[0]
    assert message.splitlines()[0].endswith(": NameError: name 'undefined_name' is not defined")
    assert "broken(max_len=50, d_model=16) raised it, at line" in message and "in broken: return undefined_name" in message
    assert isinstance(failure.value.__cause__, NameError), "the error itself stays attached for debugging"


def test_a_failed_check_shows_its_message_not_a_traceback():
    def zeros(max_len, d_model):
        import torch
        return torch.zeros(max_len, d_model)

    with pytest.raises(CheckFailed) as failure:
        check_positional_encoding(zeros)
    rendered = failure.value._render_traceback_()
    assert len(rendered) == 1 and "expected" in rendered[0] and "got" in rendered[0]


def test_a_warning_from_the_students_code_goes_to_stdout_not_stderr(capsys):
    """nbgrader scores a graded cell that wrote to stderr as failed: a correct `float(loss)` that warns must not."""
    def warns_then_answers(max_len, d_model):
        warnings.warn("Converting a tensor with requires_grad=True to a scalar", UserWarning)
        return positional_encoding(max_len, d_model)

    check_positional_encoding(warns_then_answers)
    hidden_01.test_positional_encoding(warns_then_answers)
    printed = capsys.readouterr()
    assert printed.err == ""
    assert "⚠ UserWarning: Converting a tensor with requires_grad=True to a scalar" in printed.out
    assert "🎉 positional_encoding: all checks passed." in printed.out
