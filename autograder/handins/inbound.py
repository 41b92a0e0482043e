"""What is in the exchange's inbound/: a hand-in or not, and whose. nbgrader's exchange lets every account write
there, so a folder's name says whose hand-in it claims to be, and only its owner and contents say whether it is.
The class hub's collect (autograder.hub.owned_collect) and grading at submission (autograder.on_submit) both ask."""
from __future__ import annotations

import os
import pwd
import stat

from nbgrader.utils import parse_utc

HANDIN_NAME = "<student>+<assignment>+<time>+<random>"  # how `nbgrader submit` names a hand-in folder in inbound/


def not_a_handin(path: str) -> str | None:
    """Why the entry `path` of inbound/ is no hand-in of any assignment; None when it is a folder named as one."""
    if os.path.islink(path):
        return f"a link (to {os.readlink(path)})"
    if not os.path.isdir(path):
        return "a file, not a folder"
    parts = os.path.basename(path).rsplit("+", 3)
    if len(parts) < 3 or not all(parts[:3]):
        return f"a folder not named {HANDIN_NAME}"
    try:
        parse_utc(parts[2])
    except (ValueError, OverflowError):
        return f"a folder whose name has no time in it ({parts[2]!r})"
    return None


def foreign_reason(folder: str, student: str) -> str | None:
    """Why the hand-in `folder`, named for `student`, is not theirs; None when it is all theirs."""
    try:
        uid = pwd.getpwnam(student).pw_uid
    except KeyError:
        return f"no account is named {student}"
    paths = [folder]
    for parent, folders, files in os.walk(folder):
        paths += [os.path.join(parent, name) for name in folders + files]
    for path in paths:
        info = os.lstat(path)
        shown = "the folder" if path == folder else os.path.relpath(path, folder) + " in it"
        if stat.S_ISLNK(info.st_mode):
            return f"{shown} is a link (to {os.readlink(path)})"
        if info.st_uid != uid:
            try:
                owner = pwd.getpwuid(info.st_uid).pw_name
            except KeyError:
                owner = f"account number {info.st_uid}"
            return f"{shown} belongs to {owner}"
    return None
