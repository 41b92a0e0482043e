"""Code in one canonical form, so that a copy reads the same as its original however it was reworded.

A cell is parsed and its syntax tree rewritten into one form for each thing Python lets a person say several ways:
- what does not run or says nothing: comments, docstrings, `print` calls, imports, annotations, dead branches
  (`if False:`), assignments nobody reads, unused `_private` helpers;
- API forms: `a @ b`, `torch.matmul(a, b)`, `a.matmul(b)`, `torch.bmm` are one form; `.view` and `.reshape`;
  `torch.softmax(x, d)`, `F.softmax(x, dim=d)` and `x.softmax(d)` (any function that is also a tensor method);
  `.mT` and `.transpose(-1, -2)`; `.size(i)` and `.shape[i]`; `math.sqrt(x)`, `x.sqrt()` and `x ** 0.5`;
  `float("-inf")` and `-math.inf`; `torch.concat` and `torch.cat`; keyword or positional arguments;
  `x += y` and `x = x + y`; `== None` and `is None`; `torch.where(m, v, x)` and `x.masked_fill(m, v)`;
  `x[:, None]` and `x.unsqueeze(1)` (`x[None]`, `x[..., None]` alike); `x.to(torch.float32)` and `x.float()` (the
  other dtypes with a method alike); `.contiguous()` or not; `nn.Linear`'s, `nn.LayerNorm`'s, `nn.Dropout`'s and
  `nn.Embedding`'s defaults written out or not;
- structure: a loop that appends and a comprehension; a conditional expression and an `if`/`else` that assigns
  one name; a value held in a temporary used once and the value written in place; `a, b = x, y` and two assignments; the operands of `+`, `*`,
  `==` in either order; definitions and methods in any order;
- names: every name the cell binds (locals, parameters, its own functions and classes, attributes of `self`) is
  `V`; what it uses from elsewhere (`torch`, `len`, `masked_attention`, a tensor method) keeps its name; strings
  are `S`.
The tree is printed again with `ast.unparse` and cut into tokens, so the spacing, brackets and quotes of the code
handed in, and whether it was itself re-printed, change nothing. Every token remembers the lines of the code handed
in that it came from, so the pair pages mark the student's own lines. Code that does not parse is cut into
Python's tokens as it stands, names and strings made anonymous the same way.
"""
from __future__ import annotations

import ast
import builtins
import io
import tokenize
from collections import Counter
from dataclasses import dataclass

# Modules as the canonical form names them, whatever a cell imported them as; the aliases a notebook commonly
# has in scope without importing them in the cell.
DEFAULT_ALIASES = {"torch": "torch", "nn": "torch.nn", "F": "torch.nn.functional", "math": "math", "np": "numpy",
                   "numpy": "numpy", "re": "re", "Counter": "collections.Counter"}
FUNCTION_MODULES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg")
# Functions of those modules that are also tensor methods: `torch.X(t, ...)` is written `t.X(...)`.
TENSOR_METHODS = frozenset("""
abs add all any argmax argmin argsort bmm ceil chunk clamp clip clone contiguous cos cumsum detach diag div eq exp
expand flatten flip floor gather ge gelu gt isnan le log log_softmax logsumexp lt masked_fill matmul max mean min mm
mul ne neg norm outer permute pow prod relu repeat repeat_interleave reshape roll round rsqrt sigmoid sign sin
softmax sort split sqrt square squeeze std sub sum swapaxes swapdims t tanh tile topk transpose tril triu unbind
unsqueeze var view where
""".split())
METHOD_SYNONYMS = {"reshape": "view", "swapaxes": "transpose", "swapdims": "transpose", "concat": "cat",
                   "concatenate": "cat", "as_tensor": "tensor", "inference_mode": "no_grad", "clip": "clamp",
                   "multiply": "mul", "subtract": "sub", "divide": "div", "true_divide": "div", "absolute": "abs"}
MATMUL = {"matmul", "mm", "bmm"}
# `x.to(dtype)` with one of these is the method named (`x.to(torch.float32)` is `x.float()`).
DTYPE_METHODS = {"torch.float32": "float", "torch.float": "float", "torch.float64": "double", "torch.double": "double",
                 "torch.int64": "long", "torch.long": "long", "torch.int32": "int", "torch.int": "int",
                 "torch.float16": "half", "torch.half": "half", "torch.bool": "bool"}
# Arguments a constructor takes by default, by position (keywords already put last): written out or not, one form.
DEFAULTS = {"torch.nn.Linear": {2: True}, "torch.nn.LayerNorm": {1: 1e-05, 2: True}, "torch.nn.Dropout": {0: 0.5},
            "torch.nn.Embedding": {2: None}}
INFINITY = "inf"
COMMUTATIVE = (ast.Add, ast.Mult, ast.BitAnd, ast.BitOr, ast.BitXor)
BUILTINS = frozenset(dir(builtins))
BINDING = "V"  # every name the cell binds
STRING = "S"  # every string


@dataclass(frozen=True)
class Canonical:
    """A cell's canonical tokens and, for each, the lines of the code handed in it came from (counted from 1)."""
    tokens: tuple[str, ...]
    lines: tuple[frozenset[int], ...]
    parsed: bool  # False: the code did not parse and was cut into its tokens as it stands


# ---- small helpers


def _dotted(node: ast.AST) -> str | None:
    """`torch.nn.functional.softmax` for that attribute chain, None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id, *reversed(parts)])
    return None


def _chain(dotted: str, like: ast.AST) -> ast.AST:
    parts = dotted.split(".")
    node: ast.AST = ast.copy_location(ast.Name(parts[0], ast.Load()), like)
    for part in parts[1:]:
        node = ast.copy_location(ast.Attribute(node, part, ast.Load()), like)
    return node


def _number(node: ast.AST, value) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return isinstance(node.operand, ast.Constant) and type(node.operand.value) in (int, float) \
            and -node.operand.value == value
    return isinstance(node, ast.Constant) and type(node.value) in (int, float) and node.value == value


def _none(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _is_default(node: ast.AST, default) -> bool:
    """Whether argument `node` is the constant `default` (`Ellipsis`: no default at that position)."""
    return default is not Ellipsis and isinstance(node, ast.Constant) and type(node.value) is type(default) \
        and node.value == default


def _blocks(node: ast.AST):
    """Every statement list under `node`, as (holder, field name)."""
    for holder in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(holder, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield holder, field


def _set_block(holder: ast.AST, field: str, statements: list[ast.stmt], was: list[ast.stmt]) -> None:
    """`holder.field = statements`; a body left empty holds `pass` (an `else` may be empty)."""
    if not statements and field == "body" and was:
        statements = [_with_raw(ast.Pass(), was[0])]
    setattr(holder, field, statements)


def _loads(node: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))


def _stores(node: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name
               and not isinstance(n.ctx, ast.Load))


def _raw(statement: ast.stmt) -> set[int]:
    """The lines of the code handed in a statement stands for (a compound statement: its header)."""
    return getattr(statement, "raw_lines", set())


def _with_raw(new: ast.stmt, *olds: ast.stmt) -> ast.stmt:
    ast.copy_location(new, olds[0])
    new.raw_lines = set().union(*(_raw(o) for o in olds))
    return new


def _mark_lines(tree: ast.Module) -> None:
    """Give every statement the lines it was written on (a compound statement: up to its body)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            first = min([d.lineno for d in getattr(node, "decorator_list", [])] + [node.lineno])
            body = getattr(node, "body", None)
            last = body[0].lineno - 1 if isinstance(body, list) and body and isinstance(body[0], ast.stmt) \
                else node.end_lineno
            node.raw_lines = set(range(first, max(first, last) + 1))


# ---- what does not run or says nothing


def _says_nothing(statement: ast.stmt) -> bool:
    if isinstance(statement, ast.Pass) or isinstance(statement, (ast.Import, ast.ImportFrom)):
        return True
    if isinstance(statement, ast.Expr):
        value = statement.value
        return isinstance(value, (ast.Constant, ast.JoinedStr)) or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "print")
    return False


def _aliases(tree: ast.Module) -> dict[str, str]:
    """name -> module (or module member) for every import of the cell, over the usual aliases."""
    found = dict(DEFAULT_ALIASES)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else \
                    alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _dropped(tree: ast.Module) -> None:
    """Comments are gone with the parse; docstrings, prints, imports, `pass`, annotations and dead branches too."""
    for holder, field in list(_blocks(tree)):
        block = getattr(holder, field)
        kept = []
        for statement in block:
            if isinstance(statement, ast.If) and isinstance(statement.test, ast.Constant):
                kept += statement.body if statement.test.value else statement.orelse
            elif isinstance(statement, ast.If) and isinstance(statement.test, ast.UnaryOp) \
                    and isinstance(statement.test.op, ast.Not) and isinstance(statement.test.operand, ast.Constant):
                kept += statement.orelse if statement.test.operand.value else statement.body
            elif not _says_nothing(statement):
                kept.append(statement)
        _set_block(holder, field, kept, block)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
            for argument in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
                argument.annotation = None
            for extra in (node.args.vararg, node.args.kwarg):
                if extra:
                    extra.annotation = None


# ---- API forms


class _Api(ast.NodeTransformer):
    """Each API form of `METHOD_SYNONYMS`, `TENSOR_METHODS` and the rest in one way (see the module's docstring)."""

    def __init__(self, aliases: dict[str, str], bound: set[str]):
        self.aliases = {name: module for name, module in aliases.items() if name not in bound}

    def module_of(self, node: ast.AST) -> str | None:
        """The module path an attribute chain names (`F.softmax` -> `torch.nn.functional.softmax`), if it does."""
        dotted = _dotted(node)
        if dotted is None:
            return None
        root, _, rest = dotted.partition(".")
        if root not in self.aliases:
            return None
        return self.aliases[root] + ("." + rest if rest else "")

    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Load) and node.id in self.aliases:
            return _chain(self.aliases[node.id], node)
        return node

    def visit_Attribute(self, node):
        full = self.module_of(node)
        if full is not None and isinstance(node.ctx, ast.Load):
            if full in ("math.inf", "torch.inf", "numpy.inf"):
                return ast.copy_location(ast.Name(INFINITY, ast.Load()), node)
            module, _, name = full.rpartition(".")
            return _chain(f"{module}.{METHOD_SYNONYMS.get(name, name)}", node)
        self.generic_visit(node)
        if node.attr == "mT" and isinstance(node.ctx, ast.Load):
            return self.transposed(node.value, node)
        if node.attr in METHOD_SYNONYMS:
            node.attr = METHOD_SYNONYMS[node.attr]
        return node

    @staticmethod
    def transposed(value: ast.AST, like: ast.AST) -> ast.Call:
        minus = [ast.UnaryOp(ast.USub(), ast.Constant(n)) for n in (2, 1)]
        return ast.copy_location(ast.Call(ast.Attribute(value, "transpose", ast.Load()), minus, []), like)

    def visit_Subscript(self, node):
        """`x[None]`, `x[:, None]`, `x[..., None]`: `x.unsqueeze(0)`, `x.unsqueeze(1)`, `x.unsqueeze(-1)`."""
        self.generic_visit(node)
        index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not isinstance(node.ctx, ast.Load) or not _none(index[-1]):
            return node
        before = index[:-1]
        if all(isinstance(i, ast.Slice) and not (i.lower or i.upper or i.step) for i in before):
            axis = ast.Constant(len(before))
        elif len(before) == 1 and isinstance(before[0], ast.Constant) and before[0].value is Ellipsis:
            axis = ast.UnaryOp(ast.USub(), ast.Constant(1))
        else:
            return node
        return ast.copy_location(ast.Call(ast.Attribute(node.value, "unsqueeze", ast.Load()), [axis], []), node)

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and _none(node.comparators[0]):
            if isinstance(node.ops[0], ast.Eq):
                node.ops = [ast.Is()]
            elif isinstance(node.ops[0], ast.NotEq):
                node.ops = [ast.IsNot()]
        return node

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.Pow) and _number(node.right, 0.5):
            node.right = ast.Constant(0.5)
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        # keyword arguments by position (their names are the callee's, not the student's)
        node.args = node.args + [k.value for k in node.keywords if k.arg is not None]
        node.keywords = [k for k in node.keywords if k.arg is None]
        func = node.func
        full = _dotted(func)
        if full in ("float", "torch.tensor") and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                and str(node.args[0].value).lower() in ("inf", "+inf", "infinity"):
            return ast.copy_location(ast.Name(INFINITY, ast.Load()), node)
        if full in ("float", "torch.tensor") and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) \
                and str(node.args[0].value).lower() in ("-inf", "-infinity"):
            return ast.copy_location(ast.UnaryOp(ast.USub(), ast.Name(INFINITY, ast.Load())), node)
        if full == "super" and node.args:
            node.args = []
            return node
        if full in DEFAULTS:
            while node.args and _is_default(node.args[-1], DEFAULTS[full].get(len(node.args) - 1, Ellipsis)):
                node.args.pop()
        if full == "torch.where" and len(node.args) == 3:  # where(m, v, x) keeps x but where m: x.masked_fill(m, v)
            func = ast.Attribute(node.args[2], "masked_fill", ast.Load())
            return ast.copy_location(ast.Call(func, node.args[:2], []), node)
        if full in ("math.sqrt", "numpy.sqrt") and len(node.args) == 1:
            return ast.copy_location(ast.BinOp(node.args[0], ast.Pow(), ast.Constant(0.5)), node)
        if full is not None and full.rpartition(".")[0] in FUNCTION_MODULES and node.args:
            name = full.rpartition(".")[2]
            if name in MATMUL and len(node.args) == 2:
                return ast.copy_location(ast.BinOp(node.args[0], ast.MatMult(), node.args[1]), node)
            if name in TENSOR_METHODS and not isinstance(node.args[0], ast.Constant):
                func = ast.Attribute(node.args[0], name, ast.Load())
                node = ast.copy_location(ast.Call(func, node.args[1:], node.keywords), node)
                full = None
        if isinstance(func, ast.Attribute) and not (full and full.partition(".")[0] in ("torch", "numpy", "math")):
            owner, method = func.value, func.attr
            if method in MATMUL and len(node.args) == 1:
                return ast.copy_location(ast.BinOp(owner, ast.MatMult(), node.args[0]), node)
            if method == "contiguous" and not node.args:  # a memory layout: nothing a reader sees
                return owner
            if method in ("to", "type") and len(node.args) == 1 and _dotted(node.args[0]) in DTYPE_METHODS:
                func = ast.Attribute(owner, DTYPE_METHODS[_dotted(node.args[0])], ast.Load())
                return ast.copy_location(ast.Call(func, [], []), node)
            if method == "sqrt" and not node.args:
                return ast.copy_location(ast.BinOp(owner, ast.Pow(), ast.Constant(0.5)), node)
            if method == "size":
                shape = ast.Attribute(owner, "shape", ast.Load())
                return ast.copy_location(ast.Subscript(shape, node.args[0], ast.Load()) if node.args else shape, node)
            if method == "dim" and not node.args:
                return ast.copy_location(ast.Attribute(owner, "ndim", ast.Load()), node)
            if method == "transpose" and len(node.args) == 2:
                if all(_number(a, -1) or _number(a, -2) for a in node.args):
                    return self.transposed(owner, node)
                node.args = sorted(node.args, key=ast.dump)
        return node


# ---- structure


def _function_scopes(tree: ast.Module):
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _statements_simplified(tree: ast.Module) -> None:
    """`x += y`, annotated and tuple assignments, conditional assignments and `x = x` in one form each (the
    innermost blocks first, so that an `if` holds its simplified body)."""
    for holder, field in reversed(list(_blocks(tree))):
        out, block = [], getattr(holder, field)
        for statement in block:
            if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
                target = ast.Name(statement.target.id, ast.Store())
                value = ast.BinOp(ast.Name(statement.target.id, ast.Load()), statement.op, statement.value)
                statement = _with_raw(ast.Assign([target], ast.copy_location(value, statement)), statement)
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                statement = _with_raw(ast.Assign([statement.target], statement.value), statement)
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                    and isinstance(statement.targets[0], ast.Tuple) and isinstance(statement.value, ast.Tuple) \
                    and len(statement.targets[0].elts) == len(statement.value.elts) \
                    and not any(isinstance(e, ast.Starred) for e in statement.targets[0].elts + statement.value.elts):
                out += [_with_raw(ast.Assign([t], v), statement)
                        for t, v in zip(statement.targets[0].elts, statement.value.elts)]
                continue
            assigned = _branch_assignment(statement)
            if assigned:
                statement = assigned
            if not _self_assignment(statement):
                out.append(statement)
        _set_block(holder, field, out, block)


def _branch_assignment(statement: ast.stmt) -> ast.Assign | None:
    """`if c: x = a` / `else: x = b` (or no `else`: `x` stays) as `x = a if c else b`, None for anything else."""
    if not (isinstance(statement, ast.If) and len(statement.body) == 1 and len(statement.orelse) <= 1):
        return None
    yes = statement.body[0]
    no = statement.orelse[0] if statement.orelse else None
    if not (isinstance(yes, ast.Assign) and len(yes.targets) == 1 and isinstance(yes.targets[0], ast.Name)):
        return None
    name = yes.targets[0].id
    if no is None:
        otherwise: ast.expr = ast.Name(name, ast.Load())
    elif isinstance(no, ast.Assign) and len(no.targets) == 1 and isinstance(no.targets[0], ast.Name) \
            and no.targets[0].id == name:
        otherwise = no.value
    else:
        return None
    value = ast.copy_location(ast.IfExp(statement.test, yes.value, otherwise), statement)
    merged = _with_raw(ast.Assign([ast.Name(name, ast.Store())], value), statement, yes, *([no] if no else []))
    return merged


def _self_assignment(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
        and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.Name) \
        and statement.targets[0].id == statement.value.id


class _Comprehensions(ast.NodeTransformer):
    """`list(...)` of a comprehension and a generator in a call as the list comprehension itself."""

    def visit_GeneratorExp(self, node):
        self.generic_visit(node)
        return ast.copy_location(ast.ListComp(node.elt, node.generators), node)

    def visit_Call(self, node):
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "list" and len(node.args) == 1 \
                and isinstance(node.args[0], ast.ListComp):
            return node.args[0]
        return node


def _appended(loop: ast.stmt, target: str) -> tuple[ast.expr, list[ast.expr]] | None:
    """(the value, the conditions) of a `for` whose body only appends to `target`, under `if`s."""
    if not isinstance(loop, ast.For) or loop.orelse or len(loop.body) != 1:
        return None
    body, conditions = loop.body[0], []
    while isinstance(body, ast.If) and not body.orelse and len(body.body) == 1:
        conditions.append(body.test)
        body = body.body[0]
    call = body.value if isinstance(body, ast.Expr) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "append" \
            and isinstance(call.func.value, ast.Name) and call.func.value.id == target and len(call.args) == 1:
        return call.args[0], conditions
    return None


def _loops_as_comprehensions(tree: ast.Module) -> None:
    """`r = []` then `for x in xs: r.append(f(x))` (under `if`s or not) as `r = [f(x) for x in xs]`."""
    for holder, field in list(_blocks(tree)):
        block = getattr(holder, field)
        i = 0
        while i + 1 < len(block):
            statement, loop = block[i], block[i + 1]
            if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                    and isinstance(statement.targets[0], ast.Name) and isinstance(statement.value, ast.List) \
                    and not statement.value.elts:
                found = _appended(loop, statement.targets[0].id)
                if found:
                    value = ast.ListComp(found[0], [ast.comprehension(loop.target, loop.iter, found[1], 0)])
                    merged = _with_raw(ast.Assign(statement.targets, ast.copy_location(value, loop)), statement, loop)
                    merged.raw_lines |= {line for s in ast.walk(loop) if isinstance(s, ast.stmt) for line in _raw(s)}
                    block[i:i + 2] = [merged]
                    continue
            i += 1


def _unused_removed(tree: ast.Module) -> None:
    """Assignments to a name nothing reads (in a function), and `_private` helpers and values the cell never uses."""
    for function in _function_scopes(tree):
        read = _load_counts(function)
        for holder, field in list(_blocks(function)):
            block = getattr(holder, field)
            kept = [s for s in block if not (
                isinstance(s, ast.Assign) and all(isinstance(t, ast.Name) for t in s.targets)
                and all(read[t.id] == 0 for t in s.targets) and _harmless(s.value))]
            _set_block(holder, field, kept, block)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    tree.body = [s for s in tree.body if not _unused_private(s, used)] or tree.body


def _harmless(value: ast.expr) -> bool:
    """A value whose computing changes nothing else: no call but of a builtin, no attribute store."""
    for node in ast.walk(value):
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in BUILTINS):
            return False
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)):
            return False
    return True


def _unused_private(statement: ast.stmt, used: set[str]) -> bool:
    if isinstance(statement, (ast.FunctionDef, ast.ClassDef)):
        return statement.name.startswith("_") and statement.name not in used
    if isinstance(statement, ast.Assign):
        names = [t.id for t in statement.targets if isinstance(t, ast.Name)]
        return len(names) == len(statement.targets) and all(n.startswith("_") and n not in used for n in names) \
            and _harmless(statement.value)
    return False


_NO_MOVE = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _temporaries_inlined(tree: ast.Module) -> None:
    """A name assigned once and read once, in a later statement of the same block before anything assigns it
    again, written in place of its one use (over and over, so a chain of temporaries folds into one expression)."""
    for function in _function_scopes(tree):
        total = _load_counts(function)
        for holder, field in list(_blocks(function)):
            block = getattr(holder, field)
            loads = [_load_counts(s) for s in block]
            stores = [_stored(s) for s in block]
            in_block = sum(loads, Counter())
            i = 0
            while i < len(block):
                if not _inline_at(holder is function, total, block, loads, stores, in_block, i):
                    i += 1


def _load_counts(node: ast.AST) -> Counter:
    return Counter(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))


def _stored(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _inline_at(whole_body: bool, total: Counter, block: list[ast.stmt], loads: list[Counter], stores: list[set],
               in_block: Counter, i: int) -> bool:
    """Inline the temporary `block[i]` assigns, if it is one (see `_temporaries_inlined`); the counts of loads
    and stores follow."""
    statement = block[i]
    if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)):
        return False
    name = statement.targets[0].id
    read, end = 0, len(block) - 1
    for j in range(i + 1, len(block)):
        read += loads[j][name]
        if name in stores[j]:
            end = j
            break
    if read != 1:
        return False
    if not whole_body and total[name] != in_block[name]:
        return False  # read outside this block too (after the loop it is in, say)
    j = next(j for j in range(i + 1, end + 1) if loads[j][name])
    target = block[j]
    if not isinstance(target, (ast.Assign, ast.Return, ast.Expr)) or target.value is None:
        return False  # never into a loop or a branch: it would run another number of times
    uses = [n for n in ast.walk(target.value) if isinstance(n, ast.Name) and n.id == name]
    if len(uses) != 1 or any(isinstance(n, _NO_MOVE) and _loads(n, name) for n in ast.walk(target.value)):
        return False
    target.value = _Replace(uses[0], statement.value).visit(target.value)
    target.raw_lines = _raw(target) | _raw(statement)
    loads[j] = _load_counts(target)
    total[name] -= 1
    in_block[name] -= 1
    del block[i], loads[i], stores[i]
    return True


class _Replace(ast.NodeTransformer):
    def __init__(self, old: ast.AST, new: ast.AST):
        self.old, self.new = old, new

    def visit(self, node):
        return self.new if node is self.old else super().visit(node)


# ---- names, and the order of what can be in any order


def _bound(tree: ast.Module) -> set[str]:
    """Every name the cell binds: assigned, a parameter, a function or class it defines, a loop's variable."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
    return names


class _Anonymous(ast.NodeTransformer):
    """Bound names, `self`'s attributes and strings made anonymous."""

    def __init__(self, bound: set[str]):
        self.bound = bound

    def visit_Name(self, node):
        if node.id in self.bound and node.id != "self":
            node.id = BINDING
        return node

    def visit_arg(self, node):
        if node.arg != "self":
            node.arg = BINDING
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.name = BINDING if not (node.name.startswith("__") and node.name.endswith("__")) else node.name
        return node

    def visit_ClassDef(self, node):
        self.generic_visit(node)
        node.name = BINDING
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        root = node.value
        while isinstance(root, ast.Attribute):
            root = root.value
        if isinstance(root, ast.Name) and root.id in ("self", "cls"):
            node.attr = BINDING
        return node

    def visit_Constant(self, node):
        if isinstance(node.value, (str, bytes)):
            return ast.copy_location(ast.Constant(STRING), node)
        return node

    def visit_JoinedStr(self, node):
        return ast.copy_location(ast.Constant(STRING), node)


class _Ordered(ast.NodeTransformer):
    """The operands of commutative operators, and definitions in a module or class, in one order."""

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, COMMUTATIVE):
            node.left, node.right = sorted((node.left, node.right), key=ast.unparse)
        return node

    def visit_Compare(self, node):
        self.generic_visit(node)
        if len(node.ops) == 1 and isinstance(node.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot)):
            node.left, node.comparators[0] = sorted((node.left, node.comparators[0]), key=ast.unparse)
        return node

    def visit_BoolOp(self, node):
        self.generic_visit(node)
        node.values = sorted(node.values, key=ast.unparse)
        return node


def _definitions_ordered(tree: ast.Module) -> None:
    for holder in [tree] + [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        definitions = sorted((s for s in holder.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))),
                             key=ast.unparse)
        others = [s for s in holder.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))]
        holder.body = others + definitions


# ---- the whole


def canonical_tree(code: str | ast.Module, surface: bool = False, aliases: dict[str, str] | None = None
                   ) -> ast.Module:
    """The canonical syntax tree of `code` (raises SyntaxError, ValueError or RecursionError when it does not
    parse; a tree given is changed in place). Its statements carry `raw_lines`, the lines of `code` each stands for.
    With `surface`, only what a copier changes without rewriting anything is made one: comments, docstrings, prints,
    imports, dead code, names, strings, the order of definitions and the printing (the API forms and the structure
    stay as written). `aliases`: the imports in force, when `code` is a part of a file (`canonical`'s `pieces`)."""
    tree = ast.parse(code) if isinstance(code, str) else code
    _mark_lines(tree)
    aliases = {**_aliases(tree), **(aliases or {})}
    _dropped(tree)
    if not surface:
        tree = _Api(aliases, _bound(tree)).visit(tree)
        tree = _Comprehensions().visit(tree)
    _unused_removed(tree)
    if not surface:
        for _ in range(2):  # each makes room for the others: an inlined temporary leaves an `if` one assignment
            _statements_simplified(tree)
            _loops_as_comprehensions(tree)
            _temporaries_inlined(tree)
    tree = _Anonymous(_bound(tree)).visit(tree)
    if not surface:
        tree = _Ordered().visit(tree)
    _definitions_ordered(tree)
    return ast.fix_missing_locations(tree)


_LAYOUT = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
_MARKERS = {tokenize.NEWLINE: ";", tokenize.INDENT: "{", tokenize.DEDENT: "}"}


def _tokens(text: str) -> list[tuple[str, int]]:
    """(token, line) of Python source `text`: layout as `;`, `{`, `}`, comments and blank lines left out."""
    found = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type in _LAYOUT:
            continue
        found.append((_MARKERS.get(token.type, token.string), token.start[0]))
    return found


def _line_map(tree: ast.Module, text: str) -> dict[int, set[int]]:
    """canonical line -> the lines of the code handed in, through the statements of `tree` and of `text` (its
    print), which have one shape."""
    printed = ast.parse(text)
    ours = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    theirs = [n for n in ast.walk(printed) if isinstance(n, ast.stmt)]
    mapping: dict[int, tuple[int, set[int]]] = {}
    if len(ours) != len(theirs):
        return {}
    for mine, printed_statement in zip(ours, theirs):
        span = printed_statement.end_lineno - printed_statement.lineno
        for line in range(printed_statement.lineno, printed_statement.end_lineno + 1):
            if line not in mapping or span < mapping[line][0]:
                mapping[line] = (span, _raw(mine))
    return {line: raw for line, (_, raw) in mapping.items()}


def canonical(code: str, surface: bool = False, pieces: bool = False) -> Canonical:
    """The canonical tokens of `code` with the lines each came from (see the module's docstring and
    `canonical_tree` for `surface`). With `pieces` (a long file, such as a reference file), each top-level
    statement is made canonical on its own, as a student's cell holding it would be, under the file's imports."""
    try:
        if not pieces:
            return _printed(canonical_tree(code, surface))
        tree = ast.parse(code)
        aliases = _aliases(tree)
        parts = [_printed(canonical_tree(ast.Module([statement], []), surface, aliases)) for statement in tree.body
                 if not isinstance(statement, (ast.Import, ast.ImportFrom))]
        return Canonical(tuple(t for part in parts for t in part.tokens),
                         tuple(line for part in parts for line in part.lines), True)
    except (SyntaxError, ValueError, RecursionError, tokenize.TokenError, IndentationError):
        return _as_it_stands(code)


def _printed(tree: ast.Module) -> Canonical:
    text = ast.unparse(tree)
    lines = _line_map(tree, text)
    found = _tokens(text)
    return Canonical(tuple(t for t, _ in found), tuple(frozenset(lines.get(line, ())) for _, line in found), True)


def _as_it_stands(code: str) -> Canonical:
    """Code that does not parse: its tokens, names and strings anonymous (builtins kept)."""
    tokens, lines = [], []
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.type in _LAYOUT:
                continue
            text = _MARKERS.get(token.type, token.string)
            if token.type == tokenize.NAME and text not in BUILTINS and not _keyword(text):
                text = BINDING
            elif token.type == tokenize.STRING:
                text = STRING
            tokens.append(text)
            lines.append(frozenset({token.start[0]}))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return Canonical(tuple(tokens), tuple(lines), False)


def _keyword(text: str) -> bool:
    import keyword
    return keyword.iskeyword(text)
