"""Stand-ins for earlier pieces of the same notebook, so that a check (or hidden test) of one exercise never
depends on another exercise the student may have got wrong: a mistake costs points once, where it was made."""
from __future__ import annotations

import inspect
from contextlib import contextmanager


def notebook_globals(obj) -> dict:
    """The namespace the code of `obj` reads its global names from: a function's globals, or for a class those
    of the methods it defines itself (in a notebook: the notebook's namespace)."""
    if inspect.isfunction(obj):
        return obj.__globals__
    for klass in getattr(obj, "__mro__", ()):
        if klass.__module__ != getattr(obj, "__module__", None):
            continue
        for member in vars(klass).values():
            if inspect.isfunction(member):
                return member.__globals__
    return {}


@contextmanager
def earlier_pieces_replaced(obj, **stand_ins):
    """While inside, each name in `stand_ins` that the code of `obj` reads from its notebook's globals is the given
    stand-in: a check of one exercise then never depends on an earlier exercise of the same notebook, so a mistake
    there costs points once. Names the notebook does not define are left alone."""
    namespace = notebook_globals(obj)
    own = {name: namespace[name] for name in stand_ins if name in namespace}
    namespace.update({name: stand_ins[name] for name in own})
    try:
        yield
    finally:
        namespace.update(own)
