"""A third class for the similarity screen (issue 52), written for this issue apart from the screen's scoring and
from the disguises of tests/similarity_corpus.py and tests/similarity_corpus_b.py: copies rewritten the way a
person rewrites code by hand, so that the screen is proven on copies it was not built from. Deterministic from a
seed; the seeds bench/README.md reports were drawn after the screen's parameters were fixed.

Honest students: corpus B's 24 of `seed` (the course's solution, students who write every step their own way,
debug printers, the textbook idiom on every short exercise, the tutorial pair) and the seven students of
`tests/wild` (implementations written elsewhere: the Annotated Transformer, nanoGPT, ARENA, d2l, hyunwoongko,
jadore801120, and the loop solutions), who write attention the textbook way and were not written for any corpus.

Copiers, each of a different honest student drawn from the seed, each with this module's own rewrites (every one
made on the syntax tree, so every copy is also re-printed through `ast.unparse`: its comments gone, its quotes,
brackets and spacing the printer's):
- `copy_verbatim`: the control;
- `copy_every_disguise`: locals renamed, neighbouring definitions and methods swapped, dead code added, docstrings
  replaced and comments of its own, all at once;
- `rewrite_light`, `rewrite_medium`, `rewrite_strong`: the whole set rewritten by hand, more each time (`LEVELS`):
  API forms swapped (`@` and `torch.matmul`, `.view` and `.reshape`, softmax's forms, `.mT`, `.size()` and
  `.shape`, `dim=` by keyword or position, `math.sqrt` and `** 0.5`, `torch.cat` and `torch.concat`), loops and
  comprehensions exchanged, `if`/`else` and conditional expressions exchanged, nested expressions split into
  named temporaries or temporaries inlined, operands around a number commuted, and (`FormsRewritten`,
  `independent_swapped`) forms the screen did not take as one when this corpus was written, either way:
  `masked_fill` and `torch.where`, `unsqueeze` and indexing with None, `.float()` and `.to(torch.float32)`,
  `.contiguous().view` and `.reshape`, a default written out or not (the screen's canonical form has taken these
  as one since issue 52's second round), independent assignments swapped (still not taken as one);
- `partial_3` and `partial_5`: 3 and 5 exercises rewritten (medium and strong), the rest their own, from a
  classmate who wrote their own code (a tests/wild student: a corpus B student's answer, the course's solution
  among them, is often one several classmates also wrote, step by step, and copying what honest students write
  alike leaves no evidence anyone could see), in exercises where the original wrote at least `PARTIAL_MIN_TOKENS`
  code tokens (imports aside: a few lines of the textbook idiom are what most of a class writes);
- `two_sources`: notebooks 01 to 04 of one classmate and 05 to 07 of another (each answered at least 5 of
  them), rewritten light and medium;
- `public_rewrite`: its own answers, and corpus B's `public/minimal_gpt.py` rewritten (medium) where the file
  covers the exercise (passed with --reference: attributed to the file, not to a pair).
Every rewrite keeps what the code computes, so a rewritten cell gets its original's check result
(`bench/similarity.py --checks` runs the course's visible checks on both).
"""
from __future__ import annotations

import ast
import copy
import random
import re
import shutil
from pathlib import Path

from autograder.paths import RELEASE
from autograder.similarity.fingerprints import written_tokens
from tests import similarity_corpus as corpus_a
from tests import similarity_corpus_b as corpus_b

# The honest students of tests/wild, less `loops`: its solutions and the course's (corpus B's `course_01`) have
# one author, so the two are not independent students.
WILD = [name for name in corpus_a.HONEST if name != "loops"]
PARTIAL_MIN_TOKENS = 60  # a partial copy takes exercises where its original wrote this many code tokens or more
TWO_SOURCES_SPLIT = ("01_positional_encoding", "02_attention", "03_masking", "04_attention_block")

# How much each level rewrites: the chance that each place a rewrite could apply to is rewritten.
LEVELS = {
    "light": {"api": 0.3, "forms": 0.0, "loops": 0.0, "conditionals": 0.0, "split": 0.0, "inline": 0.0,
              "commute": 0.0, "order": 0.0, "swap": False, "dead": False},
    "medium": {"api": 0.7, "forms": 0.5, "loops": 1.0, "conditionals": 1.0, "split": 0.35, "inline": 0.0,
               "commute": 0.5, "order": 0.5, "swap": False, "dead": False},
    "strong": {"api": 1.0, "forms": 1.0, "loops": 1.0, "conditionals": 1.0, "split": 0.8, "inline": 1.0,
               "commute": 1.0, "order": 1.0, "swap": True, "dead": True},
}

# The words of this corpus's rewriters: new docstrings and comments, names for locals and temporaries.
DOCSTRINGS = ["Rewritten from my notes.", "Computes what the exercise asks for.", "My version of this step.",
              "See the notebook for the shapes.", "Works on any leading batch dimensions."]
COMMENTS = ["# compute this part first", "# keep the shapes straight", "# from the lecture slides",
            "# double-checked against the formula", "# the main step"]
SYNONYMS = {"scores": "logits_qk", "weights": "attn_probs", "mask": "allowed", "out": "result_t", "output": "res",
            "hidden": "inner_act", "table": "enc_table", "position": "pos_col", "rate": "inv_freq",
            "angles": "phase", "rotation": "rot_mat", "theta": "angle_vec", "tokens": "tok_ids", "logits": "raw_out",
            "loss": "objective", "losses": "loss_log", "history": "loss_trace", "batch": "mini_b", "mean": "mu",
            "var": "sigma2", "normed": "standardised", "total": "running_sum", "count": "n_seen",
            "counts": "freq_of", "kept": "survivors", "pieces": "parts_list", "rows": "row_list", "first": "left_half",
            "second": "right_half", "probs": "p_dist", "kth": "cutoff", "nxt": "next_tok", "memory": "enc_out",
            "h": "state", "x": "act", "y": "dec_state", "q": "q_heads", "k": "k_heads", "v": "v_heads", "n": "n_rows",
            "i": "idx", "j": "col_i", "T": "seq_len_", "B": "n_batch", "d_k": "key_dim", "heads": "per_head",
            "merged": "joined", "device": "dev", "opt": "optim_", "optimizer": "optim_", "ids": "id_seq"}
TEMPORARY_NAMES = ["part", "step_val", "inner", "partial", "piece", "stage"]
DEAD_STATEMENTS = ["_ignored = ({a}, {b})", "_spare_count = {a} - {b}", "_flag = {a} > {b}"]
DEAD_TAILS = ["\n\n_SCRATCH = {{'note': {a}}}\n", "\n\nLIMITS_SEEN = [{a}, {b}]\n",
              "\n\ndef _helper_unused(values):\n    return sorted(values)[:{a}]\n"]


def _dead(choices: list[str], rng: random.Random) -> str:
    """Dead code of one copier's own: its form and its numbers drawn (two copiers' padding is not a passage they
    share)."""
    return rng.choice(choices).format(a=rng.randint(2, 999), b=rng.randint(2, 999))


# ---- helpers on syntax trees


def _functions(tree: ast.AST) -> list[ast.FunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {
        a.arg for n in ast.walk(node) if isinstance(n, ast.arguments) for a in n.args + n.kwonlyargs + n.posonlyargs}


def _loads(node: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load))


def _stores(node: ast.AST, name: str) -> int:
    return sum(1 for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name
               and isinstance(n.ctx, (ast.Store, ast.Del)))


def _blocks(node: ast.AST):
    """Every statement list under `node` (bodies, else branches), with the node that holds it."""
    for parent in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                yield parent, field, block


def _parse(code: str) -> ast.Module:
    return ast.parse(code)


def _fresh(base: str, taken: set[str]) -> str:
    name, number = base, 2
    while name in taken:
        name, number = f"{base}{number}", number + 1
    taken.add(name)
    return name


# ---- the rewrites


def renamed(tree: ast.Module, rng: random.Random) -> ast.Module:
    """Every local a function assigns gets the rewriter's own name, in that function and the lambdas and functions
    nested in it (parameters, attributes, keywords and what the module level defines kept)."""
    module_names = {t.id for s in tree.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))
                    for t in ast.walk(s) if isinstance(t, ast.Name)}
    defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    taken = _names(tree) | defined
    for function in _functions(tree):
        own = sorted({n.id for n in _scope(function, set()) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                     - _parameters(function) - module_names - defined - {"self", "_"})
        renames = {name: _fresh(SYNONYMS.get(name, name.lower() + "_v"), taken) for name in own}
        for node in _scope(function, set(), nested=True):
            if isinstance(node, ast.Name) and node.id in renames:
                node.id = renames[node.id]
    return tree


def _parameters(function: ast.AST) -> set[str]:
    arguments = function.args
    return {a.arg for a in arguments.args + arguments.kwonlyargs + arguments.posonlyargs} | {
        a.arg for a in (arguments.vararg, arguments.kwarg) if a}


def _scope(function: ast.AST, shadowed: set[str], nested: bool = False):
    """The nodes of `function`'s body; with `nested`, those of the functions and lambdas in it too, less the names
    their own parameters shadow."""
    body = function.body if isinstance(function.body, list) else [function.body]
    todo = list(body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            if nested:
                yield from (n for n in _scope(node, shadowed | _parameters(node), True)
                            if not (isinstance(n, ast.Name) and n.id in shadowed | _parameters(node)))
            continue
        if isinstance(node, ast.ClassDef):
            continue
        yield node
        todo.extend(ast.iter_child_nodes(node))


def _docstring(node: ast.AST) -> bool:
    return bool(node.body) and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant) \
        and isinstance(node.body[0].value.value, str)


def docstrings_replaced(tree: ast.Module, rng: random.Random) -> ast.Module:
    """Every function's and class's docstring in the rewriter's words (one is added where there was none)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            new = ast.Expr(ast.Constant(rng.choice(DOCSTRINGS)))
            if _docstring(node):
                node.body[0] = new
            elif rng.random() < 0.5:
                node.body.insert(0, new)
    return tree


def _is(node: ast.AST, dotted: str) -> bool:
    """`node` is the name or attribute chain `dotted` (`torch.matmul`)."""
    parts = dotted.split(".")
    while len(parts) > 1:
        if not (isinstance(node, ast.Attribute) and node.attr == parts[-1]):
            return False
        node, parts = node.value, parts[:-1]
    return isinstance(node, ast.Name) and node.id == parts[0]


def _attribute(dotted: str) -> ast.AST:
    parts = dotted.split(".")
    node: ast.AST = ast.Name(parts[0], ast.Load())
    for part in parts[1:]:
        node = ast.Attribute(node, part, ast.Load())
    return node


def _number(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


DIM_FIRST = {"softmax", "log_softmax", "argmax", "sum", "mean", "cumsum"}  # methods whose first parameter is dim


def _is_self(node: ast.AST) -> bool:
    """`node` is `self` or one of its attributes (a submodule: `self.softmax(x)` is no tensor's method)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return isinstance(node, ast.Name) and node.id in ("self", "cls")


def _module(node: ast.AST) -> bool:
    """`node` names a module of functions (`torch`, `F`, `nn.functional`), not a tensor."""
    return any(_is(node, name) for name in ("torch", "F", "nn", "nn.functional", "torch.nn.functional", "math"))


class ApiSwapped(ast.NodeTransformer):
    """API forms exchanged for others that compute the same, each place with chance `p`."""

    def __init__(self, rng: random.Random, p: float):
        self.rng, self.p = rng, p

    def _go(self) -> bool:
        return self.rng.random() < self.p

    def visit_BinOp(self, node):
        self.generic_visit(node)
        if isinstance(node.op, ast.MatMult) and self._go():
            return ast.Call(_attribute("torch.matmul"), [node.left, node.right], [])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if _is(func, "torch.matmul") and len(node.args) == 2 and not node.keywords and self._go():
            return ast.BinOp(node.args[0], ast.MatMult(), node.args[1])
        if _is(func, "math.sqrt") and len(node.args) == 1 and self._go():
            return ast.BinOp(node.args[0], ast.Pow(), ast.Constant(0.5))
        if _is(func, "torch.cat") and self._go():
            node.func = _attribute("torch.concat")
            return node
        if any(_is(func, f"{m}.softmax") for m in ("torch", "F", "nn.functional")) and node.args and self._go():
            return ast.Call(ast.Attribute(node.args[0], "softmax", ast.Load()), node.args[1:], node.keywords)
        if not isinstance(func, ast.Attribute) or _is_self(func.value):
            return node
        owner, method = func.value, func.attr
        if method == "softmax" and not _module(owner) and self._go():
            return ast.Call(_attribute("torch.softmax"), [owner, *node.args], node.keywords)
        if method == "view" and self._go():
            func.attr = "reshape"
        elif method == "transpose" and len(node.args) == 2 and not node.keywords \
                and sorted(ast.unparse(a) for a in node.args) == ["-1", "-2"] and self._go():
            return ast.Attribute(owner, "mT", ast.Load())
        elif method == "size" and len(node.args) == 1 and not node.keywords and self._go():
            return ast.Subscript(ast.Attribute(owner, "shape", ast.Load()), node.args[0], ast.Load())
        elif method in DIM_FIRST and _module(owner):
            pass  # `F.softmax(x, dim=-1)`: x first, its dim second
        elif method in DIM_FIRST and not node.args and len(node.keywords) >= 1 and node.keywords[0].arg == "dim" \
                and self._go():
            node.args, node.keywords = [node.keywords[0].value], node.keywords[1:]
        elif method in DIM_FIRST and len(node.args) == 1 and self._go():
            node.keywords = [ast.keyword("dim", node.args[0]), *node.keywords]
            node.args = []
        return node

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Attribute) and node.value.attr == "shape" and isinstance(node.ctx, ast.Load) \
                and isinstance(node.slice, (ast.Constant, ast.UnaryOp)) and self._go():
            return ast.Call(ast.Attribute(node.value.value, "size", ast.Load()), [node.slice], [])
        return node

    def visit_Attribute(self, node):
        self.generic_visit(node)
        if node.attr == "mT" and isinstance(node.ctx, ast.Load) and self._go():
            return ast.Call(ast.Attribute(node.value, "transpose", ast.Load()),
                            [ast.UnaryOp(ast.USub(), ast.Constant(2)), ast.UnaryOp(ast.USub(), ast.Constant(1))], [])
        return node


def api_swapped(tree: ast.Module, rng: random.Random, p: float) -> ast.Module:
    return ApiSwapped(rng, p).visit(tree)


class FormsRewritten(ast.NodeTransformer):
    """More forms a rewriter knows, either way, each place with chance `p`: `s.masked_fill(m, v)` and
    `torch.where(m, v, s)` (a number `v`), `x.unsqueeze(0)` and `x[None]` (1 and -1 alike), `x.float()` and
    `x.to(torch.float32)`, `x.contiguous().view(...)` and `x.reshape(...)`, `nn.Linear`'s default bias written out
    or left out."""

    INDEXES = {"0": "None", "1": "(slice(None), None)", "-1": "(Ellipsis, None)"}

    def __init__(self, rng: random.Random, p: float):
        self.rng, self.p = rng, p

    def _go(self) -> bool:
        return self.rng.random() < self.p

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if isinstance(node.ctx, ast.Load):
            for axis, index in self.INDEXES.items():
                if ast.dump(node.slice) == ast.dump(_index(index)) and self._go():
                    return ast.Call(ast.Attribute(node.value, "unsqueeze", ast.Load()), [ast.parse(axis).body[0].value],
                                    [])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        func = node.func
        if _is(func, "torch.where") and len(node.args) == 3 and not node.keywords and _scalar(node.args[1]) \
                and self._go():
            return ast.Call(ast.Attribute(node.args[2], "masked_fill", ast.Load()), node.args[:2], [])
        if _is(func, "nn.Linear") and len(node.args) == 2 and self._go():
            given = [k for k in node.keywords if k.arg == "bias"]
            if not given:
                node.keywords = node.keywords + [ast.keyword("bias", ast.Constant(True))]
            elif isinstance(given[0].value, ast.Constant) and given[0].value.value is True:
                node.keywords = [k for k in node.keywords if k.arg != "bias"]
            return node
        if not isinstance(func, ast.Attribute) or not self._go():
            return node
        owner, method = func.value, func.attr
        if method == "masked_fill" and len(node.args) == 2 and not node.keywords and _scalar(node.args[1]):
            return ast.Call(_attribute("torch.where"), [node.args[0], node.args[1], owner], [])
        if method == "unsqueeze" and len(node.args) == 1 and ast.unparse(node.args[0]) in self.INDEXES:
            return ast.Subscript(owner, _index(self.INDEXES[ast.unparse(node.args[0])]), ast.Load())
        if method == "float" and not node.args and not node.keywords:
            return ast.Call(ast.Attribute(owner, "to", ast.Load()), [_attribute("torch.float32")], [])
        if method == "to" and len(node.args) == 1 and not node.keywords and _is(node.args[0], "torch.float32"):
            return ast.Call(ast.Attribute(owner, "float", ast.Load()), [], [])
        if method == "view" and isinstance(owner, ast.Call) and isinstance(owner.func, ast.Attribute) \
                and owner.func.attr == "contiguous" and not owner.args:
            return ast.Call(ast.Attribute(owner.func.value, "reshape", ast.Load()), node.args, node.keywords)
        if method == "reshape":
            contiguous = ast.Call(ast.Attribute(owner, "contiguous", ast.Load()), [], [])
            return ast.Call(ast.Attribute(contiguous, "view", ast.Load()), node.args, node.keywords)
        return node


def _index(text: str) -> ast.expr:
    """The index `text` as the parser makes it (`x[:, None]` holds a tuple of a slice and None)."""
    return ast.parse(f"x[{text.replace('slice(None)', ':').replace('Ellipsis', '...').strip('()')}]").body[0].value.slice


def _scalar(node: ast.AST) -> bool:
    """A number, negative or not, or `float("inf")` and the like."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return (isinstance(node, ast.Constant) and type(node.value) in (int, float)) or (
        isinstance(node, ast.Call) and _is(node.func, "float")) or _is(node, "math.inf")


def independent_swapped(tree: ast.Module, rng: random.Random, p: float) -> ast.Module:
    """Two neighbouring assignments that call nothing and do not read what the other assigns, in the other order."""
    for _, _, block in list(_blocks(tree)):
        for i in range(len(block) - 1):
            first, second = block[i], block[i + 1]
            if not all(isinstance(s, ast.Assign) and not any(isinstance(n, ast.Call) for n in ast.walk(s))
                       for s in (first, second)):
                continue
            written = [{ast.unparse(n) for t in s.targets for n in ast.walk(t)
                        if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript))} for s in (first, second)]
            read = [{ast.unparse(n) for n in ast.walk(s.value)} for s in (first, second)]
            if not (written[0] & (read[1] | written[1]) or written[1] & read[0]) and rng.random() < p:
                block[i], block[i + 1] = second, first
    return tree


def _append_loop(target: str, comprehension: ast.ListComp) -> list[ast.stmt]:
    generator = comprehension.generators[0]
    body: ast.stmt = ast.Expr(ast.Call(ast.Attribute(ast.Name(target, ast.Load()), "append", ast.Load()),
                                       [comprehension.elt], []))
    for condition in reversed(generator.ifs):
        body = ast.If(condition, [body], [])
    return [ast.Assign([ast.Name(target, ast.Store())], ast.List([], ast.Load())),
            ast.For(generator.target, generator.iter, [body], [])]


def _appended(loop: ast.stmt, target: str) -> tuple[ast.expr, list[ast.expr]] | None:
    """(the value, the conditions) of a `for` whose body only appends to `target`, under `if`s."""
    if not isinstance(loop, ast.For) or loop.orelse or len(loop.body) != 1:
        return None
    body, conditions = loop.body[0], []
    while isinstance(body, ast.If) and not body.orelse and len(body.body) == 1:
        conditions.append(body.test)
        body = body.body[0]
    call = body.value if isinstance(body, ast.Expr) else None
    if isinstance(call, ast.Call) and _is(call.func, f"{target}.append") and len(call.args) == 1:
        return call.args[0], conditions
    return None


def loops_exchanged(tree: ast.Module, rng: random.Random, p: float) -> ast.Module:
    """A list comprehension assigned to a name becomes a loop that appends, and such a loop a comprehension."""
    for function in _functions(tree):
        taken = _names(function)
        for _, _, block in list(_blocks(function)):
            i = 0
            while i < len(block):
                statement = block[i]
                value = getattr(statement, "value", None)
                single = isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                    and isinstance(statement.targets[0], ast.Name)
                simple = isinstance(value, ast.ListComp) and len(value.generators) == 1 \
                    and not value.generators[0].is_async and all(
                        _loads(function, n.id) + _stores(function, n.id) == _loads(value, n.id) + _stores(value, n.id)
                        for n in ast.walk(value.generators[0].target) if isinstance(n, ast.Name))
                if single and simple and rng.random() < p:
                    block[i:i + 1] = _append_loop(statement.targets[0].id, value)
                    i += 2
                    continue
                if isinstance(statement, ast.Return) and simple and rng.random() < p:
                    name = _fresh("collected", taken)
                    block[i:i + 1] = _append_loop(name, value) + [ast.Return(ast.Name(name, ast.Load()))]
                    i += 3
                    continue
                following = block[i + 1] if i + 1 < len(block) else None
                if single and isinstance(value, ast.List) and not value.elts and following is not None:
                    found = _appended(following, statement.targets[0].id)
                    own = found and all(_loads(function, n.id) + _stores(function, n.id)
                                        == _loads(following, n.id) + _stores(following, n.id)
                                        for n in ast.walk(following.target) if isinstance(n, ast.Name))
                    if found and own and rng.random() < p:
                        element, conditions = found
                        block[i:i + 2] = [ast.Assign(statement.targets, ast.ListComp(
                            element, [ast.comprehension(following.target, following.iter, conditions, 0)]))]
                i += 1
    return tree


def conditionals_exchanged(tree: ast.Module, rng: random.Random, p: float) -> ast.Module:
    """`if c: x = a` / `else: x = b` becomes `x = a if c else b`, and the other way round."""
    for _, _, block in list(_blocks(tree)):
        for i, statement in enumerate(block):
            if isinstance(statement, ast.If) and len(statement.body) == 1 and len(statement.orelse) == 1:
                yes, no = statement.body[0], statement.orelse[0]
                if all(isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)
                       for s in (yes, no)) and yes.targets[0].id == no.targets[0].id and rng.random() < p:
                    block[i] = ast.Assign(yes.targets, ast.IfExp(statement.test, yes.value, no.value))
            elif isinstance(statement, ast.Assign) and isinstance(statement.value, ast.IfExp) \
                    and len(statement.targets) == 1 and isinstance(statement.targets[0], ast.Name) \
                    and rng.random() < p:
                target, value = statement.targets[0], statement.value
                block[i] = ast.If(value.test, [ast.Assign([ast.Name(target.id, ast.Store())], value.body)],
                                  [ast.Assign([ast.Name(target.id, ast.Store())], value.orelse)])
    return tree


_NO_SPLIT = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.IfExp, ast.BoolOp,
             ast.JoinedStr, ast.Starred, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)


def _first_nested(value: ast.expr) -> ast.expr | None:
    """The first nested call or arithmetic of `value` that Python evaluates (below `value` itself), never inside a
    lambda, comprehension, conditional, `and`/`or` or f-string (moving it out would change when it runs)."""
    def visit(node: ast.AST, top: bool) -> ast.expr | None:
        if isinstance(node, _NO_SPLIT):
            return None
        children = []
        if isinstance(node, ast.Call):
            children = [node.func, *node.args, *(k.value for k in node.keywords)]
        elif isinstance(node, ast.BinOp):
            children = [node.left, node.right]
        elif isinstance(node, (ast.Tuple, ast.List)):
            children = list(node.elts)
        elif isinstance(node, ast.Subscript):
            children = [node.value]
        elif isinstance(node, ast.Attribute):
            children = [node.value]
        elif isinstance(node, ast.UnaryOp):
            children = [node.operand]
        elif isinstance(node, ast.Compare):
            children = [node.left, *node.comparators]
        for child in children:
            found = visit(child, False)
            if found is not None:
                return found
        splittable = isinstance(node, ast.BinOp) or (isinstance(node, ast.Call) and not _is(node.func, "super"))
        return node if splittable and not top and not any(isinstance(n, _NO_SPLIT) for n in ast.walk(node)) else None
    return visit(value, True)


class _Replace(ast.NodeTransformer):
    def __init__(self, old: ast.AST, new: ast.AST):
        self.old, self.new = old, new

    def visit(self, node):
        return self.new if node is self.old else super().visit(node)


def temporaries_split(tree: ast.Module, rng: random.Random, p: float) -> ast.Module:
    """Nested calls and arithmetic moved into named temporaries before their statement, in the order Python
    evaluates them (so nothing runs in another order)."""
    for function in _functions(tree):
        taken = _names(function)
        for _, _, block in list(_blocks(function)):
            i = 0
            while i < len(block):
                statement = block[i]
                if isinstance(statement, (ast.Assign, ast.Return, ast.Expr)) and statement.value is not None \
                        and rng.random() < p:
                    inner = _first_nested(statement.value)
                    if inner is not None:
                        name = _fresh(rng.choice(TEMPORARY_NAMES), taken)
                        statement.value = _Replace(inner, ast.Name(name, ast.Load())).visit(statement.value)
                        block.insert(i, ast.Assign([ast.Name(name, ast.Store())], inner))
                        i += 1
                        continue  # the same statement again: its next nested expression, with chance p
                i += 1
    return tree


def temporaries_inlined(tree: ast.Module, rng: random.Random, p: float) -> ast.Module:
    """A name assigned and used once, in the very next simple statement, replaced by its value there."""
    for function in _functions(tree):
        for _, _, block in list(_blocks(function)):
            i = 0
            while i + 1 < len(block):
                statement, following = block[i], block[i + 1]
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                        and isinstance(statement.targets[0], ast.Name) \
                        and isinstance(following, (ast.Assign, ast.Return, ast.Expr)) and following.value is not None:
                    name = statement.targets[0].id
                    use = [n for n in ast.walk(following.value) if isinstance(n, ast.Name) and n.id == name]
                    inside = any(isinstance(n, _NO_SPLIT) and _loads(n, name) for n in ast.walk(following.value))
                    if len(use) == 1 and _loads(function, name) == 1 and _stores(function, name) == 1 \
                            and not inside and rng.random() < p:
                        following.value = _Replace(use[0], statement.value).visit(following.value)
                        del block[i]
                        continue
                i += 1
    return tree


def commuted(tree: ast.Module, rng: random.Random, p: float) -> ast.Module:
    """`x * 2` as `2 * x` and `n + 1` as `1 + n`: the operands around a number swapped."""
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add)) \
                and (_number(node.left) or _number(node.right)) and rng.random() < p:
            node.left, node.right = node.right, node.left
    return tree


def swapped(tree: ast.Module, rng: random.Random) -> ast.Module:
    """Neighbouring top-level definitions swapped, and each class's first two methods."""
    definitions = [i for i, s in enumerate(tree.body) if isinstance(s, (ast.FunctionDef, ast.ClassDef))]
    for a, b in zip(definitions[::2], definitions[1::2]):
        if b == a + 1:
            tree.body[a], tree.body[b] = tree.body[b], tree.body[a]
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            methods = [i for i, s in enumerate(node.body) if isinstance(s, ast.FunctionDef)]
            if len(methods) >= 2:
                a, b = methods[:2]
                node.body[a], node.body[b] = node.body[b], node.body[a]
    return tree


def dead_code_added(tree: ast.Module, rng: random.Random) -> ast.Module:
    """An unused statement at the top of every function (after its docstring)."""
    statement = _dead(DEAD_STATEMENTS, rng)
    for function in _functions(tree):
        at = 1 if _docstring(function) else 0
        function.body.insert(at, ast.parse(statement).body[0])
    return tree


def commented(code: str, rng: random.Random, chance: float = 0.2) -> str:
    """The re-printed code with the rewriter's comments above some of its statements."""
    out = []
    for line in code.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith(("def ", "class ", "@", "'", '"', "else", "elif", "except")) \
                and rng.random() < chance:
            out.append(line[:len(line) - len(stripped)] + rng.choice(COMMENTS))
        out.append(line)
    return "\n".join(out)


def rewritten(code: str, level: str, rng: random.Random) -> str:
    """`code` rewritten by hand at `level` (`LEVELS`): re-printed, locals renamed, docstrings replaced, and more
    of the rewrites the more the level asks."""
    settings = LEVELS[level]
    tree = copy.deepcopy(_parse(code))
    tree = temporaries_inlined(tree, rng, settings["inline"])
    tree = conditionals_exchanged(tree, rng, settings["conditionals"])
    tree = loops_exchanged(tree, rng, settings["loops"])
    tree = api_swapped(tree, rng, settings["api"])
    tree = FormsRewritten(rng, settings["forms"]).visit(tree)
    tree = independent_swapped(tree, rng, settings["order"])
    tree = temporaries_split(tree, rng, settings["split"])
    tree = commuted(tree, rng, settings["commute"])
    tree = renamed(tree, rng)
    tree = docstrings_replaced(tree, rng)
    if settings["swap"]:
        tree = swapped(tree, rng)
    if settings["dead"]:
        tree = dead_code_added(tree, rng)
    printed = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
    return commented(printed, rng) + (_dead(DEAD_TAILS, rng) if settings["dead"] else "")


def every_disguise(code: str, rng: random.Random) -> str:
    """The mechanical disguises all at once: locals renamed, neighbouring definitions and methods swapped, dead code
    added, docstrings replaced, re-printed through the syntax tree, comments of its own."""
    tree = dead_code_added(swapped(docstrings_replaced(renamed(copy.deepcopy(_parse(code)), rng), rng), rng), rng)
    return commented(ast.unparse(ast.fix_missing_locations(tree)) + "\n", rng) + _dead(DEAD_TAILS, rng)


# ---- the class


def honest_class(seed: int) -> dict[str, dict[str, str]]:
    """student -> grade_id -> code: corpus B's honest students of `seed` and those of tests/wild (`WILD`)."""
    students = corpus_b.honest_class(seed)
    wild = corpus_a.honest_cells()
    students.update({name: wild[name] for name in WILD})
    return students


def _long_enough(code: str, stub: str) -> bool:
    """The answer holds at least `PARTIAL_MIN_TOKENS` code tokens of the student's beyond the stub and imports."""
    tree = ast.parse(code)
    tree.body = [s for s in tree.body if not isinstance(s, (ast.Import, ast.ImportFrom))]
    return written_tokens(ast.unparse(tree), stub) >= PARTIAL_MIN_TOKENS


# copier -> (what it copies, the rewrite level or "verbatim"/"every", the exercises copied: None for all)
COPIERS = ["copy_verbatim", "copy_every_disguise", "rewrite_light", "rewrite_medium", "rewrite_strong", "partial_3",
           "partial_5", "two_sources"]
PUBLIC_COPIER = "public_rewrite"


def build_class(root: Path, seed: int) -> dict[str, dict[str, list[str]]]:
    """The class of `seed` handed in under `root` (which gets the release notebooks); returns copier -> each
    classmate it copied -> the exercises copied (the public rewriter copied a file, not a classmate: absent)."""
    if not (root / "release").exists():
        shutil.copytree(RELEASE, root / "release")
    honest = honest_class(seed)
    for student, cells in honest.items():
        corpus_b.write_hand_in(root, student, cells)
    rng = random.Random(seed * 7919 + 52)
    all_stubs = corpus_b.stubs()
    candidates = sorted(s for s in honest if s.startswith(("mixed_", "printer_", "course_")) or s in WILD)
    own_code = sorted(s for s in candidates if s in WILD)
    partial = rng.sample(own_code, 2)
    others = rng.sample([s for s in candidates if s not in partial], len(COPIERS) - 2)
    plan = dict(zip([c for c in COPIERS if not c.startswith(("partial_", "two_"))], others))
    plan.update(zip(["partial_3", "partial_5"], partial))
    first_half = {g for g, (assignment, _) in all_stubs.items() if assignment in TWO_SOURCES_SPLIT}
    covers = [s for s in candidates if s not in plan.values() and len(first_half & set(honest[s])) >= 5
              and len(set(honest[s]) - first_half) >= 5]  # two classmates who each answered their half
    plan["two_sources"], second = rng.sample(covers, 2)
    plan = {copier: plan[copier] for copier in COPIERS}

    def own_cells() -> dict[str, str]:
        habits = corpus_b.habits_of(rng)
        return {g: corpus_b.with_habits(corpus_b.fill(stub, corpus_b.written(g, rng, {"comments": True})), habits)
                for g, (_, stub) in all_stubs.items()}

    copied: dict[str, dict[str, list[str]]] = {}
    for copier, original in plan.items():
        source = honest[original]
        cells = own_cells()
        copied[copier] = {original: sorted(source)}
        if copier == "copy_verbatim":
            cells.update(source)
        elif copier == "copy_every_disguise":
            cells.update({g: every_disguise(code, rng) for g, code in source.items()})
        elif copier.startswith("rewrite_"):
            cells.update({g: rewritten(code, copier.split("_")[1], rng) for g, code in source.items()})
        elif copier.startswith("partial_"):
            count = int(copier.split("_")[1])
            level = "medium" if count == 3 else "strong"
            eligible = sorted(g for g, code in source.items() if _long_enough(code, all_stubs[g][1]))
            copied[copier][original] = sorted(rng.sample(eligible, count))
            for grade_id in copied[copier][original]:
                cells[grade_id] = rewritten(source[grade_id], level, rng)
        elif copier == "two_sources":
            copied[copier] = {original: [], second: []}
            for grade_id, (assignment, _) in all_stubs.items():
                first = assignment in TWO_SOURCES_SPLIT
                donor = original if first else second
                if grade_id in honest[donor]:
                    cells[grade_id] = rewritten(honest[donor][grade_id], "light" if first else "medium", rng)
                    copied[copier][donor].append(grade_id)
        corpus_b.write_hand_in(root, copier, cells)
    cells = own_cells()
    for grade_id, code in corpus_b.MINIMAL_GPT.items():
        cells[grade_id] = rewritten(corpus_b.fill(all_stubs[grade_id][1], code.strip("\n").split(corpus_b.SLOT)),
                                    "medium", rng)
    corpus_b.write_hand_in(root, PUBLIC_COPIER, cells)
    return copied


def copy_pairs(copied: dict[str, dict[str, list[str]]]) -> set[tuple[str, str]]:
    """The pairs of students of which one copied the other (sorted names)."""
    return {tuple(sorted((copier, original))) for copier, originals in copied.items() for original in originals}


def write_references(folder: Path) -> Path:
    """The public files an instructor passes with --reference: corpus B's."""
    return corpus_b.write_references(folder)


def is_copied_from(student: str, reference: str) -> bool:
    return student == PUBLIC_COPIER and reference == "public/minimal_gpt.py"
