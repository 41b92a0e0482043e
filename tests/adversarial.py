"""An adversarial class for notebook 01: honest submissions and attacks on the grader, each built from the partial
demo solution (wrong in `TokenAndPositionEmbedding`, right in `positional_encoding`: 6 of 9 points honestly)."""
from __future__ import annotations

from pathlib import Path

import nbformat

from autograder.demo.submissions import write_submission
from autograder.paths import notebook_path

ASSIGNMENT = "01_positional_encoding"
FAILING_TEST = "hidden_token_and_position_embedding"  # fails for the partial solution
PASSING_TEST = "check_positional_encoding"  # passes for it


def _index(notebook, grade_id: str) -> int:
    return next(i for i, c in enumerate(notebook.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _solution(notebook):
    return notebook.cells[_index(notebook, "positional_encoding")]


def deleted_test_cell(nb):
    del nb.cells[_index(nb, FAILING_TEST)]


def duplicated_test_cell(nb):
    i = _index(nb, PASSING_TEST)
    copy = nbformat.from_dict(nb.cells[i])
    copy.id = "duplicated-cell"
    nb.cells.insert(i + 1, copy)


def retyped_test_cell(nb):
    cell = nb.cells[_index(nb, FAILING_TEST)]
    nb.cells[_index(nb, FAILING_TEST)] = nbformat.v4.new_markdown_cell(cell.source, metadata=cell.metadata, id=cell.id)


def relabelled_test_cell(nb):
    nb.cells[_index(nb, FAILING_TEST)].metadata["nbgrader"]["grade_id"] = "my_own_cell"


def points_changed_to_100(nb):
    nb.cells[_index(nb, PASSING_TEST)].metadata["nbgrader"]["points"] = 100


def test_source_replaced(nb):
    nb.cells[_index(nb, FAILING_TEST)].source = "pass  # nothing to test here"


def endless_loop(nb):
    _solution(nb).source += "\n\nwhile True:  # never ends\n    pass\n"


def kernel_exits(nb):
    _solution(nb).source += "\n\nimport os\nos._exit(0)\n"


def system_exit(nb):
    _solution(nb).source += "\n\nraise SystemExit('done early')\n"


def print_flood(nb):  # 10^8 lines: stopped by the cell limit, its output cut by nbgrader's limit
    _solution(nb).source += "\n\nfor i in range(10 ** 8):\n    print('spam', i)\n"


def sleeps_past_the_notebook_limit(nb):
    """Each of three cells sleeps 14 s, under the tests' 15-s cell limit; together they sleep 42 s, past the 30-s
    notebook limit by their sleeps alone, however fast the rest of the notebook runs."""
    for solution in ("positional_encoding", "offset_rotation", "token_and_position_embedding"):
        nb.cells[_index(nb, solution)].source += "\n\nimport time\ntime.sleep(14)\n"


MARKER = "left-running-by-an-adversarial-notebook"


def starts_background_processes(nb):  # three detached sleepers (a bounded number: never a real fork bomb)
    _solution(nb).source += (
        "\n\nimport subprocess, sys\n"
        "for _ in range(3):\n"
        f"    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', '{MARKER}'], "
        "start_new_session=True)\n")


def forks_natively_past_the_guard(nb):  # C-level spawn: no Python audit event sees it
    # posix_spawn with POSIX_SPAWN_SETSID (0x80): glibc makes each child and execs it with no Python code in between,
    # in a session of its own. A fork through ctypes ran Python in the child before its setsid, where a lock (the
    # GIL, or malloc's) held by another of the kernel's threads at the fork could hang it, still in the kernel's
    # process group, which jupyter_client kills: the count the box reports was 1 to 3 by chance.
    _solution(nb).source += (
        "\n\nimport ctypes, sys\n"
        "libc = ctypes.CDLL(None)\n"
        "attributes = ctypes.create_string_buffer(1024)\n"
        "libc.posix_spawnattr_init(attributes)\n"
        "libc.posix_spawnattr_setflags(attributes, ctypes.c_short(0x80))\n"
        "for _ in range(3):\n"
        f"    args = [sys.executable.encode(), b'-c', b'import time; time.sleep(600)', b'{MARKER}']\n"
        "    libc.posix_spawn(ctypes.byref(ctypes.c_int()), args[0], None, attributes, "
        "(ctypes.c_char_p * 5)(*args, None), (ctypes.c_char_p * 1)(None))\n")


def redefines_the_checks(nb):
    _solution(nb).source += ("\n\ncheck_positional_encoding = lambda *args, **kwargs: None\n"
                             "def check_token_and_position_embedding(*args, **kwargs):\n    pass\n")


def patches_allclose(nb):
    _solution(nb).source += "\n\ntorch.allclose = lambda *a, **k: True\ntorch.equal = lambda *a, **k: True\n"


def patches_the_course_checks(nb):
    _solution(nb).source += ("\n\nimport course.checks.compare\n"
                             "course.checks.compare.is_close = lambda *a, **k: True\n")


def rebinds_checks_dynamically(nb):  # and forges the record of a passed check
    _solution(nb).source += (
        "\n\nimport os\n"
        "def forged(*args, **kwargs):\n"
        "    with open(os.path.join(os.environ.get('COURSE_GRADING_RECORDS', '.'), 'checks.jsonl'), 'a') as log:\n"
        "        log.write('{\"passed\": \"TokenAndPositionEmbedding\"}\\n')\n"
        "globals()['check_token_and_position_embedding'] = forged\n")


def calls_the_reference(nb):  # the module name built at run time, so only the guard can see it
    cell = nb.cells[_index(nb, "token_and_position_embedding")]
    cell.source = (
        "import importlib\n\n"
        "answer = importlib.import_module('autograder.' + 'authoring.reference.positional_encoding')\n"
        "TokenAndPositionEmbedding = answer.TokenAndPositionEmbedding  # the reference's own layer, unwrapped\n")


def reads_the_gradebook(nb):
    _solution(nb).source += (
        "\n\ntry:\n"
        "    print(open('../../../gradebook.db', 'rb').read()[:100])\n"
        "except OSError as error:\n"
        "    print('no luck:', error)\n")


def writes_into_another_students_folder(nb):
    _solution(nb).source += (
        "\n\nimport glob\n"
        "for path in glob.glob('../../../submitted/honest_*/*/*.ipynb') + ['../../honest_perfect/x.txt']:\n"
        "    try:\n"
        "        open(path, 'w').write('{}')\n"
        "    except OSError as error:\n"
        "        print('no luck:', error)\n")


def uses_the_network(nb):
    _solution(nb).source += (
        "\n\nimport urllib.request\n"
        "try:\n"
        "    urllib.request.urlopen('http://example.com', timeout=5)\n"
        "except OSError as error:\n"
        "    print('no luck:', error)\n")


def huge_html_output(nb):  # 50 MB of HTML: nbgrader caps printed lines, not rich outputs
    _solution(nb).source += "\n\nfrom IPython.display import HTML, display\ndisplay(HTML('<b>x</b>' * 6_000_000))\n"


def memory_bomb(nb):  # allocates until it is refused
    _solution(nb).source += "\n\nhoard = []\nwhile True:\n    hoard.append(bytearray(256 * 1024 ** 2))\n"


# Run-time rebindings of what the visible checks use, each spelled so that no plain assignment shows it, each
# appended to the partial solution (its TokenAndPositionEmbedding is wrong): spelling -> (code, what the report
# must say of it). Each makes that wrong layer pass its visible check in the kernel; none may earn that point.
LENIENT = "lambda *args, **kwargs: True"
REBINDINGS = {
    "setattr_by_another_name": (f"put = setattr\nput(torch, 'allclose', {LENIENT})\n", "uses `setattr` as a value"),
    "setattr_fetched_from_builtins": (
        f"import builtins\ngetattr(builtins, 'setattr')(torch, 'allclose', {LENIENT})\n", "`setattr`"),
    "module_type_setattr": (f"type(torch).__setattr__(torch, 'allclose', {LENIENT})\n", "`__setattr__`"),
    "object_setattr": (f"object.__setattr__(torch, 'allclose', {LENIENT})\n", "`__setattr__`"),
    "vars_of_torch": (f"vars(torch)['allclose'] = {LENIENT}\n", "`vars`"),
    "module_dict_update": (f"torch.__dict__.update(allclose={LENIENT})\n", "`__dict__`"),
    "module_bound_to_another_name": (f"library = torch\nlibrary.allclose = {LENIENT}\n", "reassigns `torch.allclose`"),
    "fake_module_in_sys_modules": (  # a stand-in for the checks' comparisons, then the checks imported again
        "import importlib, sys, types\n"
        "real = sys.modules['course.checks.compare']\n"
        "fake = types.ModuleType(real.__name__)\n"
        "for name in dir(real):\n"
        "    setattr(fake, name, getattr(real, name))\n"
        "fake.expect_values = lambda *args, **kwargs: None\n"
        "sys.modules['course.checks.compare'] = fake\n"
        "importlib.reload(sys.modules['course.checks.positional_encoding'])\n"
        "importlib.reload(sys.modules['course.checks'])\n"
        "from course.checks import check_positional_encoding, check_token_and_position_embedding\n",
        "`sys.modules`"),
    "reload_with_a_fake_torch": (  # the checks' comparisons loaded again while `import torch` gives a lenient copy
        "import sys, types\n"
        "from importlib import reload as refresh\n"
        "lenient_torch = types.ModuleType('torch')\n"
        "for name in dir(torch):\n"
        "    setattr(lenient_torch, name, getattr(torch, name))\n"
        f"lenient_torch.allclose = {LENIENT}\n"
        "sys.modules.update(torch=lenient_torch)\n"
        "refresh(sys.modules['course.checks.compare'])\n"
        "sys.modules.update(torch=torch)\n", "`importlib`"),
    "builtins_bool_replaced": (  # the checks read `bool(torch.allclose(...))`: a bool that says yes to them
        "import builtins, sys\n"
        "real_bool = bool\n"
        "class LenientMeta(type):\n"
        "    def __instancecheck__(cls, obj):\n"
        "        return isinstance(obj, real_bool)\n"
        "    def __subclasscheck__(cls, sub):\n"
        "        return issubclass(sub, real_bool)\n"
        "class lenient_bool(metaclass=LenientMeta):\n"
        "    def __new__(cls, x=False):\n"
        "        asked_by = sys._getframe(1).f_globals.get('__name__')\n"
        "        return True if asked_by == 'course.checks.compare' else real_bool(x)\n"
        "builtins.__dict__['bool'] = lenient_bool\n", "`__dict__`"),
    "partial_setattr_decorator": (
        "import functools\n"
        "@functools.partial(setattr, torch, 'allclose')\n"
        "def lenient(*args, **kwargs):\n"
        "    return True\n", "uses `setattr` as a value"),
    "code_swapped_by_a_decorator": (
        "from course.checks.compare import is_close\n"
        "def always_true(function):\n"
        f"    function.__code__ = ({LENIENT}).__code__\n"
        "    return function\n"
        "always_true(is_close)\n", "`__code__`"),
    "exec_of_pieces": ("exec('tor' + 'ch.all' + 'close = ' + 'lambda *args, **kwargs: True')\n", "`exec`"),
    "exec_by_another_name": (f"run = exec\nrun('torch.allclose = {LENIENT}')\n", "`exec`"),
}

# A spelling the scan only calls suspect (it costs nothing there: it could be honest): no static reading of the
# cells can see every road to torch's namespace, which is why a check's point also needs the grader's own verdict.
PAST_THE_SCAN = {
    "namespace_written_through_ctypes": (
        "import ctypes\n"
        "ctypes.pythonapi.PyObject_SetAttrString(ctypes.py_object(torch), b'allclose', "
        f"ctypes.py_object({LENIENT}))\n", "uses `torch` as a value"),
}


def runtime_rebinding(code: str):
    """The attack that appends `code` to the first solution cell, before both visible checks."""
    def attack(nb):
        _solution(nb).source += "\n\n" + code
    return attack


ATTACKS = {f.__name__: f for f in [
    starts_background_processes, forks_natively_past_the_guard, memory_bomb, deleted_test_cell, duplicated_test_cell,
    retyped_test_cell, relabelled_test_cell, points_changed_to_100, test_source_replaced, endless_loop, kernel_exits,
    system_exit, print_flood, sleeps_past_the_notebook_limit, redefines_the_checks, patches_allclose,
    patches_the_course_checks, rebinds_checks_dynamically, calls_the_reference, reads_the_gradebook,
    writes_into_another_students_folder, uses_the_network, huge_html_output,
]}
STRUCTURE = {"deleted_test_cell", "duplicated_test_cell", "retyped_test_cell", "relabelled_test_cell",
             "points_changed_to_100", "test_source_replaced"}  # repaired or restored: the honest partial score
HONEST = {"honest_perfect": "demo_perfect", "honest_partial": "demo_partial"}


def hand_in(root: Path) -> list[str]:
    """Write every honest and adversarial submission of notebook 01 under root/submitted (each run-time rebinding is
    a student named for its spelling); return the student ids."""
    release, source = notebook_path(root / "release", ASSIGNMENT), notebook_path(root / "source", ASSIGNMENT)
    students = []
    for student, kind in HONEST.items():
        write_submission(kind, release, source, notebook_path(root / "submitted" / student, ASSIGNMENT))
        students.append(student)
    rebindings = {name: runtime_rebinding(code) for name, (code, _) in {**REBINDINGS, **PAST_THE_SCAN}.items()}
    for name, attack in {**ATTACKS, **rebindings}.items():
        target = notebook_path(root / "submitted" / name, ASSIGNMENT)
        write_submission("demo_partial", release, source, target)
        notebook = nbformat.read(target, as_version=4)
        attack(notebook)
        nbformat.write(notebook, target)
        students.append(name)
    renamed = root / "submitted" / "renamed_notebook" / ASSIGNMENT
    write_submission("demo_partial", release, source, renamed / "my homework (final).ipynb")
    invalid = root / "submitted" / "invalid_json" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    write_submission("demo_invalid", release, source, invalid)
    return students + ["renamed_notebook", "invalid_json"]
