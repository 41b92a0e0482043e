"""What is in the exchange's inbound/: a hand-in or not, and whose. nbgrader's exchange lets every account write
there, so a folder's name says whose hand-in it claims to be, and only its owner and contents say whether it is.
The class hub's collect (autograder.hub.owned_collect) and grading at submission (autograder.on_submit) both ask."""
from __future__ import annotations

import os
import pwd
import stat
from datetime import datetime, timezone

from nbgrader.utils import parse_utc

HANDIN_NAME = "<student>+<assignment>+<time>+<random>"  # how `nbgrader submit` names a hand-in folder in inbound/
# How far the time in a hand-in's name may be from the exchange's own before the instructor is told: submit writes the
# name before it copies the notebooks, so an honest name is a little earlier than the hand-in's arrival.
NAMED_TIME_SLACK = 120.0  # seconds


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


def exchange_time(path: str, first_seen: float | None = None) -> float:
    """When the hand-in `path` arrived, as the exchange knows it (epoch seconds): the earlier of when the hub first
    saw it (`first_seen`, the grading service's record) and its folder's last change of status (ctime), which the
    kernel keeps and no process can set back. Never the time in its name or its timestamp.txt, which the student's
    own process writes."""
    changed = os.lstat(path).st_ctime
    return min(changed, first_seen) if first_seen else changed


def as_nbgrader_time(seconds: float) -> str:
    """An epoch time written as nbgrader writes a hand-in's timestamp.txt (UTC)."""
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def named_time_disagrees(folder_name: str, arrived: float) -> str | None:
    """What is wrong with the time in a hand-in's folder name against the exchange's `arrived` (epoch seconds), in
    words for the instructor; None when it is within NAMED_TIME_SLACK before it, as an honest submit's is."""
    try:
        named = parse_utc(os.path.basename(folder_name).rsplit("+", 3)[2]).replace(tzinfo=timezone.utc).timestamp()
    except (IndexError, ValueError, OverflowError):
        return "its name has no time in it"
    if named > arrived + NAMED_TIME_SLACK:
        return f"its name says {as_nbgrader_time(named)}, later than it arrived ({as_nbgrader_time(arrived)})"
    if named < arrived - NAMED_TIME_SLACK:
        return f"its name says {as_nbgrader_time(named)}, earlier than it arrived ({as_nbgrader_time(arrived)})"
    return None
