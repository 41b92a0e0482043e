"""A class for the similarity screen (issue 31): honest solutions written independently, copies made from them by
transformations that keep the grade, and public implementations as reference files.

Honest: the independent sources of `tests/wild` (the Annotated Transformer, nanoGPT, ARENA, d2l, hyunwoongko,
jadore801120: five or more per exercise where they cover it, and the first three plus d2l write attention in the
textbook idiom) and this project's loop solutions. Not honest, so not used as such: `loops_item`, `noisy` and
`torch_norms` are built on the loop solutions, `log_probabilities` on the Annotated Transformer. Copies: the whole
of a student's hand-ins, verbatim, with local names renamed, with comments and docstrings rewritten, with definitions
and methods reordered, with dead code added, and all four at once. Public implementations: each wild source's file
as a reference folder's file, as an instructor would keep nanoGPT's model.py.

Hand-ins are written with nbformat into `root/submitted/<student>/<assignment>/<assignment>.ipynb` of a folder that
holds the release notebooks, as grading lays them out; nothing is graded.
"""
from __future__ import annotations

import ast
import io
import shutil
import tokenize
from pathlib import Path

import nbformat

from autograder.paths import RELEASE, notebook_path
from course.about import NOTEBOOKS
from tests import wild

HONEST = ["annotated_transformer", "nanogpt", "arena", "d2l", "hyunwoongko", "jadore801120", "loops"]
PUBLIC = ["annotated_transformer", "nanogpt", "arena", "d2l", "hyunwoongko", "jadore801120"]  # reference files


def _lines(code: str) -> list[str]:
    return code.split("\n")


def _replace_tokens(code: str, replacements: list[tuple[int, int, int, str]]) -> str:
    """`code` with the characters at (row, start column, end column) replaced, right to left on each line."""
    lines = _lines(code)
    for row, start, end, text in sorted(replacements, reverse=True):
        line = lines[row - 1]
        lines[row - 1] = line[:start] + text + line[end:]
    return "\n".join(lines)


def _local_names(tree: ast.AST) -> set[str]:
    """Names a function assigns (not its parameters, not `self`): renaming them keeps the grade."""
    names = set()
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        parameters = {a.arg for a in function.args.args + function.args.kwonlyargs + function.args.posonlyargs}
        for node in ast.walk(function):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in parameters:
                names.add(node.id)
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    return names - defined - {"self"}


def renamed(code: str) -> str:
    """Every local variable renamed (`scores` -> `my_scores`), keyword arguments and attributes left alone."""
    names = _local_names(ast.parse(code))
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    replacements, depth = [], 0
    for i, token in enumerate(tokens):
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif token.type == tokenize.NAME and token.string in names:
            after_dot = i > 0 and tokens[i - 1].string == "."
            keyword = depth > 0 and i + 1 < len(tokens) and tokens[i + 1].string == "="
            if not after_dot and not keyword:
                replacements.append((token.start[0], token.start[1], token.end[1], "my_" + token.string))
    return _replace_tokens(code, replacements)


def comments_rewritten(code: str) -> str:
    """Every comment and docstring replaced by other words."""
    tree = ast.parse(code)
    lines = _lines(code)
    docstrings = [node.body[0] for node in ast.walk(tree)
                  if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
                  and isinstance(node.body[0].value.value, str)]
    tokens = list(tokenize.generate_tokens(io.StringIO(code).readline))
    code = _replace_tokens(code, [(t.start[0], t.start[1], t.end[1], "# my own note on this step")
                                  for t in tokens if t.type == tokenize.COMMENT])
    lines = _lines(code)
    for node in sorted(docstrings, key=lambda n: n.lineno, reverse=True):
        indent = " " * node.col_offset
        lines[node.lineno - 1:node.end_lineno] = [f'{indent}"""Written for the course; see the exercise."""']
    return "\n".join(lines)


def _segment(lines: list[str], node: ast.stmt) -> list[str]:
    start = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
    return lines[start - 1:node.end_lineno]


def reordered(code: str) -> str:
    """The cell's functions and classes in reverse order (imports first), each class's methods reversed too."""
    tree = ast.parse(code)
    lines = _lines(code)

    def statement(node: ast.stmt) -> list[str]:
        if not isinstance(node, ast.ClassDef):
            return _segment(lines, node)
        header = lines[min([d.lineno for d in node.decorator_list] + [node.lineno]) - 1:node.body[0].lineno - 1]
        methods = [s for s in node.body if isinstance(s, ast.FunctionDef)]
        others = [s for s in node.body if not isinstance(s, ast.FunctionDef)]
        body = [line for s in others for line in _segment(lines, s)]
        for method in reversed(methods):
            body += [""] + _segment(lines, method)
        return header + body

    imports = [s for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    rest = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    if not all(isinstance(s, (ast.FunctionDef, ast.ClassDef)) for s in rest):
        rest_order = rest  # a statement at the top level may use what precedes it: keep their order
    else:
        rest_order = list(reversed(rest))
    out = [line for s in imports for line in _segment(lines, s)]
    for node in rest_order:
        out += ["", ""] + statement(node)
    return "\n".join(out) + "\n"


DEAD_HELPER = '''

def _never_called(values):
    total = 0
    for value in values:
        total = total + value * 2
    return total
'''
OTHER_DEAD_HELPER = '''

class _Unused:
    def describe(self):
        return "kept for later"
'''


def dead_code_added(code: str, line: str = "unused_counter = 0", helper: str = DEAD_HELPER) -> str:
    """An unused statement at the top of every function body and a helper nobody calls (copiers each pick their
    own: the same dead code in two copies would be a passage those two share)."""
    tree = ast.parse(code)
    lines = _lines(code)
    inserts = []
    for function in (n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        body = function.body
        first = body[1] if len(body) > 1 and isinstance(body[0], ast.Expr) and isinstance(
            getattr(body[0], "value", None), ast.Constant) else body[0]
        inserts.append((first.lineno, "\n".join(" " * first.col_offset + part for part in line.split("\n"))))
    for lineno, text in sorted(inserts, reverse=True):
        lines.insert(lineno - 1, text)
    return "\n".join(lines) + helper


def everything(code: str) -> str:
    return dead_code_added(reordered(comments_rewritten(renamed(code))), "if False:\n    pass", OTHER_DEAD_HELPER)


# copier -> (the honest student copied, the transformation)
COPIES = {
    "copy_verbatim": ("arena", lambda code: code),
    "copy_renamed": ("loops", renamed),
    "copy_comments": ("d2l", comments_rewritten),
    "copy_reordered": ("hyunwoongko", reordered),
    "copy_dead_code": ("annotated_transformer", dead_code_added),
    "copy_everything": ("jadore801120", everything),
    "copy_of_public": ("nanogpt", lambda code: comments_rewritten(renamed(code))),  # nanoGPT, from its public file: attributed to the reference
}


def honest_cells() -> dict[str, dict[str, str]]:
    """student -> grade_id -> the code of each honest student's solution cells."""
    students = wild.students()
    return {name: {g: students[name].cell_source(g) for g in students[name].cells} for name in HONEST}


def write_hand_in(root: Path, student: str, cells: dict[str, str]) -> None:
    """The release notebooks with the solution cells `cells` covers filled in, handed in as `student`."""
    for assignment in NOTEBOOKS:
        notebook = nbformat.read(notebook_path(root / "release", assignment), as_version=4)
        filled = False
        for cell in notebook.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution") and grade_id in cells:
                cell.source, filled = cells[grade_id], True
        if filled:
            target = notebook_path(root / "submitted" / student, assignment)
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, target)


def build_class(root: Path) -> dict[str, str]:
    """The honest students and the copies handed in under `root` (which gets the release notebooks); returns
    copier -> the student copied."""
    if not (root / "release").exists():
        shutil.copytree(RELEASE, root / "release")
    honest = honest_cells()
    for student, cells in honest.items():
        write_hand_in(root, student, cells)
    for copier, (original, transform) in COPIES.items():
        write_hand_in(root, copier, {g: transform(code) for g, code in honest[original].items()})
    return {copier: original for copier, (original, _) in COPIES.items()}


def write_references(folder: Path) -> Path:
    """The public implementations as an instructor keeps them: each wild source's file, in `folder/public/`."""
    public = folder / "public"
    public.mkdir(parents=True, exist_ok=True)
    for name in PUBLIC:
        shutil.copyfile(Path(wild.__file__).parent / f"{name}.py", public / f"{name}.py")
    return public


def original_of(student: str, copies: dict[str, str]) -> str:
    """Whose code a student of the corpus handed in: its own, or the one it copied."""
    return copies.get(student, student)


def is_copy_pair(first: str, second: str, copies: dict[str, str]) -> bool:
    """Two students of the corpus hand in the same original's code (one copied the other, or both copied it)."""
    return original_of(first, copies) == original_of(second, copies)


def is_copied_from(student: str, reference: str, copies: dict[str, str]) -> bool:
    """The student's code is that of the public implementation in the reference file `public/<source>.py`."""
    return f"public/{original_of(student, copies)}.py" == reference


def precision_recall(flagged: set, positives: set) -> tuple[float, float]:
    hits = len(flagged & positives)
    return (hits / len(flagged) if flagged else 1.0), (hits / len(positives) if positives else 1.0)


def roc_auc(scores: dict, positives: set) -> float:
    """The chance that a positive scores above a negative (ties count half), over every pair in `scores`."""
    positive = [s for key, s in scores.items() if key in positives]
    negative = [s for key, s in scores.items() if key not in positives]
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative)) if positive and negative else 1.0
