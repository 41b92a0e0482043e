"""The benchmarks measure what the notebooks run: their configurations are the notebooks' own."""
import ast
import importlib.util

import nbformat

from autograder.paths import ROOT, SOURCE, notebook_path


def _bench(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cell(assignment: str, grade_id: str) -> ast.Module:
    notebook = nbformat.read(notebook_path(SOURCE, assignment), as_version=4)
    (cell,) = [c for c in notebook.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id]
    return ast.parse(cell.source)


def _literal(node: ast.expr):
    """A literal's value; anything else (a name, an expression) as its source text."""
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def _first_values(tree: ast.Module) -> dict:
    """Names assigned at the top level of a cell -> their values (see _literal); `dict(...)` calls as dicts."""
    values = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign):
            continue
        target, value = node.targets[0], node.value
        if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "dict":
            values[target.id] = {k.arg: _literal(k.value) for k in value.keywords if k.arg}
        elif isinstance(target, ast.Tuple):
            for name, item in zip(target.elts, value.elts):
                values[name.id] = _literal(item)
        elif isinstance(target, ast.Name):
            values[target.id] = _literal(value)
    return values


def _keyword(tree: ast.Module, function: str, name: str):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == function:
            return next(_literal(k.value) for k in node.keywords if k.arg == name)
    raise LookupError(function)


def test_shakespeare_bench_trains_the_notebooks_defaults():
    bench = _bench("shakespeare")
    train = _cell("07_shakespeare", "train_run")
    values = _first_values(train)
    assert values["CONFIG"] == {**bench.CONFIG, "max_len": "SEQ_LEN"}
    assert values["BATCH"] == bench.BATCH and values["MINUTES"] == 10
    assert _keyword(train, "train_language_model", "lr") == bench.LR
    assert _first_values(_cell("07_shakespeare", "baselines_run"))["SEQ_LEN"] == bench.SEQ_LEN


def test_reversal_bench_trains_the_notebooks_configuration():
    bench = _bench("reversal")
    values = _first_values(_cell("06_reversal", "train_run"))
    assert values["CONFIG"] == {**bench.CONFIG, "vocab_size": "VOCAB", "max_len": "2 * HALF"}
    assert (values["VOCAB"], values["HALF"]) == (bench.CONFIG["vocab_size"], bench.HALF)
