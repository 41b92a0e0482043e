"""Read a submission's own cells for code that tampers with grading, before trusting any check it passed.

The grader's process judges the hidden tests itself (see `autograder.hidden.observe`), so tampering in the
kernel cannot earn their points. The visible checks, though, run in the kernel: a cell that replaces a check,
patches torch, numpy, builtins or the course package, or rebinds the names the checks use can make a wrong
answer pass them. This module finds such code in the cells the student wrote (never in the instructor's locked
cells) and names the check cells after it that it could have affected; the grader zeroes those and flags the
submission. Code it cannot follow (exec, eval, compile, importlib, globals()) could do the same, so it costs the checks after it
too; early exits are only flagged (they cost what they skip by themselves).
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

import nbformat

PROTECTED_MODULES = ("torch", "numpy", "builtins", "math", "course", "autograder", "nbgrader", "sys", "os")
ALLOWED_PATCHES = ("torch.backends.",)  # settings students may change: torch.backends.cudnn.benchmark = True
DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "globals", "vars"}
EXIT_CALLS = {"exit", "quit", "_exit", "kill", "abort"}


@dataclass
class Finding:
    cell: int  # 1-based index of the cell in the notebook
    kind: str  # "rebinds", "patches", "imports the grader", "dynamic", "exits"
    detail: str
    check_names: set[str] = field(default_factory=set)  # the names of visible checks it may affect; "*" for all

    def costs_points(self) -> bool:
        return self.kind != "exits"

    def text(self) -> str:
        return f"cell {self.cell} {self.detail}"


def _is_test_cell(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("grade")) and not meta.get("solution")


def _is_instructor_cell(cell) -> bool:
    meta = cell.metadata.get("nbgrader", {})
    return bool(meta.get("locked")) or _is_test_cell(cell)


def _parse(source: str) -> ast.Module | None:
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]  # IPython magics
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


class _Aliases(ast.NodeVisitor):
    """Names bound to protected modules by imports: `import torch as T` makes `T` protected."""

    def __init__(self):
        self.modules: dict[str, str] = {"__builtins__": "builtins"}

    def visit_Import(self, node):
        for alias in node.names:
            root = alias.name.split(".")[0]
            if root in PROTECTED_MODULES:
                self.modules.setdefault(alias.asname or root, alias.name if alias.asname else root)

    def visit_ImportFrom(self, node):
        root = (node.module or "").split(".")[0]
        if root in PROTECTED_MODULES:
            for alias in node.names:
                self.modules.setdefault(alias.asname or alias.name, f"{node.module}.{alias.name}")


def _dotted(node) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


class _Scan(ast.NodeVisitor):
    def __init__(self, cell: int, aliases: dict[str, str], check_names: set[str]):
        self.cell, self.aliases, self.check_names = cell, aliases, check_names
        self.findings: list[Finding] = []
        self.depth = 0  # inside a function or class body
        self.globals: set[str] = set()

    def add(self, kind: str, detail: str, names: set[str]) -> None:
        self.findings.append(Finding(self.cell, kind, detail, names))

    def _protected(self, dotted: str | None) -> str | None:
        if not dotted:
            return None
        head, _, rest = dotted.partition(".")
        if head not in self.aliases:
            return None
        full = self.aliases[head] + (f".{rest}" if rest else "")
        return None if full.startswith(ALLOWED_PATCHES) else full

    def _bind(self, name: str, how: str) -> None:
        if self.depth and name not in self.globals:
            return
        if name in self.check_names:
            self.add("rebinds", f"{how} `{name}`, which a check cell calls", {name})
        elif name in self.aliases:
            self.add("patches", f"{how} `{name}` (the module {self.aliases[name]})", {"*"})

    def _store(self, target, how: str) -> None:
        if isinstance(target, ast.Name):
            self._bind(target.id, how)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for element in target.elts:
                self._store(element, how)
        elif isinstance(target, ast.Starred):
            self._store(target.value, how)
        elif isinstance(target, (ast.Attribute, ast.Subscript)):
            inner = target.value if isinstance(target, ast.Subscript) else target
            full = self._protected(_dotted(inner))
            if full:
                self.add("patches", f"{how} `{full}`", {"*"})

    def visit_Assign(self, node):
        for target in node.targets:
            self._store(target, "reassigns")
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        self._store(node.target, "reassigns")
        self.generic_visit(node)

    def visit_AnnAssign(self, node):
        self._store(node.target, "reassigns")
        self.generic_visit(node)

    def visit_NamedExpr(self, node):
        self._store(node.target, "reassigns")
        self.generic_visit(node)

    def visit_Delete(self, node):
        for target in node.targets:
            self._store(target, "deletes")
        self.generic_visit(node)

    def visit_For(self, node):
        self._store(node.target, "reassigns")
        self.generic_visit(node)

    def visit_With(self, node):
        for item in node.items:
            if item.optional_vars is not None:
                self._store(item.optional_vars, "reassigns")
        self.generic_visit(node)

    def visit_Global(self, node):
        self.globals.update(node.names)

    def _scope(self, node, kind: str):
        self._bind(node.name, f"defines a {kind}")
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    def visit_FunctionDef(self, node):
        self._scope(node, "function")

    def visit_AsyncFunctionDef(self, node):
        self._scope(node, "function")

    def visit_ClassDef(self, node):
        self._scope(node, "class")

    def _import(self, name: str, module: str) -> None:
        """An import binding `name` to `module`: harmless when it is what the notebook's own imports bind."""
        if self.aliases.get(name) != module:
            self._bind(name, f"imports `{module}` as")

    def visit_Import(self, node):
        for alias in node.names:
            if alias.name.split(".")[0] == "autograder":
                self.add("imports the grader", f"imports `{alias.name}`", {"*"})
            self._import(alias.asname or alias.name.split(".")[0], alias.name if alias.asname else alias.name.split(".")[0])
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        if (node.module or "").split(".")[0] == "autograder":
            self.add("imports the grader", f"imports from `{node.module}`", {"*"})
        for alias in node.names:
            self._import(alias.asname or alias.name, f"{node.module}.{alias.name}")
        self.generic_visit(node)

    def visit_Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else \
            node.func.attr if isinstance(node.func, ast.Attribute) else None
        dotted = _dotted(node.func) or ""
        if name in ("setattr", "delattr") and node.args:
            full = self._protected(_dotted(node.args[0]))
            if full:
                self.add("patches", f"calls {name} on `{full}`", {"*"})
                self.generic_visit(node)
                return
        if (isinstance(node.func, ast.Name) and name in DYNAMIC_CALLS) or dotted.startswith("importlib."):
            self.add("dynamic", f"runs code the grader cannot follow (`{dotted or name}`)", {"*"})
        elif name in EXIT_CALLS and (isinstance(node.func, ast.Name) or dotted.split(".")[0] in self.aliases):
            self.add("exits", f"ends the kernel early (`{dotted or name}`)", set())
        self.generic_visit(node)

    def visit_Raise(self, node):
        if _dotted(node.exc.func if isinstance(node.exc, ast.Call) else node.exc) in ("SystemExit", "KeyboardInterrupt"):
            self.add("exits", "ends the kernel early (raises SystemExit)", set())
        self.generic_visit(node)


def check_names(notebook) -> set[str]:
    """The names the test cells call: the checks, and the helpers of the hidden-test cells."""
    names = set()
    for cell in notebook.cells:
        if cell.cell_type == "code" and _is_test_cell(cell):
            tree = _parse(cell.source)
            for node in ast.walk(tree) if tree else []:
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                    names.add(node.func.id)
    return names


def scan(notebook) -> list[Finding]:
    """What the student's cells of `notebook` (an nbformat notebook) do to grading, in cell order."""
    aliases = _Aliases()  # the instructor's imports first: a student's import cannot redefine what they bind
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    for cell in sorted(code, key=lambda c: not _is_instructor_cell(c)):
        tree = _parse(cell.source)
        if tree:
            aliases.visit(tree)
    names = check_names(notebook)
    findings = []
    for index, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type != "code" or _is_instructor_cell(cell):
            continue
        tree = _parse(cell.source)
        if tree is None:
            continue
        scanner = _Scan(index, aliases.modules, names)
        scanner.visit(tree)
        findings += scanner.findings
    return findings


def affected_checks(notebook, findings: list[Finding]) -> dict[str, Finding]:
    """grade_id of each visible check cell a point-costing finding comes before (and could have affected) -> that finding."""
    affected = {}
    for index, cell in enumerate(notebook.cells, start=1):
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or not _is_test_cell(cell) or "BEGIN HIDDEN TESTS" in cell.source:
            continue  # hidden tests are judged in the grader's process, out of the kernel's reach
        tree = _parse(cell.source)
        called = {node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name)} if tree else set()
        for finding in findings:
            if finding.costs_points() and finding.cell < index and ("*" in finding.check_names or
                                                                    finding.check_names & called):
                affected.setdefault(meta["grade_id"], finding)
    return affected


def read(path) -> list[Finding]:
    return scan(nbformat.read(path, as_version=4))
