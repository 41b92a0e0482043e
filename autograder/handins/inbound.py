"""What is in the exchange's inbound/: a hand-in or not, whose, and of when. nbgrader's exchange lets every account
write there, so a folder's name says whose hand-in it claims to be, and of when, and only its owner and contents say
whether it is, and the kernel's change times when it came. The class hub's collect (autograder.hub.owned_collect) and
grading at submission (autograder.on_submit) both ask; collect also clears away what is no hand-in."""
from __future__ import annotations

import os
import pwd
import shutil
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
            return f"{shown} belongs to {owner_of(path)}"
    return None


def exchange_time(path: str) -> float:
    """When the hand-in `path` took the form it has now, as the exchange knows it (epoch seconds): the latest change
    of status (ctime) of its folder and of everything in it, which the kernel keeps and no process can set back.
    Never the time in its name or its timestamp.txt, which the student's own process writes; nor the folder's ctime
    alone, which writing into a file it holds leaves as it was (a hand-in made before the due date, its notebook
    rewritten after it, is a hand-in of when it was rewritten). An honest hand-in's time is when its copy ended."""
    latest = os.lstat(path).st_ctime
    for parent, folders, files in os.walk(path):
        for name in folders + files:
            try:
                latest = max(latest, os.lstat(os.path.join(parent, name)).st_ctime)
            except FileNotFoundError:  # gone since it was listed: the folder's own change says when
                pass
    return max(latest, os.lstat(path).st_ctime)


def changed_after_seen(arrived: float, first_seen: float | None) -> str | None:
    """What is wrong with a hand-in whose exchange time is `arrived` and which the hub first saw at `first_seen` (the
    grading service's record), in words for the instructor; None when it did not change after the hub saw it."""
    if first_seen is None or arrived <= first_seen + NAMED_TIME_SLACK:
        return None
    return (f"it changed at {as_nbgrader_time(arrived)}, after the hub first saw it ({as_nbgrader_time(first_seen)}): "
            "its time is that of its last change")


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


SET_ASIDE = ".set-aside-"  # how collect renames, in inbound/ itself, what is no hand-in and cannot be removed


def owner_of(path: str) -> str:
    """The name of the account that owns the entry `path` (not following a link)."""
    uid = os.lstat(path).st_uid
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"account number {uid}"


def clear_away(path: str) -> str | None:
    """Take the entry `path` of inbound/, which is no hand-in, out of the way: removed where the collecting account
    may remove it (the owner of a sticky inbound/ may unlink any entry, and empty any folder it may write); a folder
    it cannot empty (another account's, which that account alone may change) renamed within inbound/ to a SET_ASIDE
    name: the sticky bit lets inbound/'s owner rename any entry, and Linux moves a folder to another parent only for
    an account that may write in that folder. The new path when set aside, None when removed; an OSError when it
    could do neither. A folder it cannot empty whose name already is a SET_ASIDE one is left as it is (its path):
    whatever its name, every entry it may remove is removed, so a student cannot keep junk in inbound/ by that name."""
    if os.path.islink(path) or not os.path.isdir(path):
        os.unlink(path)
        return None
    try:
        shutil.rmtree(path)  # never follows a link inside
        return None
    except OSError:
        pass
    name = os.path.basename(path)
    if name.startswith(SET_ASIDE):
        return path
    stem = os.path.join(os.path.dirname(path), SET_ASIDE + name.replace("+", "-")[:200])
    aside, count = stem, 1
    while os.path.lexists(aside):
        count += 1
        aside = f"{stem}-{count}"
    os.rename(path, aside)
    return aside
