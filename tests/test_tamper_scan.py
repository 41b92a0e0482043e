"""The scan of a submission's own cells finds code that tampers with the checks, and stays quiet on honest code."""
import copy

import nbformat
import pytest

from autograder.grading import tamper_scan
from autograder.paths import ROOT, notebook_path
from course.about import NOTEBOOKS
from tests.adversarial import PAST_THE_SCAN, REBINDINGS

ASSIGNMENT = "01_positional_encoding"


def _with(extra: str) -> nbformat.NotebookNode:
    """The source notebook 01 with `extra` appended to the student's solution cell of positional_encoding."""
    notebook = copy.deepcopy(nbformat.read(notebook_path(ROOT / "source", ASSIGNMENT), as_version=4))
    cell = next(c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "positional_encoding")
    cell.source += "\n\n" + extra
    return notebook


@pytest.mark.parametrize("assignment", list(NOTEBOOKS))
@pytest.mark.parametrize("folder", ["source", "release"])
def test_the_course_itself_is_clean(folder, assignment):
    findings = tamper_scan.read(notebook_path(ROOT / folder, assignment))
    assert not findings, [f.text() for f in findings]


# 01's three checks, in the order of the notebook: a tampering line before them all costs all three.
ALL_CHECKS = {"check_positional_encoding", "check_offset_rotation", "check_token_and_position_embedding"}


@pytest.mark.parametrize("code, kind, affected", [
    ("torch.allclose = lambda *a, **k: True", "patches", ALL_CHECKS),
    ("import torch as T\nT.Tensor.__eq__ = None", "patches", ALL_CHECKS),
    ("setattr(torch, 'allclose', None)", "patches", ALL_CHECKS),
    ("import numpy as np\nnp.testing.assert_allclose = print", "patches", ALL_CHECKS),
    ("import builtins\nbuiltins.isinstance = lambda *a: True", "patches", ALL_CHECKS),
    ("__builtins__.len = None", "patches", ALL_CHECKS),
    ("import course.checks.report\ncourse.checks.report.fail = print", "patches", ALL_CHECKS),
    ("check_positional_encoding = lambda f: None", "rebinds", {"check_positional_encoding"}),
    ("def check_token_and_position_embedding(x):\n    pass", "rebinds", {"check_token_and_position_embedding"}),
    ("from course.checks.report import fail as check_positional_encoding", "rebinds", {"check_positional_encoding"}),
    ("def f():\n    global check_positional_encoding\n    check_positional_encoding = print", "rebinds", {"check_positional_encoding"}),
    ("for check_positional_encoding in [print]:\n    pass", "rebinds", {"check_positional_encoding"}),
    ("import autograder.authoring.reference.positional_encoding", "imports the grader", ALL_CHECKS),
    ("globals()['check_positional_encoding'] = print", "dynamic", ALL_CHECKS),
    ("exec('x = 1')", "dynamic", ALL_CHECKS),
    ("import importlib\nimportlib.import_module('torch')", "dynamic", ALL_CHECKS),
    ("import os\nos._exit(0)", "exits", set()),
    ("raise SystemExit", "exits", set()),
])
def test_tampering_is_found_and_costs_the_checks_after_it(code, kind, affected):
    notebook = _with(code)
    findings = tamper_scan.scan(notebook)
    assert [f.kind for f in findings] == [kind], [f.text() for f in findings]
    assert set(tamper_scan.affected_checks(notebook, findings)) == affected




@pytest.mark.parametrize("spelling", sorted(REBINDINGS))
def test_run_time_rebindings_are_named_and_cost_the_checks_after_them(spelling):
    """Each spelling that reaches around a plain assignment (tests/adversarial.py, where the grading run shows it
    would pass a wrong answer's check) is named in words the report shows, and costs every check after it."""
    code, named = REBINDINGS[spelling]
    notebook = _with(code)
    findings = tamper_scan.scan(notebook)
    assert any(named in f.detail for f in findings if f.costs_points()), [f.text() for f in findings]
    assert set(tamper_scan.affected_checks(notebook, findings)) == ALL_CHECKS


@pytest.mark.parametrize("code, named", [
    ("from gc import get_referents as referents\nreferents(torch)[0]['allclose'] = None", "`gc.get_referents`"),
    ("from sys import _getframe\n_getframe(0).f_globals['check_positional_encoding'] = print", "`sys._getframe`"),
    ("import importlib as loader\nloader.reload(torch)", "`importlib` as `loader`"),
    ("from sys import modules\nmodules.update(torch=None)", "`sys.modules`"),
    ("F = torch.nn.functional\nF.softmax = None", "reassigns `torch.nn.functional.softmax`"),
])
def test_more_roads_around_assignment_cost_the_checks(code, named):
    notebook = _with(code)
    findings = tamper_scan.scan(notebook)
    assert any(named in f.detail for f in findings if f.costs_points()), [f.text() for f in findings]
    assert set(tamper_scan.affected_checks(notebook, findings)) == ALL_CHECKS


@pytest.mark.parametrize("spelling", sorted(PAST_THE_SCAN))
def test_a_road_past_the_scan_is_only_suspect(spelling):
    """The scan cannot see every road (the grading run shows this one still earns nothing: the grader's verdict)."""
    code, named = PAST_THE_SCAN[spelling]
    findings = tamper_scan.scan(_with(code))
    assert findings and all(f.kind == tamper_scan.SUSPECT for f in findings)
    assert any(named in f.detail for f in findings)


@pytest.mark.parametrize("code, named", [
    ("def helper(module):\n    return module\nhelper(torch)", "uses `torch` as a value"),
    ("name = 'float' + '32'\ndtype = getattr(torch, name)", "looks up a name built at run time on `torch`"),
])
def test_suspect_uses_are_named_but_cost_nothing(code, named):
    notebook = _with(code)
    findings = tamper_scan.scan(notebook)
    assert [f.kind for f in findings] == [tamper_scan.SUSPECT] and named in findings[0].detail
    assert not tamper_scan.affected_checks(notebook, findings)


@pytest.mark.parametrize("code", [
    "import torch\nfrom torch import nn\nimport math",
    "import sys\nif 'google.colab' in sys.modules:\n    print('in Colab')",
    "F = torch.nn.functional\nweights = F.softmax(torch.ones(3), dim=-1)",
    "layer = nn.Linear\nlayer = layer(2, 2)\nlayer.weight = nn.Parameter(torch.ones(2, 2))",
    "dtype = getattr(torch, 'float32')",
    "class Config:\n    def __init__(self, **settings):\n        self.__dict__.update(settings)",
    "class Frozen(nn.Module):\n    def __setattr__(self, name, value):\n        super().__setattr__(name, value)",
    "torch.backends.cudnn.benchmark = True",
    "model = nn.Linear(2, 2)\nmodel.eval()\nmodel.weight.data.zero_()",
    "class Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        setattr(self, 'w', nn.Parameter(torch.ones(1)))",
    "def helper():\n    check_positional_encoding = 3  # a local name\n    return check_positional_encoding",
    "from course.checks import check_positional_encoding",
    "%matplotlib inline\nx = 1",
    "def f(:",  # does not parse: nothing to read
])
def test_honest_code_is_not_flagged(code):
    assert not tamper_scan.scan(_with(code))


def test_hidden_tests_are_never_among_the_affected_cells():
    notebook = _with("torch.allclose = lambda *a, **k: True")
    assert not any(grade_id.startswith("hidden_")
                   for grade_id in tamper_scan.affected_checks(notebook, tamper_scan.scan(notebook)))
