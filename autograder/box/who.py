"""Who a box's code is on this machine, and whether this machine can make a box at all.

A box's processes are, to the host, one of three:

    own uid       root grades: a user id of its own per box, from OWN_UIDS, a range no account has
    subordinate   an account with subordinate ids (/etc/subuid and /etc/subgid, given by root: `usermod
                  --add-subuids`; the class hub gives its grader some) and shadow's setuid `newuidmap` and `newgidmap`
                  (Debian's uidmap): a user id of its own per box, from that account's range
    self          any other account on Linux where unprivileged user namespaces are on (an instructor's laptop): the
                  account itself, with no capability, seeing only its box (it owns what the grader owns, but reaches
                  none of it)

A box's user id is held by the grading job that took it (an flock on its file in `lock_folder()`), so two boxes at
once, of one grading run or of several, never share one. Nothing on disk is ever owned by one: everything a box may
write is a file system in memory that ends with it (autograder.box.view).
"""
from __future__ import annotations

import fcntl
import functools
import os
import pwd
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

OWN_UIDS = (0x7F000000, 65536)  # first and count: above every account, systemd's and podman's ranges
BOX_INSIDE = 1000  # the box's user and group id inside its user namespace, whatever it is outside
SYSTEM_PATH = "/usr/bin:/bin:/usr/sbin:/sbin:/usr/local/bin"


class BoxUnavailable(RuntimeError):
    """This machine cannot make the box a graded notebook runs in; the message says why and what to do."""


@dataclass(frozen=True)
class Identity:
    """Who this account's boxes are (see the module's docstring): `kind`, and the ids they take theirs from."""
    kind: str  # "own uid", "subordinate" or "self"
    uids: tuple[int, int] | None = None  # (first, count); None for "self"
    gids: tuple[int, int] | None = None

    def describe(self) -> str:
        if self.kind == "self":
            return ("in a box of user, mount, PID and network namespaces, as this account with no capability (no "
                    "user id of its own: give this account subordinate ids for that, the guide's security section)")
        first, count = self.uids
        whose = "root's range" if self.kind == "own uid" else "this account's subordinate ids"
        return f"in a box of its own, as a user id of its own ({whose}, {first} to {first + count - 1})"


@dataclass(frozen=True)
class Slot:
    """A box's ids outside its user namespace (None: the grading account's own), held while `lock` is open."""
    uid: int | None
    gid: int | None
    lock: int  # the descriptor of the flock'ed file (-1: none); closed, the ids are free again


def tool(name: str) -> str | None:
    """A system program's full path (bwrap, newuidmap...), looked for in the system's folders only."""
    return shutil.which(name, path=SYSTEM_PATH)


def _subordinate(path: Path, account: pwd.struct_passwd) -> tuple[int, int] | None:
    """The first range /etc/subuid (or subgid) gives `account` (by name or number), as (first, count)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.strip().split(":")
        if len(fields) == 3 and fields[0] in (account.pw_name, str(account.pw_uid)):
            try:
                first, count = int(fields[1]), int(fields[2])
            except ValueError:
                continue
            if count > 0:
                return first, count
    return None


def _setuid_root(path: str | None) -> bool:
    if path is None:
        return False
    info = os.stat(path)
    return info.st_uid == 0 and bool(info.st_mode & stat.S_ISUID)


def identity() -> Identity:
    """Who this account's boxes are, or BoxUnavailable with why not and what to do."""
    if not sys.platform.startswith("linux"):
        raise BoxUnavailable(f"a box needs Linux's namespaces, and this machine runs {sys.platform}")
    if tool("bwrap") is None:
        raise BoxUnavailable("bubblewrap is not installed (the program bwrap: `apt install bubblewrap`, or your "
                             "system's package of that name)")
    if os.geteuid() == 0:
        return Identity("own uid", OWN_UIDS, OWN_UIDS)
    account = pwd.getpwuid(os.getuid())
    uids, gids = _subordinate(Path("/etc/subuid"), account), _subordinate(Path("/etc/subgid"), account)
    if uids and gids and _setuid_root(tool("newuidmap")) and _setuid_root(tool("newgidmap")):
        return Identity("subordinate", uids, gids)
    return Identity("self")


def lock_folder() -> Path:
    """Where this account's boxes hold their ids: a folder of its own (0700), refused when someone else made it
    (root's in /run, anyone else's in the temporary folder)."""
    folder = Path("/run/tfs-box-ids") if os.geteuid() == 0 else Path(tempfile.gettempdir()) / f"tfs-box-ids-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise BoxUnavailable(f"{folder} is not this account's own private folder (someone else made it, or it is "
                             "open to others): remove it, and grade again")
    return folder


def take_slot(who: Identity) -> Slot:
    """Ids for one box that no other box has now: the first free of the identity's range ("self": the account's)."""
    if who.uids is None:
        return Slot(None, None, -1)
    folder = lock_folder()
    count = min(who.uids[1], who.gids[1])
    for offset in range(count):
        descriptor = os.open(folder / f"{offset}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            continue
        return Slot(who.uids[0] + offset, who.gids[0] + offset, descriptor)
    raise BoxUnavailable(f"all {count} of this account's box ids are in use by other grading jobs")


@functools.cache
def accounts_in(first: int, count: int) -> list[str]:
    """The machine's accounts whose user id is in the range (none, for a range fit for boxes)."""
    return [entry.pw_name for entry in pwd.getpwall() if first <= entry.pw_uid < first + count]
