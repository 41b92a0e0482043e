"""The class's Unix accounts. A person's hub user, Unix account and nbgrader student id are one name.

The hub makes every account its class uses, and lets nobody use any other: root, a system account, the grader (the
account that holds the solutions and the gradebook), someone's own account on the machine, or any account that was
there before the class. `ClassAccounts` is the hub's record of the accounts it made, `state/accounts.json` in the
hub's folder (root's alone; it outlives restarts, so a restarted hub reuses its accounts): each account's user id,
made in the class's range (settings `first_uid` to `last_uid`), its role, and for a person who came from the LMS the
LMS's id for them, so a second LMS person with the same username never gets the first one's account. A person's
account is made at their first LTI launch or first server start; the grader's before the hub starts."""
from __future__ import annotations

import contextlib
import fcntl
import grp
import json
import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

from autograder.hub.settings import HubSettings

# What `useradd` takes on every Linux: a lower-case letter or underscore, then up to 31 more of [a-z0-9_-].
ACCOUNT_NAME = r"[a-z_][a-z0-9_-]{0,31}"
LOGIN_DEFS = Path("/etc/login.defs")
NAME_RULE = "a name is a lower-case letter or _, then up to 31 lower-case letters, digits, _ or -"
PERSON, GRADER = "person", "grader"  # the roles of the record: someone who logs in, the account that grades
GRADES = "is the account that grades the class and holds its solutions and gradebook"
ANOTHER_PERSON = "is already the account of another person in the LMS (another LMS user id)"


def check_name(name: str) -> str:
    """`name` when it can be a Unix account, else a ValueError that says what a name may be."""
    if not re.fullmatch(ACCOUNT_NAME, name):
        raise ValueError(f"{name!r} cannot be an account on this machine: {NAME_RULE}. Check the LMS's username "
                         "field (lti.username_key).")
    return name


def first_person_uid() -> int:
    """The machine's first user id for people (login.defs' UID_MIN, 1000 where it says none): every account below it
    is the system's."""
    found = re.search(r"^\s*UID_MIN\s+(\d+)", LOGIN_DEFS.read_text() if LOGIN_DEFS.exists() else "", re.M)
    return int(found[1]) if found else 1000


class AccountRefused(ValueError):
    """A name that cannot be a class account: `reason` says why, after the name ("'root' is one of ...")."""

    def __init__(self, name: str, reason: str):
        super().__init__(f"{name!r} {reason}")
        self.name, self.reason = name, reason


class ClassAccounts:
    """The Unix accounts the hub made for its class, and the only ones it lets anyone use (see the module)."""

    def __init__(self, settings: HubSettings):
        self.settings = settings
        self.path = settings.state / "accounts.json"

    def names(self) -> dict[str, dict]:
        """The record: each account's name -> its uid, role and LMS identity (None where it came from no LMS)."""
        return json.loads(self.path.read_text())["accounts"] if self.path.exists() else {}

    def refusal(self, name: str, role: str = PERSON, lms: dict | None = None) -> AccountRefused | None:
        """Why `name` cannot be the class's account for `role` (and, given `lms`, for that LMS person), or None."""
        with self._record() as record:
            return self._refusal(record, name, role, lms)

    def account(self, name: str, home: Path, role: str = PERSON, lms: dict | None = None,
                mode: int = 0o700) -> pwd.struct_passwd:
        """The class's account `name` with its home `home` (made, owned by it and private, when missing): the one the
        hub made before, or one made now with the next free user id of the class's range. `lms` ({"issuer", "sub"})
        ties the account to the LMS person who first used it. AccountRefused where the name cannot be the class's."""
        with self._record() as record:
            refused = self._refusal(record, name, role, lms)
            if refused:
                raise refused
            entry = record.get(name)
            try:
                account = pwd.getpwnam(name)
            except KeyError:
                account = self._make(record, name, home, entry["uid"] if entry else None)
            record[name] = {"uid": account.pw_uid, "role": role, "lms": (entry or {}).get("lms") or lms}
            if account.pw_dir != str(home):  # the class's own account, its home moved with the hub's folder
                subprocess.run(["usermod", "--home", str(home), name], check=True, capture_output=True, text=True)
                account = pwd.getpwnam(name)
        home.mkdir(parents=True, exist_ok=True)
        shutil.chown(home, account.pw_uid, account.pw_gid)
        home.chmod(mode)
        return account

    def _refusal(self, record: dict, name: str, role: str, lms: dict | None) -> AccountRefused | None:
        try:
            check_name(name)
        except ValueError:
            return AccountRefused(name, f"cannot be an account on this machine: {NAME_RULE}")
        entry = record.get(name)
        try:
            account = pwd.getpwnam(name)
        except KeyError:
            account = None
        if entry is None:
            if name == "root" or (account and account.pw_uid < first_person_uid()):
                return AccountRefused(name, "is one of this machine's own accounts (a system account)")
            if role == PERSON and name == self.settings.grader:
                return AccountRefused(name, GRADES)
            if account:
                return AccountRefused(name, "is an account this machine had before the class, which the hub did "
                                            "not make")
            with contextlib.suppress(KeyError):
                grp.getgrnam(name)
                return AccountRefused(name, "is the name of a group this machine had before the class")
            return None
        if entry["role"] != role:
            return AccountRefused(name, GRADES if entry["role"] == GRADER else "is the account of a person in the "
                                                                               "class, not the grader's")
        if account is not None and account.pw_uid != entry["uid"]:
            return AccountRefused(name, f"was made by the hub with user id {entry['uid']}, but an account of that "
                                        f"name with user id {account.pw_uid} has since taken its place")
        if account is None and _uid_taken(entry["uid"]):
            return _number_taken(name, entry["uid"])
        if lms and entry.get("lms") and entry["lms"] != lms:
            return AccountRefused(name, ANOTHER_PERSON)
        return None

    def _make(self, record: dict, name: str, home: Path, uid: int | None) -> pwd.struct_passwd:
        """A new account `name` (and its group, of the same number): with the user id `uid` (one the record holds
        for it), or the first free one of the class's range. Another hub on the machine may take a free number at the
        same moment; useradd then refuses it (exit 4) and the next is tried."""
        recorded = {entry["uid"] for entry in record.values()}
        candidates = [uid] if uid is not None else \
            [n for n in range(self.settings.first_uid, self.settings.last_uid + 1) if n not in recorded]
        for candidate in candidates:
            if _uid_taken(candidate):
                continue
            made = subprocess.run(["useradd", "--uid", str(candidate), "--user-group", "--no-create-home",
                                   "--home-dir", str(home), "--shell", "/bin/bash", name], capture_output=True,
                                  text=True)
            if made.returncode == 0:
                return pwd.getpwnam(name)
            if made.returncode != 4:  # 4: the number was taken meanwhile
                raise RuntimeError(f"useradd {name} (user id {candidate}) failed: {made.stderr.strip()}")
        if uid is not None:
            raise _number_taken(name, uid)
        raise AccountRefused(name, f"cannot be made: the class's user ids ({self.settings.first_uid} to "
                                   f"{self.settings.last_uid}, settings first_uid and last_uid) are all in use")

    @contextlib.contextmanager
    def _record(self):
        """The record, read under a lock (the hub and `hub start` may both write it) and written back when it
        changed, whole or not at all."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with open(self.path.with_suffix(".lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            record = self.names()
            before = json.dumps(record, sort_keys=True)
            try:
                yield record
            finally:  # an account made is recorded, even when a later step failed
                if json.dumps(record, sort_keys=True) != before:
                    temporary = self.path.with_suffix(".tmp")
                    temporary.write_text(json.dumps({"accounts": record}, indent=2, sort_keys=True) + "\n")
                    temporary.chmod(0o600)
                    os.replace(temporary, self.path)



def _number_taken(name: str, uid: int) -> AccountRefused:
    return AccountRefused(name, f"was made by the hub with user id {uid}, which another account now has")


def _uid_taken(uid: int) -> bool:
    """Whether an account or a group of the machine has the number `uid` (a new account's group gets its number)."""
    for lookup in (pwd.getpwuid, grp.getgrgid):
        try:
            lookup(uid)
            return True
        except KeyError:
            pass
    return False


def prepare_class_accounts(settings: HubSettings) -> None:
    """Before the hub starts: the class's range of user ids is for people, and every account the settings name (the
    grader; with the shared password, the students and instructors) is the class's or free, else a SystemExit that
    names it and says what to do. The grader's account is made (or taken again) now, everyone else's at their first
    server start."""
    if settings.first_uid < first_person_uid() or settings.last_uid < settings.first_uid:
        raise SystemExit(f"settings first_uid {settings.first_uid} and last_uid {settings.last_uid} must be a range of "
                         f"user ids from {first_person_uid()} up (the machine's first user id for people, "
                         f"{LOGIN_DEFS}'s UID_MIN).")
    accounts = ClassAccounts(settings)
    named = [("grader", GRADER, settings.grader)]
    if settings.login == "shared-password":
        named += [("students", PERSON, name) for name in settings.students] + \
                 [("instructors", PERSON, name) for name in settings.instructors]
    for key, role, name in named:
        refused = accounts.refusal(name, role)
        if refused:
            raise SystemExit(
                f"The hub did not start: {refused}, and the hub lets people use only the accounts it made for the "
                f"class (its record: {accounts.path}). Give the class another name in place of {name!r} (the "
                f"settings' {key}), or, if that account is no one's (left by a test or an earlier hub), remove it "
                f"first: sudo userdel {name}")
    accounts.account(settings.grader, settings.course_dir.parent, role=GRADER)
    give_subordinate_ids(settings.grader)


SUBORDINATE_COUNT = 65536  # ids for the grader's boxes (autograder.box.who): one per notebook graded at once
SUBORDINATE_FIRST = 0x60000000  # where the hub looks for a free range, above the ranges useradd hands out


def give_subordinate_ids(name: str) -> tuple[int, int]:
    """The account's subordinate user and group ids (/etc/subuid, /etc/subgid), from which the grader's boxes take
    a user id of their own each: those it has (Debian's useradd gives each new account some), else a free range
    given now with `usermod --add-subuids --add-subgids`. Returns (first, count)."""
    account = pwd.getpwnam(name)
    taken = {}
    for path in (Path("/etc/subuid"), Path("/etc/subgid")):
        lines = [line.split(":") for line in (path.read_text().splitlines() if path.exists() else [])]
        taken[path.name] = [(int(first), int(count)) for owner, first, count in (l for l in lines if len(l) == 3)
                            if first.isdigit() and count.isdigit()]
        own = [(int(first), int(count)) for owner, first, count in (l for l in lines if len(l) == 3)
               if owner in (name, str(account.pw_uid)) and first.isdigit() and count.isdigit()]
        taken[path.name + ":own"] = own
    if taken["subuid:own"] and taken["subgid:own"]:
        return taken["subuid:own"][0]
    ranges = taken["subuid"] + taken["subgid"]
    first = SUBORDINATE_FIRST
    while any(start < first + SUBORDINATE_COUNT and first < start + count for start, count in ranges):
        first += SUBORDINATE_COUNT
    span = f"{first}-{first + SUBORDINATE_COUNT - 1}"
    subprocess.run(["usermod", "--add-subuids", span, "--add-subgids", span, name], check=True, capture_output=True,
                   text=True)
    return first, SUBORDINATE_COUNT


def as_account(name: str, argv: list[str]) -> list[str]:
    """`argv` run as the account `name`, with its own group and no other (run as root)."""
    return ["setpriv", f"--reuid={name}", f"--regid={name}", "--clear-groups", "--", *argv]


def own_tree(folder: Path, name: str) -> None:
    """Every file under `folder` owned by the account `name`."""
    account = pwd.getpwnam(name)
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            shutil.chown(path, account.pw_uid, account.pw_gid)
