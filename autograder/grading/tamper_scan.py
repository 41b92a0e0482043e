"""Read a submission's own cells for code that tampers with grading, and name it for the instructor.

The grader's process judges the hidden tests itself (see `autograder.authoring.hidden.observe`), and a visible check's
point also needs that verdict (`autograder.grading.verify`), so tampering in the kernel cannot earn a point. It can still
try: a cell that replaces a check, patches torch, numpy, builtins or the course package, or rebinds the names the
checks use can make a wrong answer pass the checks in the kernel. This module finds such code in the cells the
student wrote (never in the instructor's locked cells), names it, and names the check cells after it that it
could have affected; the grader zeroes those and flags the submission. It reads the spellings that reach around a
plain assignment too: `setattr` or `exec` under another name, `__setattr__`, `__dict__`, `__code__`, `vars()`,
`sys.modules`, `importlib`, a module bound to another name. Code it cannot follow (exec, eval, compile, importlib,
globals()) could do the same, so it costs the checks after it too. Early exits, and uses that are only suspect
(a protected module passed on as a value, an attribute looked up by a name built at run time), are only flagged.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field

import nbformat

PROTECTED_MODULES = ("torch", "numpy", "builtins", "math", "course", "autograder", "nbgrader", "sys", "os")
ALLOWED_PATCHES = ("torch.backends.",)  # settings students may change: torch.backends.cudnn.benchmark = True
DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "globals", "vars"}  # the builtins, by any name
ATTRIBUTE_WRITERS = {"setattr", "delattr"}  # fine when called on an object of one's own, not when passed around
ATTRIBUTE_READERS = {"getattr", "hasattr"}
# Attributes that change a function, a module or a frame without an assignment the scan can read.
ESCAPE_ATTRIBUTES = {"__setattr__", "__delattr__", "__dict__", "__code__", "__globals__", "__closure__",
                     "__defaults__", "__kwdefaults__", "__builtins__", "f_globals", "f_locals", "f_builtins",
                     "_getframe", "get_referents", "get_referrers"}
MODULE_LOADERS = ("importlib",)  # modules that load or reload modules by name
OWN_OBJECTS = ("self", "super()")  # a class working on its own instances: `self.__dict__`, `super().__setattr__`
EXIT_CALLS = {"exit", "quit", "_exit", "kill", "abort"}
SUSPECT = "suspect"  # the kind of a finding that is named for the instructor but costs nothing


@dataclass
class Finding:
    cell: int  # 1-based index of the cell in the notebook
    kind: str  # "rebinds", "patches", "imports the grader", "dynamic", "exits", SUSPECT
    detail: str
    check_names: set[str] = field(default_factory=set)  # the names of visible checks it may affect; "*" for all

    def costs_points(self) -> bool:
        return self.kind not in ("exits", SUSPECT)

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
        self.module_names: set[str] = {"__builtins__"}  # the names that are protected modules themselves

    def visit_Import(self, node):
        for alias in node.names:
            root = alias.name.split(".")[0]
            if root in PROTECTED_MODULES:
                self.modules.setdefault(alias.asname or root, alias.name if alias.asname else root)
                self.module_names.add(alias.asname or root)

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


def _is_own_object(node) -> bool:
    return ast.unparse(node) in OWN_OBJECTS


def _constant_name(node) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


class _Scan(ast.NodeVisitor):
    def __init__(self, cell: int, aliases: dict[str, str], module_names: set[str], check_names: set[str],
                 bound: dict[str, str]):
        self.cell, self.aliases, self.module_names, self.check_names = cell, aliases, module_names, check_names
        self.findings: list[Finding] = []
        self.depth = 0  # inside a function or class body
        self.globals: set[str] = set()
        self.bound = bound  # names the student's cells so far bind to a protected object: `library = torch`
        self.parents: dict[int, ast.AST] = {}

    def run(self, tree: ast.Module) -> list[Finding]:
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        self.visit(tree)
        return self.findings

    def add(self, kind: str, detail: str, names: set[str]) -> None:
        finding = Finding(self.cell, kind, detail, names)
        if finding not in self.findings:
            self.findings.append(finding)

    def _protected(self, dotted: str | None) -> str | None:
        if not dotted:
            return None
        head, _, rest = dotted.partition(".")
        base = self.aliases.get(head) or self.bound.get(head)
        if base is None:
            return None
        full = base + (f".{rest}" if rest else "")
        return None if full.startswith(ALLOWED_PATCHES) else full

    def _bind(self, name: str, how: str) -> None:
        self.bound.pop(name, None)  # bound again: no longer what it was bound to before
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
        full = self._protected(_dotted(node.value)) if isinstance(node.value, (ast.Name, ast.Attribute)) else None
        if full:  # `library = torch`: what `library.allclose = ...` patches is torch's
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.bound[target.id] = full
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
            root = alias.name.split(".")[0]
            if root == "autograder":
                self.add("imports the grader", f"imports `{alias.name}`", {"*"})
            if root in MODULE_LOADERS and alias.asname:
                self.add("dynamic", f"imports `{alias.name}` as `{alias.asname}`, which loads modules again where "
                         "the scan cannot follow", {"*"})
            self._import(alias.asname or root, alias.name if alias.asname else root)
        self.generic_visit(node)

    def visit_ImportFrom(self, node):
        root = (node.module or "").split(".")[0]
        if root == "autograder":
            self.add("imports the grader", f"imports from `{node.module}`", {"*"})
        if root in MODULE_LOADERS:
            self.add("dynamic", f"imports from `{node.module}`, which loads modules again where the scan cannot "
                     "follow", {"*"})
        for alias in node.names:
            self._import(alias.asname or alias.name, f"{node.module}.{alias.name}")
            if f"{node.module}.{alias.name}" == "sys.modules":
                self.add("dynamic", "imports `sys.modules`, where a module can be swapped for another", {"*"})
            elif alias.name in ESCAPE_ATTRIBUTES:  # `from gc import get_referents`, `from sys import _getframe`
                self.add("dynamic", f"imports `{node.module}.{alias.name}`, a way to change a module, a function or "
                         "a frame that the scan cannot follow", {"*"})
        self.generic_visit(node)

    def visit_Call(self, node):
        name = node.func.id if isinstance(node.func, ast.Name) else \
            node.func.attr if isinstance(node.func, ast.Attribute) else None
        dotted = _dotted(node.func) or ""
        called_by_name = isinstance(node.func, ast.Name)
        target = self._protected(_dotted(node.args[0])) if node.args else None
        if called_by_name and name in ATTRIBUTE_WRITERS and target:
            self.add("patches", f"calls {name} on `{target}`", {"*"})
        if called_by_name and name in ATTRIBUTE_WRITERS | ATTRIBUTE_READERS and len(node.args) > 1:
            looked_up = _constant_name(node.args[1])
            if looked_up in ESCAPE_ATTRIBUTES | ATTRIBUTE_WRITERS | DYNAMIC_CALLS:
                self.add("dynamic", f"looks up `{looked_up}` by its name with {name}, which the scan cannot follow",
                         {"*"})
            elif looked_up is None and target:
                self.add(SUSPECT, f"looks up a name built at run time on `{target}` with {name}", set())
        if dotted.split(".")[0] in MODULE_LOADERS:
            self.add("dynamic", f"runs code the grader cannot follow (`{dotted}`)", {"*"})
        elif name in EXIT_CALLS and (called_by_name or dotted.split(".")[0] in self.aliases):
            self.add("exits", f"ends the kernel early (`{dotted or name}`)", set())
        self.generic_visit(node)

    def visit_Name(self, node):
        parent = self.parents.get(id(node))
        called = isinstance(parent, ast.Call) and parent.func is node
        if not isinstance(node.ctx, ast.Load):
            return
        if node.id in DYNAMIC_CALLS:
            self.add("dynamic", f"runs code the grader cannot follow (`{node.id}`)", {"*"})
        elif node.id in ATTRIBUTE_WRITERS and not called:
            self.add("dynamic", f"uses `{node.id}` as a value (under another name, or passed on), which the scan "
                     "cannot follow", {"*"})
        elif self._protected(node.id) == "sys.modules":
            self.add("dynamic", "uses `sys.modules`, where a module can be swapped for another", {"*"})
        elif node.id in self.module_names and not self._harmless_module_use(node, parent):
            self.add(SUSPECT, f"uses `{self.aliases.get(node.id, node.id)}` as a value (passed on, or bound to "
                     "another name)", set())

    def _harmless_module_use(self, node, parent) -> bool:
        """`torch.zeros`, `torch(...)`, and the object of setattr/getattr, which their own rules judge."""
        if isinstance(parent, ast.Attribute) or (isinstance(parent, ast.Call) and parent.func is node):
            return True
        return (isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.args
                and parent.args[0] is node and parent.func.id in ATTRIBUTE_WRITERS | ATTRIBUTE_READERS)

    def visit_Attribute(self, node):
        if node.attr in ESCAPE_ATTRIBUTES and not _is_own_object(node.value):
            self.add("dynamic", f"reaches `{node.attr}`, a way to change a module, a function or a frame that the "
                     "scan cannot follow", {"*"})
        if isinstance(node.value, ast.Name) and self._protected(_dotted(node)) == "sys.modules" \
                and not self._membership_test(node):
            self.add("dynamic", "uses `sys.modules`, where a module can be swapped for another", {"*"})
        self.generic_visit(node)

    def _membership_test(self, node) -> bool:
        """`"google.colab" in sys.modules`: a read that changes nothing."""
        parent = self.parents.get(id(node))
        return isinstance(parent, ast.Compare) and node in parent.comparators and \
            all(isinstance(op, (ast.In, ast.NotIn)) for op in parent.ops)

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
    findings, bound = [], {}
    for index, cell in enumerate(notebook.cells, start=1):
        if cell.cell_type != "code" or _is_instructor_cell(cell):
            continue
        tree = _parse(cell.source)
        if tree is None:
            continue
        findings += _Scan(index, aliases.modules, aliases.module_names, names, bound).run(tree)
    return findings


def affected_checks(notebook, findings: list[Finding]) -> dict[str, list[Finding]]:
    """grade_id of each visible check cell a point-costing finding comes before (and could have affected) -> those
    findings, in cell order."""
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
                affected.setdefault(meta["grade_id"], []).append(finding)
    return affected


def read(path) -> list[Finding]:
    return scan(nbformat.read(path, as_version=4))
