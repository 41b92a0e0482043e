import sys
from importlib.util import find_spec

_missing = [name for name in ("torch", "nbgrader") if find_spec(name) is None]
if _missing:  # the system Python, say, instead of the course's environment: say so instead of a traceback
    raise SystemExit(
        f"{' and '.join(_missing)} {'is' if len(_missing) == 1 else 'are'} not installed in this Python "
        f"({sys.executable}): the course's commands run in its environment, .venv. Run `make setup` once in the "
        "course folder, then `.venv/bin/python -m autograder ...`, or first `. .venv/bin/activate`.")

from autograder.cli import main  # noqa: E402 (after the check above)

raise SystemExit(main())
